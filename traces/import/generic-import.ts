/**
 * Generic trace importer: any JSON Lines, CSV or column-array JSON file whose rows are requests,
 * with a column map saying which source column holds which trace field
 * (`arrival=…,input=…,output=…[,session=…,round=…,prefix_hashes=…,model=…,ttft=…,e2e=…,itl=…]`),
 * a time unit (s or ms) and whether arrivals are absolute (subtract the earliest) or relative
 * (already from the trace start). Presets (`generic-presets.ts`) fill these in for known
 * benchmark outputs. Rows are written in arrival order (stable for ties); `request_id` is the
 * source row's 0-based index, or `<session>#<round>` when both are mapped. A bad value stops the
 * import with `<file>: row N (1-based[, line L]), column <name>: <problem>`; nothing is written then.
 */
import { readFile } from 'node:fs/promises';
import { basename, dirname, join } from 'node:path';
import { writeTrace } from '../arrow-trace.ts';
import { parseWallClock, wallClockDiffMs, type WallClock } from '../import-azure.ts';
import { importStats, type ImportStats } from '../import-stats.ts';
import { parseTokenCount } from '../source-lines.ts';
import { sourceNoteFor } from '../source-note.ts';
import type { TraceMeta, TraceRow } from '../trace-row.ts';
import { parseCsv } from './csv-records.ts';

/** Source layouts the generic importer reads. */
export const GENERIC_FORMATS = ['jsonl', 'csv', 'json'] as const;

/** `jsonl`: one JSON object per line; `csv`: RFC 4180 with a header; `json`: an object of equal-length column arrays, or an array of row objects. */
export type GenericFormat = (typeof GENERIC_FORMATS)[number];

/** Trace fields a column map may name. */
export const MAP_FIELDS = ['arrival', 'input', 'output', 'session', 'round', 'prefix_hashes', 'model', 'ttft', 'e2e', 'itl'] as const;

/** A trace field of the column map. */
export type MapField = (typeof MAP_FIELDS)[number];

/** Which source column holds each trace field (`arrival`, `input`, `output` required). */
export type ColumnMap = Partial<Record<MapField, string>> & { arrival: string; input: string; output: string };

/** Options of `importGeneric`. */
export interface GenericImportOptions {
  readonly map: ColumnMap;
  /** Unit of numeric times (arrival, ttft, e2e, itl). Default ms. */
  readonly timeUnit?: 's' | 'ms';
  /** `absolute`: subtract the earliest arrival; `relative`: arrivals are from the trace start. Date-time text is always absolute. Default relative. */
  readonly arrivals?: 'absolute' | 'relative';
  /** Tokens per `prefix_hashes` block; required when `prefix_hashes` is mapped. */
  readonly blockSize?: number;
  /** A note on where the data came from; its text (or, for a SOURCE.txt-style note, `<repository> <path> @ <commit>`) becomes the `source` metadata. Default: the SOURCE.txt beside the file. */
  readonly sourceNote?: string;
  /** `source` when there is no note (a preset's default). */
  readonly defaultSource?: string;
  readonly licence?: string;
  readonly citation?: string;
  readonly hardware?: string;
  readonly engine?: string;
  readonly servedModel?: string;
  /**
   * For a `json` file whose arrival column is absent: the arrival of every row, or an Error
   * message saying why there is none (a preset's rule; e.g. vLLM's results keep no send times).
   */
  readonly missingArrivals?: (doc: Record<string, unknown>) => number | string;
}

/** One source row: 1-based row number, the line it starts on (text formats), and a column getter. */
interface SourceRow {
  readonly rowNo: number;
  readonly lineNo: number | null;
  get(column: string): unknown;
  has(column: string): boolean;
}

/** `<file>: row N (1-based[, line L]), column C: problem`. */
function rowError(file: string, row: SourceRow, column: string, problem: string): Error {
  return new Error(`${file}: row ${row.rowNo} (1-based${row.lineNo === null || row.lineNo === row.rowNo ? '' : `, line ${row.lineNo}`}), column ${column}: ${problem}`);
}

/** Reads the rows of a source file. `doc` is the parsed document of a `json` file (else null). */
async function readRows(format: GenericFormat, file: string): Promise<{ rows: SourceRow[]; doc: Record<string, unknown> | null }> {
  const text = await readFile(file, 'utf8');
  if (format === 'csv') {
    const [header, ...body] = parseCsv(text, file);
    if (!header) throw new Error(`${file}: row 0 (header): the file is empty; a CSV needs a header row naming its columns`);
    const names = header.fields.map((f) => f.trim());
    const index = new Map(names.map((n, i) => [n, i]));
    return {
      doc: null,
      rows: body
        .filter((r) => !(r.fields.length === 1 && r.fields[0] === ''))
        .map((r, k) => {
          const row: SourceRow = {
            rowNo: k + 1,
            lineNo: r.lineNo,
            get: (c) => r.fields[index.get(c)!],
            has: (c) => index.has(c),
          };
          if (r.fields.length !== names.length) throw rowError(file, row, '(whole row)', `has ${r.fields.length} fields; the header has ${names.length}`);
          return row;
        }),
    };
  }
  if (format === 'jsonl') {
    const rows: SourceRow[] = [];
    text.split(/\r?\n/).forEach((line, i) => {
      if (line.trim() === '') return;
      const at = { rowNo: rows.length + 1, lineNo: i + 1, get: () => undefined, has: () => false };
      let obj: unknown;
      try {
        obj = JSON.parse(line);
      } catch (e) {
        throw rowError(file, at, '(whole row)', `not JSON: ${(e as Error).message}`);
      }
      if (obj === null || typeof obj !== 'object' || Array.isArray(obj)) throw rowError(file, at, '(whole row)', 'not a JSON object');
      const o = obj as Record<string, unknown>;
      rows.push({ rowNo: at.rowNo, lineNo: i + 1, get: (c) => o[c], has: (c) => c in o });
    });
    return { rows, doc: null };
  }
  let doc: unknown;
  try {
    doc = JSON.parse(text);
  } catch (e) {
    throw new Error(`${file}: not JSON: ${(e as Error).message}`);
  }
  if (Array.isArray(doc)) {
    return {
      doc: null,
      rows: doc.map((o, k) => {
        const row: SourceRow = { rowNo: k + 1, lineNo: null, get: (c) => (o as Record<string, unknown>)?.[c], has: (c) => o !== null && typeof o === 'object' && c in o };
        if (o === null || typeof o !== 'object' || Array.isArray(o)) throw rowError(file, row, '(whole row)', 'not a JSON object');
        return row;
      }),
    };
  }
  if (doc === null || typeof doc !== 'object') throw new Error(`${file}: expected a JSON object of column arrays or an array of row objects`);
  const cols = doc as Record<string, unknown>;
  const lengths = Object.entries(cols).filter(([, v]) => Array.isArray(v)) as [string, unknown[]][];
  const n = lengths.length > 0 ? Math.max(...lengths.map(([, v]) => v.length)) : 0;
  const rows: SourceRow[] = Array.from({ length: n }, (_, k) => ({
    rowNo: k + 1,
    lineNo: null,
    get: (c) => (Array.isArray(cols[c]) ? (cols[c] as unknown[])[k] : undefined),
    has: (c) => Array.isArray(cols[c]),
  }));
  return { rows, doc: cols };
}

/** A number from a JSON number or decimal text; null otherwise. */
function numberOf(v: unknown): number | null {
  if (typeof v === 'number') return Number.isFinite(v) ? v : null;
  if (typeof v === 'string' && /^\s*[-+]?(\d+\.?\d*|\.\d+)([eE][-+]?\d+)?\s*$/.test(v)) return Number(v);
  return null;
}

/**
 * Parses a `--map` value `field=column,field=column,…`.
 * @throws Error naming the unknown field, the missing required one, or a malformed pair.
 */
export function parseColumnMap(text: string): ColumnMap {
  const out: Partial<Record<MapField, string>> = {};
  for (const pair of text.split(',')) {
    const eq = pair.indexOf('=');
    if (eq <= 0 || eq === pair.length - 1) throw new Error(`--map: '${pair}' is not field=column (e.g. arrival=timestamp)`);
    const field = pair.slice(0, eq).trim() as MapField;
    if (!(MAP_FIELDS as readonly string[]).includes(field)) throw new Error(`--map: unknown field '${field}'; fields are ${MAP_FIELDS.join(', ')}`);
    out[field] = pair.slice(eq + 1).trim();
  }
  for (const f of ['arrival', 'input', 'output'] as const) if (out[f] === undefined) throw new Error(`--map: needs ${f}=<column> (required: arrival, input, output)`);
  return out as ColumnMap;
}

/**
 * Converts `src` to the Arrow trace `dst`.
 * @throws Error `<src>: row N (1-based[, line L]), column C: problem` for a missing column, a
 *   value of the wrong kind (arrival not a number or date-time, a token count not an integer
 *   ≥ 0, hashes not a list of integers, a time < 0), a repeated `<session>#<round>`; errors of
 *   the CSV/JSON readers and of `writeTrace`; file system errors.
 */
export async function importGeneric(format: GenericFormat, src: string, dst: string, opts: GenericImportOptions): Promise<ImportStats> {
  const { map } = opts;
  const scale = (opts.timeUnit ?? 'ms') === 's' ? 1000 : 1;
  if (map.prefix_hashes !== undefined && !(Number.isInteger(opts.blockSize) && opts.blockSize! > 0)) {
    throw new Error(`--block-size: mapping prefix_hashes needs the tokens per hash block (e.g. --block-size 512)`);
  }
  const { rows, doc } = await readRows(format, src);
  let fixedArrival: number | null = null;
  if (rows.length > 0 && !rows[0]!.has(map.arrival)) {
    const rule = doc && opts.missingArrivals ? opts.missingArrivals(doc) : `no column '${map.arrival}' in the file`;
    if (typeof rule === 'string') throw rowError(src, rows[0]!, map.arrival, rule);
    fixedArrival = rule;
  }
  const need = (row: SourceRow, field: MapField): unknown => {
    const col = map[field]!;
    if (!row.has(col)) throw rowError(src, row, col, `missing (mapped to ${field}; name the right column with --map ${field}=COLUMN)`);
    return row.get(col);
  };
  const optional = (row: SourceRow, field: MapField): unknown => {
    const col = map[field];
    if (col === undefined || !row.has(col)) return null;
    const v = row.get(col);
    return v === '' ? null : v;
  };
  const time = (row: SourceRow, field: MapField, v: unknown): number | null => {
    if (v === null || v === undefined) return null;
    const n = numberOf(v);
    if (n === null || n < 0) throw rowError(src, row, map[field]!, `'${String(v)}' is not a time ≥ 0 in ${opts.timeUnit ?? 'ms'}`);
    return n * scale;
  };
  type Parsed = { index: number; arrival: number | WallClock; row: TraceRow };
  const parsed: Parsed[] = [];
  const ids = new Set<string>();
  let sawClock = false;
  rows.forEach((row, index) => {
    let arrival: number | WallClock;
    if (fixedArrival !== null) arrival = fixedArrival;
    else {
      const v = need(row, 'arrival');
      const n = numberOf(v);
      const clock = n === null && typeof v === 'string' ? parseWallClock(v.trim().replace(/Z$/, '')) : null;
      if (clock) {
        arrival = clock;
        sawClock = true;
      } else if (n !== null && n >= 0) arrival = n * scale;
      else throw rowError(src, row, map.arrival, `'${String(v)}' is not a number ≥ 0 (${opts.timeUnit ?? 'ms'}) or a date-time YYYY-MM-DD hh:mm:ss[.fraction]`);
      if (sawClock && typeof arrival === 'number') throw rowError(src, row, map.arrival, `'${String(v)}' is a number, earlier rows are date-times`);
    }
    const tokens = (field: 'input' | 'output') => {
      const v = need(row, field);
      const t = parseTokenCount(typeof v === 'string' ? v.trim() : (v as number));
      if (t === null) throw rowError(src, row, map[field]!, `'${String(v)}' is not an integer in [0, 2^31 − 1] (tokens)`);
      return t;
    };
    const inputTokens = tokens('input');
    const outputTokens = tokens('output');
    const session = optional(row, 'session');
    const round = optional(row, 'round');
    if (round !== null && (numberOf(round) === null || !Number.isInteger(numberOf(round)) || numberOf(round)! < 0)) throw rowError(src, row, map.round!, `'${String(round)}' is not an integer round ≥ 0`);
    let requestId = String(index);
    if (session !== null && round !== null) {
      requestId = `${String(session)}#${numberOf(round)}`;
      if (ids.has(requestId)) throw rowError(src, row, map.round!, `session ${String(session)} has round ${numberOf(round)} twice`);
      ids.add(requestId);
    }
    let hashIds: number[] | null = null;
    const h = optional(row, 'prefix_hashes');
    if (h !== null) {
      let list: unknown = h;
      if (typeof h === 'string') {
        const t = h.trim();
        list = t.startsWith('[') ? (() => { try { return JSON.parse(t) as unknown; } catch { return null; } })() : t.split(/[\s;]+/).filter((x) => x !== '').map(Number);
      }
      if (!Array.isArray(list) || !list.every((x) => Number.isInteger(x) && x >= -(2 ** 31) && x < 2 ** 31)) throw rowError(src, row, map.prefix_hashes!, `'${typeof h === 'string' ? h : JSON.stringify(h)}' is not a list of 32-bit integers ([1,2,3] or 1 2 3)`);
      hashIds = list as number[];
    }
    const itlRaw = optional(row, 'itl');
    let itlMs: number[] | null = null;
    if (itlRaw !== null) {
      const list = typeof itlRaw === 'string' ? (() => { try { return JSON.parse(itlRaw) as unknown; } catch { return null; } })() : itlRaw;
      if (!Array.isArray(list) || !list.every((x) => typeof x === 'number' && Number.isFinite(x) && x >= 0)) throw rowError(src, row, map.itl!, `is not a list of times ≥ 0 in ${opts.timeUnit ?? 'ms'}`);
      itlMs = list.map((x: number) => x * scale);
    }
    const model = optional(row, 'model');
    parsed.push({
      index,
      arrival,
      row: {
        arrivalMs: 0,
        requestId,
        sessionId: session === null ? null : String(session),
        callerId: null,
        model: model === null ? null : String(model),
        inputTokens,
        outputTokens,
        hashIds,
        stream: true,
        ttftMs: time(row, 'ttft', optional(row, 'ttft')),
        e2eMs: time(row, 'e2e', optional(row, 'e2e')),
        itlMs,
      },
    });
  });
  // Arrival ms: date-times and absolute numbers from the earliest row; relative numbers as they are.
  const absolute = sawClock || opts.arrivals === 'absolute';
  if (sawClock) {
    const clocks = parsed.map((p) => p.arrival as WallClock);
    const origin = clocks.reduce((a, b) => (wallClockDiffMs(a, b) < 0 ? b : a));
    for (const p of parsed) p.row.arrivalMs = wallClockDiffMs(origin, p.arrival as WallClock);
  } else {
    const origin = absolute && parsed.length > 0 ? Math.min(...parsed.map((p) => p.arrival as number)) : 0;
    for (const p of parsed) p.row.arrivalMs = (p.arrival as number) - origin;
  }
  parsed.sort((a, b) => a.row.arrivalMs - b.row.arrivalMs || a.index - b.index);
  const out = parsed.map((p) => p.row);
  const meta: TraceMeta = {
    source: await sourceOf(src, opts),
    licence: opts.licence ?? 'unknown',
    citation: opts.citation ?? '',
    hardware: opts.hardware ?? 'unknown',
    engine: opts.engine ?? 'unknown',
    servedModel: opts.servedModel ?? 'unknown',
    blockSize: map.prefix_hashes !== undefined ? opts.blockSize! : 0,
    blockUnit: 'tokens',
    sessionRule: map.session !== undefined ? 'source' : 'none',
  };
  await writeTrace(dst, meta, out);
  return importStats(src, dst, meta, out);
}

/**
 * The `source` metadata, from a note: `--source-note FILE`, else `SOURCE.txt` beside the file.
 * A note in the SOURCE.txt form (`Repository:`, `Path:`, `Commit:` lines) gives `<repository>
 * <path> @ <commit>`; any other note is used as written. Without a note: the preset's default,
 * else `local file <name> (no SOURCE.txt beside it)`.
 * @throws Error when `--source-note` names a file that cannot be read or is empty.
 */
async function sourceOf(src: string, opts: GenericImportOptions): Promise<string> {
  const notePath = opts.sourceNote ?? join(dirname(src), 'SOURCE.txt');
  let text: string | null = null;
  try {
    text = (await readFile(notePath, 'utf8')).trim();
  } catch (e) {
    if (opts.sourceNote !== undefined) throw new Error(`--source-note ${opts.sourceNote}: ${(e as Error).message}`);
  }
  if (text === null) return opts.defaultSource !== undefined ? `${opts.defaultSource}; local file ${basename(src)}` : sourceNoteFor(src);
  if (text === '') throw new Error(`${notePath}: the source note is empty`);
  return /^Repository:/m.test(text) ? sourceNoteFor(src, notePath) : text;
}
