// Server counters, exposed on GET /metrics in Prometheus' text format with llama-server's
// metric names (`llamacpp:*`) plus the HTTP-level ones this server adds (`llamats:*`).
import type { TaskTimings } from './slots.js';

export class Metrics {
  promptTokens = 0;
  promptMs = 0;
  predictedTokens = 0;
  predictedMs = 0;
  nDecode = 0;
  nBatchTokens = 0;
  requests = 0;
  rejected = 0;
  cancelled = 0;
  errors = 0;
  readonly started = Date.now();

  onDecode(nPrompt: number, nGen: number, _ms: number): void {
    this.nDecode++;
    this.nBatchTokens += nPrompt + nGen;
  }

  onTaskDone(t: TaskTimings): void {
    this.promptTokens += t.prompt_n;
    this.promptMs += t.prompt_ms;
    this.predictedTokens += t.predicted_n;
    this.predictedMs += t.predicted_ms;
  }

  onCancel(): void {
    this.cancelled++;
  }

  /** Prometheus exposition text; `processing` and `deferred` are read at scrape time. */
  render(processing: number, deferred: number, slots: number): string {
    const rows: [string, 'counter' | 'gauge', string, number][] = [
      ['llamacpp:prompt_tokens_total', 'counter', 'Number of prompt tokens processed.', this.promptTokens],
      ['llamacpp:prompt_seconds_total', 'counter', 'Prompt process time.', this.promptMs / 1000],
      ['llamacpp:tokens_predicted_total', 'counter', 'Number of generation tokens processed.', this.predictedTokens],
      ['llamacpp:tokens_predicted_seconds_total', 'counter', 'Predict process time.', this.predictedMs / 1000],
      ['llamacpp:n_decode_total', 'counter', 'Total number of llama_decode() calls.', this.nDecode],
      ['llamacpp:n_tokens_max', 'counter', 'Tokens evaluated in all decode calls.', this.nBatchTokens],
      [
        'llamacpp:prompt_tokens_seconds',
        'gauge',
        'Average prompt throughput in tokens/s.',
        this.promptMs > 0 ? (this.promptTokens * 1000) / this.promptMs : 0,
      ],
      [
        'llamacpp:predicted_tokens_seconds',
        'gauge',
        'Average generation throughput in tokens/s (per slot).',
        this.predictedMs > 0 ? (this.predictedTokens * 1000) / this.predictedMs : 0,
      ],
      ['llamacpp:requests_processing', 'gauge', 'Number of requests processing.', processing],
      ['llamacpp:requests_deferred', 'gauge', 'Number of requests deferred.', deferred],
      ['llamats:slots', 'gauge', 'Number of slots.', slots],
      ['llamats:http_requests_total', 'counter', 'HTTP requests received.', this.requests],
      ['llamats:requests_rejected_total', 'counter', 'Requests rejected because the queue was full.', this.rejected],
      ['llamats:requests_cancelled_total', 'counter', 'Requests whose client went away.', this.cancelled],
      ['llamats:http_errors_total', 'counter', 'Requests answered with an error status.', this.errors],
      ['llamats:uptime_seconds', 'gauge', 'Seconds since the server started.', (Date.now() - this.started) / 1000],
    ];
    return rows
      .map(([name, type, help, v]) => `# HELP ${name} ${help}\n# TYPE ${name} ${type}\n${name} ${v}\n`)
      .join('');
  }
}
