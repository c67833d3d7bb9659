// Where a WebGPU adapter comes from: the runtime's own `navigator.gpu` (browsers, Deno),
// else, in Node, the optional `webgpu` package (Dawn's prebuilt dawn.node), imported on
// demand so that an install without it runs on the CPU. The one place that knows.

/** GPUBufferUsage / GPUMapMode flags (the globals exist only where WebGPU is native). */
export const Usage = {
  MAP_READ: 1,
  MAP_WRITE: 2,
  COPY_SRC: 4,
  COPY_DST: 8,
  UNIFORM: 64,
  STORAGE: 128,
} as const;
export const MAP_READ = 1;
export const SHADER_STAGE_COMPUTE = 4;

/** The GPU entry point: navigator.gpu where the runtime has one, else Dawn through `webgpu`. */
async function gpuEntry(): Promise<GPU | null> {
  const nav = (globalThis as { navigator?: { gpu?: GPU } }).navigator;
  if (nav?.gpu) return nav.gpu;
  // a variable specifier: bundlers and tsc leave the optional package alone
  const pkg = 'webgpu';
  let mod: { create(options: string[]): GPU };
  try {
    mod = (await import(pkg)) as typeof mod;
  } catch {
    return null;
  }
  // kept for the life of the process: Dawn aborts once a collected instance's devices are used
  dawn ??= mod.create([]);
  return dawn;
}

let dawn: GPU | undefined;

/** The first adapter (high-performance preferred), or null where there is none. */
export async function acquireAdapter(): Promise<GPUAdapter | null> {
  const gpu = await gpuEntry();
  if (!gpu) return null;
  return gpu.requestAdapter({ powerPreference: 'high-performance' });
}

/** The WGSL language extensions the runtime's compiler has (`subgroup_id`, …); empty without WebGPU. */
export async function wgslLanguageFeatures(): Promise<ReadonlySet<string>> {
  const gpu = await gpuEntry();
  return (gpu as { wgslLanguageFeatures?: ReadonlySet<string> } | null)?.wgslLanguageFeatures ?? new Set();
}
