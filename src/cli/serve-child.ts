// The process `serve` in router mode starts for each model (src/server/router/instance.ts
// forks it with an IPC channel): `serve` with the argv it is given, reporting to the router.
import { serveCommand } from './serve.js';

serveCommand(process.argv.slice(2)).then(
  (code) => process.exit(code),
  (err) => {
    process.stderr.write(`llama-ts serve: ${err instanceof Error ? err.message : String(err)}\n`);
    process.exit(1);
  },
);
