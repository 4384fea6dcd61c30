/**
 * Converter for the Mooncake FAST'25 JSON Lines traces (Qin et al., FAST'25; Apache-2.0).
 * One JSON object per line: `timestamp` (ms since trace start), `input_length`,
 * `output_length` (tokens), `hash_ids` (prefix-block hash ids, 512-token blocks).
 */
import { basename } from 'node:path';
import { writeTrace } from './arrow-trace.ts';
import { deriveSessions } from './derive-sessions.ts';
import { importStats } from './import-stats.ts';
import type { ImportStats } from './import-stats.ts';
import { parseTokenCount, readSourceLines, sourceError } from './source-lines.ts';
import type { SourceLine } from './source-lines.ts';
import { sourceNoteFor } from './source-note.ts';
import type { TraceMeta, TraceRow } from './trace-row.ts';

/** Tokens per Mooncake hash block. */
export const MOONCAKE_BLOCK_TOKENS = 512;

/** Citation the Mooncake authors ask for. */
export const MOONCAKE_CITATION =
  'Qin et al., "Mooncake: Trading More Storage for Less Computation — A KVCache-centric Architecture for Serving LLM Chatbot", FAST\'25 (USENIX FAST 2025)';

/** One parsed Mooncake request. */
export interface MooncakeRequest {
  /** `timestamp`: ms since trace start. */
  timestampMs: number;
  /** `input_length`: prompt tokens. */
  inputLength: number;
  /** `output_length`: generated tokens. */
  outputLength: number;
  /** `hash_ids`: 512-token prefix-block hash ids in prompt order. */
  hashIds: number[];
}

/**
 * Parses Mooncake JSONL lines (as from `readSourceLines`).
 * @param file the source path, for error messages.
 * @throws Error `<file>: line N (1-based), field <field>: <problem>` for an empty line, bad
 *   JSON, a missing field, a token count that is not an integer in [0, 2^31 − 1], a
 *   timestamp that is not a finite number ≥ 0 or is below the previous line's, or a hash id
 *   that is not an integer in [0, 2^31 − 1].
 */
export function parseMooncakeLines(file: string, lines: readonly SourceLine[]): MooncakeRequest[] {
  const out: MooncakeRequest[] = [];
  let prev = -Infinity;
  for (const { lineNo, text } of lines) {
    if (text.trim() === '') throw sourceError(file, lineNo, '(whole line)', 'empty line; expected one JSON object');
    let obj: unknown;
    try {
      obj = JSON.parse(text);
    } catch (err) {
      throw sourceError(file, lineNo, '(whole line)', `not valid JSON (${(err as Error).message})`);
    }
    if (typeof obj !== 'object' || obj === null || Array.isArray(obj)) {
      throw sourceError(file, lineNo, '(whole line)', 'not a JSON object');
    }
    const rec = obj as Record<string, unknown>;
    const need = (field: string): unknown => {
      if (!(field in rec)) throw sourceError(file, lineNo, field, 'missing');
      return rec[field];
    };
    const ts = need('timestamp');
    if (typeof ts !== 'number' || !Number.isFinite(ts) || ts < 0) {
      throw sourceError(file, lineNo, 'timestamp', `${JSON.stringify(ts)} is not a finite number ≥ 0 (ms)`);
    }
    if (ts < prev) throw sourceError(file, lineNo, 'timestamp', `${ts} is below the previous line's ${prev}; arrivals must not decrease`);
    prev = ts;
    const count = (field: string): number => {
      const v = need(field);
      const n = typeof v === 'number' ? parseTokenCount(v) : null;
      if (n === null) throw sourceError(file, lineNo, field, `${JSON.stringify(v)} is not an integer in [0, 2^31 − 1] (tokens)`);
      return n;
    };
    const inputLength = count('input_length');
    const outputLength = count('output_length');
    const hashes = need('hash_ids');
    if (!Array.isArray(hashes)) throw sourceError(file, lineNo, 'hash_ids', 'not a JSON array');
    hashes.forEach((h: unknown, k) => {
      if (typeof h !== 'number' || parseTokenCount(h) === null) {
        throw sourceError(file, lineNo, `hash_ids[${k}]`, `${JSON.stringify(h)} is not an integer in [0, 2^31 − 1]`);
      }
    });
    out.push({ timestampMs: ts, inputLength, outputLength, hashIds: hashes as number[] });
  }
  return out;
}

/**
 * Converts a Mooncake JSONL trace into an Arrow trace file.
 * Row mapping: `request_id` = 0-based line index as decimal text ("0", "1", …);
 * `arrival_ms` = `timestamp` unchanged; `session_id` by `deriveSessions` (rule in the
 * file's `session_rule`); `stream` = true (unknown in the source); caller, model and
 * measured latencies null. Metadata: block size 512 tokens, source from `SOURCE.txt`.
 * @throws the errors of `parseMooncakeLines` and `writeTrace`, and file system errors.
 */
export async function importMooncake(src: string, dst: string): Promise<ImportStats> {
  const requests = parseMooncakeLines(src, await readSourceLines(src));
  const requestIds = requests.map((_, i) => String(i));
  const derived = deriveSessions(
    requests.map((r) => r.hashIds),
    requestIds,
  );
  const synthetic = basename(src).includes('synthetic');
  const meta: TraceMeta = {
    source: await sourceNoteFor(src),
    licence: 'Apache-2.0',
    citation: MOONCAKE_CITATION,
    hardware: 'unknown',
    engine: 'unknown',
    // The conversation trace is a sample of Kimi production traffic (paper); the synthetic
    // one was assembled from public datasets, so no served model applies.
    servedModel: synthetic ? 'unknown' : 'Kimi (Moonshot AI)',
    blockSize: MOONCAKE_BLOCK_TOKENS,
    blockUnit: 'tokens',
    sessionRule: derived.rule,
  };
  const rows: TraceRow[] = requests.map((r, i) => ({
    arrivalMs: r.timestampMs,
    requestId: requestIds[i] ?? String(i),
    sessionId: derived.sessionIds[i] ?? null,
    callerId: null,
    model: null,
    inputTokens: r.inputLength,
    outputTokens: r.outputLength,
    hashIds: r.hashIds,
    stream: true,
    ttftMs: null,
    e2eMs: null,
    itlMs: null,
  }));
  await writeTrace(dst, meta, rows);
  return importStats(src, dst, meta, rows);
}
