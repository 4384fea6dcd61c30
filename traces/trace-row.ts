/**
 * One request of a trace, as the simulator and the gateway's request log see it.
 * The on-disk form is an Arrow IPC file whose columns are the snake_case names below; the
 * full schema with units is written down in `traces/README.md`.
 */
export interface TraceRow {
  /** Arrival time, milliseconds from the start of the trace (float64, ≥ 0, non-decreasing). */
  arrivalMs: number;
  /** Request id, unique within the trace (`arrival order` index when the source has none). */
  requestId: string;
  /** Conversation/session id; null when the source has none and no derivation rule applies. */
  sessionId: string | null;
  /** Caller (API key / user) id; null in public traces — experiments assign callers by a seeded rule. */
  callerId: string | null;
  /** Requested model name; null when the source does not say. */
  model: string | null;
  /** Prompt (input) tokens, integer ≥ 0. */
  inputTokens: number;
  /** Generated (output) tokens, integer ≥ 0. */
  outputTokens: number;
  /** Prefix block hash ids in prompt order (block size in file metadata); null when unknown. */
  hashIds: readonly number[] | null;
  /** Whether the client asked for a streamed (SSE) response. */
  stream: boolean;
  /** Measured time to first token, ms; null when the trace was not measured. */
  ttftMs: number | null;
  /** Measured end-to-end latency, ms; null when not measured. */
  e2eMs: number | null;
  /** Measured inter-token latencies, ms each; null when not measured. */
  itlMs: readonly number[] | null;
}

/** File-level metadata of a trace (Arrow schema metadata, string values on disk). */
export interface TraceMeta {
  /** Where the data came from: repository, path, commit. */
  source: string;
  /** Licence of the data (SPDX id where there is one). */
  licence: string;
  /** Citation the licence or the authors ask for; empty when none. */
  citation: string;
  /** Hardware the trace was measured on, or `unknown`. */
  hardware: string;
  /** Serving engine the trace was measured on, or `unknown`. */
  engine: string;
  /** Model served when the trace was recorded, or `unknown`. */
  servedModel: string;
  /** Size of one prefix block named by `hashIds`, in `blockUnit`s (Mooncake: 512 tokens). 0 if no hashes. */
  blockSize: number;
  /** Unit of `blockSize`. */
  blockUnit: 'tokens' | 'bytes';
  /** How session ids were obtained: `source`, `derived:<rule>` or `none`. */
  sessionRule: string;
}
