// nginx in front of llama-ts replicas, for the replica test and bench:replicas. The
// configuration is docs/replicas.md's (its ```nginx block), with the replicas' ports and
// a few test-only lines (paths in a temporary folder, an access log of where each request
// went, an X-Upstream response header). nginx itself is Debian's package (.ci/run installs
// it); without it the callers skip.
import { type ChildProcess, spawn } from 'node:child_process';
import { accessSync, chmodSync, constants, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createConnection, createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { delimiter, join } from 'node:path';
import { REPO_ROOT } from './shared.js';

/** The nginx binary: $LLAMA_TS_NGINX, else `nginx` on PATH or in the usual sbin folders; undefined when absent. */
export function findNginx(): string | undefined {
  const env = process.env.LLAMA_TS_NGINX;
  const dirs = [...(process.env.PATH ?? '').split(delimiter), '/usr/sbin', '/usr/local/sbin', '/usr/local/nginx/sbin'];
  for (const p of env ? [env] : dirs.filter((d) => d !== '').map((d) => join(d, 'nginx'))) {
    try {
      accessSync(p, constants.X_OK);
      return p;
    } catch {}
  }
  return undefined;
}

export const NO_NGINX =
  'nginx is not installed (Debian: apt-get install -y nginx; .ci/run installs it; or set LLAMA_TS_NGINX=/path/to/nginx)';

/** docs/replicas.md's nginx configuration. */
export function recipe(): string {
  const doc = readFileSync(`${REPO_ROOT}docs/replicas.md`, 'utf8');
  const m = /```nginx\n([\s\S]*?)```/.exec(doc);
  if (!m) throw new Error('docs/replicas.md has no ```nginx block');
  return m[1]!;
}

/** A free TCP port on loopback (free when asked; nginx binds it right after). */
export function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const s = createServer();
    s.once('error', reject);
    s.listen(0, '127.0.0.1', () => {
      const port = (s.address() as { port: number }).port;
      s.close(() => resolve(port));
    });
  });
}

/** One access-log line: where a request went and what came back. */
export interface Routed {
  status: number;
  /** Replicas tried, in order ("127.0.0.1:8081"), and their statuses. */
  upstreams: string[];
  upstreamStatuses: string[];
  affinity: string;
  uri: string;
}

export interface NginxProxy {
  readonly url: string;
  /** The access log so far. */
  routed(): Routed[];
  /** What nginx wrote to its error log (stderr) so far: why it took a replica out. */
  errors(): string;
  stop(): Promise<void>;
}

/**
 * Starts nginx with the recipe in front of `replicas` (loopback ports). `failTimeout`
 * replaces the recipe's fail_timeout (tests use a short one).
 */
export async function startNginx(
  nginx: string,
  replicas: number[],
  opts: { failTimeout?: string } = {},
): Promise<NginxProxy> {
  const dir = mkdtempSync(join(tmpdir(), 'llama-ts-nginx-'));
  chmodSync(dir, 0o755);
  for (const d of ['body', 'proxy', 'fastcgi', 'uwsgi', 'scgi']) mkdirSync(join(dir, 'tmp', d), { recursive: true });
  const port = await freePort();
  let conf = recipe();
  const server = /^(\s*)server 127\.0\.0\.1:\d+ ([^;]*);\n/m.exec(conf);
  if (!server) throw new Error("the recipe's upstream has no 'server 127.0.0.1:PORT …;' line");
  const params = opts.failTimeout
    ? server[2]!.replace(/fail_timeout=\S+/, `fail_timeout=${opts.failTimeout}`)
    : server[2];
  conf = conf.replace(/^\s*server 127\.0\.0\.1:\d+ [^;]*;\n/gm, '');
  conf = conf.replace(
    /(upstream llama \{\n(?:\s*#.*\n|\s*hash .*\n)*)/,
    `$1${replicas.map((p) => `${server[1]}server 127.0.0.1:${p} ${params};\n`).join('')}`,
  );
  conf = conf.replace(/listen 8080;/, `listen 127.0.0.1:${port};`);
  conf = conf.replace(/location \/ \{\n/, 'location / {\n        add_header X-Upstream $upstream_addr always;\n');
  const log = join(dir, 'access.log');
  const full = `worker_processes 1;
daemon off;
pid ${dir}/nginx.pid;
error_log stderr warn;
events { worker_connections 1024; }
http {
    log_format llama '$status|$upstream_addr|$upstream_status|$llama_affinity|$request_uri';
    access_log ${log} llama;
    client_body_temp_path ${dir}/tmp/body;
    proxy_temp_path ${dir}/tmp/proxy;
    fastcgi_temp_path ${dir}/tmp/fastcgi;
    uwsgi_temp_path ${dir}/tmp/uwsgi;
    scgi_temp_path ${dir}/tmp/scgi;
${conf}
}
`;
  writeFileSync(join(dir, 'nginx.conf'), full);
  const p: ChildProcess = spawn(nginx, ['-p', dir, '-c', join(dir, 'nginx.conf'), '-e', 'stderr'], {
    stdio: ['ignore', 'ignore', 'pipe'],
  });
  let err = '';
  p.stderr!.on('data', (d) => {
    err += d;
  });
  const exited = new Promise<number | null>((res) => p.once('exit', (c) => res(c)));
  // up when the port accepts connections
  for (let i = 0; ; i++) {
    const up = await new Promise<boolean>((res) => {
      const c = createConnection(port, '127.0.0.1');
      c.once('connect', () => {
        c.destroy();
        res(true);
      });
      c.once('error', () => res(false));
    });
    if (up) break;
    if (p.exitCode !== null || i > 200) {
      p.kill('SIGKILL');
      throw new Error(`nginx did not start: ${err}\n${full}`);
    }
    await new Promise((res) => setTimeout(res, 50));
  }
  return {
    url: `http://127.0.0.1:${port}`,
    routed: () => {
      let text = '';
      try {
        text = readFileSync(log, 'utf8');
      } catch {}
      return text
        .split('\n')
        .filter((l) => l !== '')
        .map((l) => {
          const [status, addr, ups, affinity, uri] = l.split('|');
          return {
            status: Number(status),
            upstreams: addr!.split(', ').filter((s) => s !== '' && s !== '-'),
            upstreamStatuses: ups!.split(', ').filter((s) => s !== '' && s !== '-'),
            affinity: affinity!,
            uri: uri!,
          };
        });
    },
    errors: () => err,
    stop: async () => {
      if (p.exitCode === null) {
        p.kill('SIGQUIT');
        const t = setTimeout(() => p.kill('SIGKILL'), 5000);
        await exited;
        clearTimeout(t);
      }
      rmSync(dir, { recursive: true, force: true });
    },
  };
}
