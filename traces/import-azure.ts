/**
 * Converter for the Azure LLM inference traces 2023 (Splitwise, Patel et al., ISCA 2024;
 * CC-BY-4.0). CSV with header `TIMESTAMP,ContextTokens,GeneratedTokens`, wall-clock
 * timestamps like `2023-11-16 18:17:03.9799600` (7 fractional digits), CRLF line ends and
 * no final newline.
 */
import { writeTrace } from './arrow-trace.ts';
import { importStats } from './import-stats.ts';
import type { ImportStats } from './import-stats.ts';
import { parseTokenCount, readSourceLines, sourceError } from './source-lines.ts';
import type { SourceLine } from './source-lines.ts';
import { sourceNoteFor } from './source-note.ts';
import type { TraceMeta, TraceRow } from './trace-row.ts';

/** Citation the CC-BY-4.0 licence requires for the Azure traces. */
export const AZURE_CITATION =
  'Patel et al., "Splitwise: Efficient generative LLM inference using phase splitting", ISCA 2024';

/** A wall-clock timestamp split so that sub-second digits stay exact. */
export interface WallClock {
  /** Whole seconds since 1970-01-01 00:00:00, the clock read as UTC (the zone cancels out of differences). */
  seconds: number;
  /** Nanoseconds within the second, integer in [0, 1e9). */
  nanos: number;
}

const TIMESTAMP = /^(\d{4})-(\d{2})-(\d{2})[ T](\d{2}):(\d{2}):(\d{2})(?:\.(\d{1,9}))?$/;

/**
 * Parses `YYYY-MM-DD hh:mm:ss[.f…]` (up to 9 fractional digits; `T` also accepted as the
 * separator). The fraction is read as an integer count of nanoseconds, never through
 * floating point or `Date`, so 100-ns Azure ticks stay exact.
 * @returns null when the text does not match or names an impossible date or time.
 */
export function parseWallClock(text: string): WallClock | null {
  const m = TIMESTAMP.exec(text);
  if (m === null) return null;
  const [y, mo, d, h, mi, s] = m.slice(1, 7).map(Number) as [number, number, number, number, number, number];
  if (mo < 1 || mo > 12 || d < 1 || h > 23 || mi > 59 || s > 59) return null;
  const dayMs = Date.UTC(y, mo - 1, d);
  if (new Date(dayMs).getUTCDate() !== d) return null; // e.g. 2023-02-30
  const nanos = Number((m[7] ?? '').padEnd(9, '0'));
  return { seconds: dayMs / 1000 + h * 3600 + mi * 60 + s, nanos };
}

/**
 * Milliseconds from `origin` to `t`. Computed as an integer nanosecond difference (exact up
 * to ~104 days apart) divided once by 1e6, so the result is the double nearest the true value.
 */
export function wallClockDiffMs(origin: WallClock, t: WallClock): number {
  return ((t.seconds - origin.seconds) * 1e9 + (t.nanos - origin.nanos)) / 1e6;
}

/** One parsed Azure request. */
export interface AzureRequest {
  /** Arrival, ms after the first row's timestamp. */
  arrivalMs: number;
  /** `ContextTokens`: prompt tokens. */
  contextTokens: number;
  /** `GeneratedTokens`: output tokens. */
  generatedTokens: number;
}

/**
 * Parses Azure CSV lines (as from `readSourceLines`), header first. Columns are found by
 * header name, so their order does not matter; extra columns are ignored.
 * @param file the source path, for error messages.
 * @throws Error `<file>: line N (1-based), field <field>: <problem>` for a missing header
 *   column, a wrong number of fields, an unparsable or decreasing `TIMESTAMP`, or a token
 *   count that is not decimal digits for an integer in [0, 2^31 − 1].
 */
export function parseAzureLines(file: string, lines: readonly SourceLine[]): AzureRequest[] {
  const [header, ...body] = lines;
  if (header === undefined) throw sourceError(file, 1, '(header)', 'file is empty; expected TIMESTAMP,ContextTokens,GeneratedTokens');
  const names = header.text.split(',').map((s) => s.trim());
  const column = (name: string): number => {
    const i = names.indexOf(name);
    if (i < 0) throw sourceError(file, header.lineNo, name, `missing from the header '${header.text}'`);
    return i;
  };
  const cTs = column('TIMESTAMP');
  const cIn = column('ContextTokens');
  const cOut = column('GeneratedTokens');
  const out: AzureRequest[] = [];
  let origin: WallClock | null = null;
  let prevMs = -Infinity;
  for (const { lineNo, text } of body) {
    const cells = text.split(',').map((s) => s.trim());
    if (cells.length !== names.length) {
      throw sourceError(file, lineNo, '(whole line)', `has ${cells.length} fields; the header has ${names.length}`);
    }
    const tsText = cells[cTs] ?? '';
    const ts = parseWallClock(tsText);
    if (ts === null) throw sourceError(file, lineNo, 'TIMESTAMP', `'${tsText}' is not a timestamp YYYY-MM-DD hh:mm:ss[.fraction]`);
    origin ??= ts;
    const arrivalMs = wallClockDiffMs(origin, ts);
    if (arrivalMs < prevMs) throw sourceError(file, lineNo, 'TIMESTAMP', `'${tsText}' is earlier than the previous row; arrivals must not decrease`);
    prevMs = arrivalMs;
    const count = (i: number, field: string): number => {
      const v = cells[i] ?? '';
      const n = parseTokenCount(v);
      if (n === null) throw sourceError(file, lineNo, field, `'${v}' is not an integer in [0, 2^31 − 1] (tokens)`);
      return n;
    };
    out.push({ arrivalMs, contextTokens: count(cIn, 'ContextTokens'), generatedTokens: count(cOut, 'GeneratedTokens') });
  }
  return out;
}

/**
 * Converts an Azure 2023 CSV trace into an Arrow trace file.
 * Row mapping: `request_id` = 0-based data-row index as decimal text ("0" is the row after
 * the header); `arrival_ms` = ms after the first row's timestamp; `session_id` and
 * `hash_ids` null (the source has neither; `session_rule` `none`, block size 0);
 * `stream` = true (unknown in the source); caller, model and measured latencies null.
 * @throws the errors of `parseAzureLines` and `writeTrace`, and file system errors.
 */
export async function importAzure(src: string, dst: string): Promise<ImportStats> {
  const requests = parseAzureLines(src, await readSourceLines(src));
  const meta: TraceMeta = {
    source: await sourceNoteFor(src),
    licence: 'CC-BY-4.0',
    citation: AZURE_CITATION,
    hardware: 'unknown',
    engine: 'unknown',
    servedModel: 'unknown',
    blockSize: 0,
    blockUnit: 'tokens',
    sessionRule: 'none',
  };
  const rows: TraceRow[] = requests.map((r, i) => ({
    arrivalMs: r.arrivalMs,
    requestId: String(i),
    sessionId: null,
    callerId: null,
    model: null,
    inputTokens: r.contextTokens,
    outputTokens: r.generatedTokens,
    hashIds: null,
    stream: true,
    ttftMs: null,
    e2eMs: null,
    itlMs: null,
  }));
  await writeTrace(dst, meta, rows);
  return importStats(src, dst, meta, rows);
}
