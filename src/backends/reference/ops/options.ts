// What a reference kernel is told besides its node: the arithmetic to use.

/** How kernels compute (see ReferenceDeviceOptions.numerics). */
export interface KernelOptions {
  /** Round matmul activations and attention as ggml-cpu does (vec-dot.ts); default exact. */
  ggmlCpu?: boolean;
}
