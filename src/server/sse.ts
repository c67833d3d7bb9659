// Server-sent events: `data: JSON` per chunk (with `event: NAME` first for the Responses
// and Anthropic streams), and for OpenAI's streams `data: [DONE]` at the end. Headers go
// out with the first chunk, so an error found before it is still a plain HTTP error.
import type { ServerResponse } from 'node:http';
import { ApiError, errorBody } from './http.js';

export class SseWriter {
  opened = false;

  constructor(
    private readonly res: ServerResponse,
    /** The chunks a stream starts with, if any. */
    private readonly first?: () => unknown[],
    /** The error event's body (default: OpenAI's error object). */
    private readonly errorShape: (e: ApiError) => unknown = errorBody,
  ) {}

  private open(): void {
    if (this.opened) return;
    this.opened = true;
    this.res.writeHead(200, {
      'Content-Type': 'text/event-stream; charset=utf-8',
      'Cache-Control': 'no-cache',
      Connection: 'keep-alive',
      'X-Accel-Buffering': 'no',
    });
    this.res.flushHeaders();
    for (const c of this.first?.() ?? []) this.send(c);
  }

  /** One chunk: `data: JSON`, after `event: NAME` when named. */
  send(obj: unknown, event?: string): void {
    this.open();
    if (!this.res.writable) return;
    this.res.write(`${event ? `event: ${event}\n` : ''}data: ${JSON.stringify(obj)}\n\n`);
  }

  /** Ends the stream (with OpenAI's `data: [DONE]` unless `plain`). */
  done(plain = false): void {
    this.open();
    if (!this.res.writable) return;
    this.res.end(plain ? undefined : 'data: [DONE]\n\n');
  }

  /** Ends the stream with an error chunk (`event` names it for named streams). */
  fail(e: unknown, event?: string): void {
    if (!this.res.writable) return;
    const err = e instanceof ApiError ? e : new ApiError(500, (e as Error)?.message ?? String(e));
    this.res.end(`${event ? `event: ${event}\n` : ''}data: ${JSON.stringify(this.errorShape(err))}\n\n`);
  }
}
