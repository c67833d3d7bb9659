// Server counters, exposed on GET /metrics in Prometheus' text format with llama-server's
// metric names (`llamacpp:*`) plus the HTTP-level ones this server adds (`llamats:*`).
// Request timings are added as requests end; decode counts and slot use are read from the
// engine's parallel status at scrape time. Per-slot gauges carry a `slot` label.
import type { SlotStatus } from '../generation/index.js';

/** A finished request's timings (the completion result's). */
export interface RequestTimings {
  prompt_n: number;
  prompt_ms: number;
  predicted_n: number;
  predicted_ms: number;
}

/** What the engine reports at scrape time. */
export interface EngineCounters {
  /** Requests in a slot. */
  processing: number;
  /** Requests waiting for one (the queue). */
  deferred: number;
  slots: number;
  /** Generation requests the server sent to the engine and has not answered (preparing, queued or in a slot). */
  inFlight: number;
  /** Decode calls and the tokens in them. */
  nDecode: number;
  nTokens: number;
  /** Speculative decoding: tokens drafted, and accepted. */
  nDrafted: number;
  nAccepted: number;
  /** Each slot's state. */
  perSlot: readonly SlotStatus[];
}

export class Metrics {
  promptTokens = 0;
  promptMs = 0;
  predictedTokens = 0;
  predictedMs = 0;
  requests = 0;
  rejected = 0;
  cancelled = 0;
  errors = 0;
  readonly started = Date.now();

  onRequestDone(t: RequestTimings): void {
    this.promptTokens += t.prompt_n;
    this.promptMs += t.prompt_ms;
    this.predictedTokens += t.predicted_n;
    this.predictedMs += t.predicted_ms;
  }

  onCancel(): void {
    this.cancelled++;
  }

  /** Prometheus exposition text. */
  render(e: EngineCounters): string {
    const rows: [string, 'counter' | 'gauge', string, number][] = [
      ['llamacpp:prompt_tokens_total', 'counter', 'Number of prompt tokens processed.', this.promptTokens],
      ['llamacpp:prompt_seconds_total', 'counter', 'Prompt process time.', this.promptMs / 1000],
      ['llamacpp:tokens_predicted_total', 'counter', 'Number of generation tokens processed.', this.predictedTokens],
      ['llamacpp:tokens_predicted_seconds_total', 'counter', 'Predict process time.', this.predictedMs / 1000],
      ['llamacpp:n_decode_total', 'counter', 'Total number of llama_decode() calls.', e.nDecode],
      ['llamacpp:n_tokens_max', 'counter', 'Tokens evaluated in all decode calls.', e.nTokens],
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
      ['llamats:draft_tokens_total', 'counter', 'Tokens drafted for speculative decoding.', e.nDrafted],
      ['llamats:draft_tokens_accepted_total', 'counter', 'Drafted tokens the model accepted.', e.nAccepted],
      [
        'llamats:draft_acceptance_rate',
        'gauge',
        'Drafted tokens accepted, as a fraction of those drafted.',
        e.nDrafted > 0 ? e.nAccepted / e.nDrafted : 0,
      ],
      ['llamacpp:requests_processing', 'gauge', 'Number of requests processing.', e.processing],
      ['llamacpp:requests_deferred', 'gauge', 'Number of requests deferred.', e.deferred],
      ['llamats:slots', 'gauge', 'Number of slots.', e.slots],
      ['llamats:http_requests_total', 'counter', 'HTTP requests received.', this.requests],
      ['llamats:requests_rejected_total', 'counter', 'Requests rejected because the queue was full.', this.rejected],
      ['llamats:requests_cancelled_total', 'counter', 'Requests whose client went away.', this.cancelled],
      ['llamats:http_errors_total', 'counter', 'Requests answered with an error status.', this.errors],
      ['llamats:uptime_seconds', 'gauge', 'Seconds since the server started.', (Date.now() - this.started) / 1000],
      ['llamats:requests_in_flight', 'gauge', 'Generation requests being prepared, queued or in a slot.', e.inFlight],
    ];
    const perSlot: [string, string, (s: SlotStatus) => number][] = [
      [
        'llamats:slot_processing',
        'Whether the slot runs a request (1) or is idle (0).',
        (s) => (s.is_processing ? 1 : 0),
      ],
      [
        'llamats:slot_cached_tokens',
        "Tokens the slot's memory holds (a next request may reuse them).",
        (s) => s.n_cached,
      ],
      ['llamats:slot_decoded_tokens', "Tokens the slot's request has generated so far.", (s) => s.n_decoded],
    ];
    return (
      rows.map(([name, type, help, v]) => `# HELP ${name} ${help}\n# TYPE ${name} ${type}\n${name} ${v}\n`).join('') +
      perSlot
        .map(
          ([name, help, f]) =>
            `# HELP ${name} ${help}\n# TYPE ${name} gauge\n${e.perSlot.map((s) => `${name}{slot="${s.id}"} ${f(s)}\n`).join('')}`,
        )
        .join('')
    );
  }
}
