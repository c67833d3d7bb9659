// One model of the router in a process of its own (`serve -m FILE` on 127.0.0.1, a port
// of its choosing), as llama-server's router runs a child llama-server per model: a
// crash, an abort or running out of memory ends that process only. The child tells its
// address and readiness over the IPC channel (serve.ts's routerChild); it exits when the
// channel closes (the router died) and drains on a `shutdown` message.
import { type ChildProcess, fork } from 'node:child_process';
import { Agent } from 'node:http';
import { constants } from 'node:os';
import { logger } from '../../log.js';
import type { RouterModel } from './sources.js';

const log = logger('router');

export type ModelStatus = 'unloaded' | 'loading' | 'loaded';

/** Child → router messages. */
export type ChildMessage = { type: 'listening'; url: string } | { type: 'ready'; url: string };

/** Lines of a child's stderr kept for the error of a failed load or crash. */
const TAIL_LINES = 20;

export interface SpawnSpec {
  /** The module the child runs (it takes serve's argv). */
  entry: string;
  /** serve options every model gets (the router's command line, less the router's own). */
  baseArgs: string[];
  /** Where a child's stderr lines go (prefixed with the model's name). */
  onLog?: (line: string) => void;
  /**
   * The API key every child requires (in its environment, not its argv): only the router
   * reaches a model's port, not any local process.
   */
  childKey?: string;
}

export class ModelInstance {
  status: ModelStatus = 'unloaded';
  /** The last load or run ended badly (llama-server's `failed` with its exit code). */
  failed = false;
  exitCode: number | undefined;
  /** Why it failed: the child's last error line, or how it ended. */
  error: string | undefined;
  /** When a request last used it (the least recently used is unloaded first). */
  lastUsed = 0;
  /** Requests waiting for it or proxied to it: never unloaded for room while > 0. */
  inFlight = 0;
  /** Processes started for it so far (a load, or a restart after a crash or an unload). */
  starts = 0;
  /** Its address once listening. */
  url: string | undefined;
  agent: Agent | undefined;
  private child: ChildProcess | undefined;
  private loading: Promise<void> | undefined;
  private stopping: Promise<void> | undefined;
  private tail: string[] = [];
  /** Settles when the current child exits. */
  private exited: Promise<void> = Promise.resolve();

  constructor(
    readonly model: RouterModel,
    private readonly spec: SpawnSpec,
    /** Called when it stops being active or a request ends (room may have come free). */
    private readonly onChange: () => void,
  ) {}

  get name(): string {
    return this.model.name;
  }

  /** serve's argv for this model: the preset's options, the router's, then what the router sets. */
  get args(): string[] {
    const given = [...this.model.presetArgs, ...this.spec.baseArgs];
    // its projector (the folder's mmproj*, the cache's, or the preset's), as llama-server's
    // router passes it, unless the options name one or none themselves
    const projector =
      this.model.mmproj && !given.some((a) => /^(--mmproj|-mm|--no-mmproj|--no-mmproj-auto)(=|$)/.test(a))
        ? ['--mmproj', this.model.mmproj]
        : [];
    return [
      ...given,
      ...projector,
      '--model',
      this.model.path,
      '--alias',
      this.model.name,
      '--host',
      '127.0.0.1',
      '--port',
      '0',
      '--no-webui',
      // the router logs each request; a model's process logs what goes wrong
      ...(this.spec.baseArgs.some((a) => /^(--log-level|--verbose|-v)(=|$)/.test(a)) ? [] : ['--log-level', 'warn']),
    ];
  }

  /** Loading or loaded (counts against --models-max). */
  get active(): boolean {
    return this.status !== 'unloaded';
  }

  get isStopping(): boolean {
    return this.stopping !== undefined;
  }

  /** The load in progress, if any. */
  get pendingLoad(): Promise<void> | undefined {
    return this.loading;
  }

  /** Its process runs (starting, loading or serving). */
  get running(): boolean {
    return this.child !== undefined;
  }

  /**
   * Starts the child and resolves once it serves; rejects with the child's error when it
   * exits first. `before` runs first (taking the router's load turn and making room; it
   * returns the turn's release, called once the load ends), with the status already
   * `loading` so concurrent requests wait on this one load.
   */
  load(before: () => Promise<() => void>): Promise<void> {
    if (this.status === 'loaded' && !this.stopping) return Promise.resolve();
    this.loading ??= (async () => {
      this.lastUsed = Date.now();
      let release = () => {};
      try {
        // being unloaded: that ends first (its exit marks it unloaded)
        if (this.stopping) await this.stopping;
        this.status = 'loading';
        release = await before();
        await this.spawn();
      } catch (e) {
        this.status = 'unloaded';
        throw e;
      } finally {
        release();
      }
    })().finally(() => {
      this.loading = undefined;
    });
    return this.loading;
  }

  private spawn(): Promise<void> {
    this.tail = [];
    this.failed = false;
    this.error = undefined;
    this.exitCode = undefined;
    this.starts++;
    const child = fork(this.spec.entry, this.args, {
      stdio: ['ignore', 'ignore', 'pipe', 'ipc'],
      env: {
        ...process.env,
        LLAMA_TS_ROUTER_CHILD: '1',
        ...(this.spec.childKey !== undefined ? { LLAMA_API_KEY: this.spec.childKey } : {}),
      },
      execArgv: [],
      serialization: 'json',
    });
    this.child = child;
    let buf = '';
    child.stderr!.setEncoding('utf8');
    child.stderr!.on('data', (d: string) => {
      buf += d;
      let nl = buf.indexOf('\n');
      while (nl >= 0) {
        const line = buf.slice(0, nl);
        buf = buf.slice(nl + 1);
        this.tail.push(line);
        if (this.tail.length > TAIL_LINES) this.tail.shift();
        this.spec.onLog?.(`[${this.name}] ${line}`);
        nl = buf.indexOf('\n');
      }
    });
    let onExit!: () => void;
    this.exited = new Promise<void>((res) => {
      onExit = res;
    });
    return new Promise<void>((resolve, reject) => {
      child.on('message', (m: ChildMessage) => {
        if (m?.type === 'listening') this.url = m.url;
        else if (m?.type === 'ready' && this.child === child) {
          this.url = m.url;
          this.agent = new Agent({ keepAlive: true });
          this.status = 'loaded';
          log.info(`model ${this.name} loaded (pid ${child.pid}, ${m.url})`);
          resolve();
        }
      });
      child.on('error', (e) => {
        this.tail.push(e.message);
      });
      child.on('exit', (code, signal) => {
        const wasLoaded = this.status === 'loaded';
        const requested = this.stopping !== undefined;
        this.exitCode = code ?? 128 + signalNumber(signal);
        this.status = 'unloaded';
        this.url = undefined;
        this.agent?.destroy();
        this.agent = undefined;
        this.child = undefined;
        if (requested && !wasLoaded) {
          this.error = undefined;
          log.info(`model ${this.name} unloaded before it finished loading`);
        } else if (!requested) {
          this.failed = this.exitCode !== 0 || !wasLoaded;
          const how = signal ? `was killed by ${signal}` : `exited with code ${code}`;
          const last = lastError(this.tail, !wasLoaded);
          this.error = wasLoaded
            ? `the process of model '${this.name}' ${how}${last ? `: ${last}` : ''}`
            : `model '${this.name}' failed to load${last ? `: ${last}` : ` (its process ${how})`}`;
          if (wasLoaded) log.warn(`${this.error}; it restarts on the next request`);
          else log.warn(this.error);
        } else log.info(`model ${this.name} unloaded`);
        onExit();
        this.onChange();
        reject(new Error(this.error ?? `model '${this.name}' was unloaded while it loaded`));
      });
    });
  }

  /**
   * Unloads: the child drains (its requests in flight may finish within its own
   * --shutdown-timeout) and exits; after `timeoutS` seconds (the preset's stop-timeout,
   * default 10) it is killed.
   */
  stop(timeoutS = this.model.stopTimeout): Promise<void> {
    const child = this.child;
    if (!child) {
      return this.loading
        ? this.loading.then(
            () => this.stop(timeoutS),
            () => {},
          )
        : Promise.resolve();
    }
    this.stopping ??= (async () => {
      // still loading: its handler may not be there yet, and nothing is in flight to drain
      if (child.connected && this.status === 'loaded') child.send({ type: 'shutdown' });
      else child.kill('SIGTERM');
      const timer = setTimeout(() => child.kill('SIGKILL'), timeoutS * 1000);
      await this.exited;
      clearTimeout(timer);
    })().finally(() => {
      this.stopping = undefined;
    });
    return this.stopping;
  }

  /** Once its process has exited, or after `ms` (it may still be running). */
  settled(ms: number): Promise<void> {
    if (!this.child) return Promise.resolve();
    return Promise.race([this.exited, new Promise<void>((res) => setTimeout(res, ms).unref())]);
  }

  /** Ends the child at once (the router's close()). */
  kill(): Promise<void> {
    this.child?.kill('SIGKILL');
    return this.exited;
  }

  /** The child's process id while it runs. */
  get pid(): number | undefined {
    return this.child?.pid;
  }
}

/** A child's last error line from its stderr tail (else, `orLast`, its last line). */
function lastError(lines: readonly string[], orLast: boolean): string | undefined {
  const clean = lines.map((l) => l.trim()).filter((l) => l !== '');
  const err = [...clean].reverse().find((l) => /\berror\b|failed|cannot/i.test(l));
  return (err ?? (orLast ? clean.at(-1) : undefined))?.replace(/^llama-ts( serve)?:\s*/, '');
}

function signalNumber(signal: NodeJS.Signals | null): number {
  return signal ? (constants.signals[signal] ?? 0) : 0;
}
