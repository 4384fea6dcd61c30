/**
 * The on-disk Arrow schema of a trace: column names and types, and the mapping between
 * `TraceMeta` and the Arrow schema's string metadata. `traces/README.md` documents the same
 * schema with units; keep the two in step.
 */
import { Bool, Field, Float32, Float64, Int32, List, Schema, Utf8 } from 'apache-arrow';
import type { DataType } from 'apache-arrow';
import type { TraceMeta } from './trace-row.ts';

/** Snake-case column names in file order. */
export const TRACE_COLUMNS = [
  'arrival_ms',
  'request_id',
  'session_id',
  'caller_id',
  'model',
  'input_tokens',
  'output_tokens',
  'hash_ids',
  'stream',
  'ttft_ms',
  'e2e_ms',
  'itl_ms',
] as const;

/** One column name of the trace schema. */
export type TraceColumn = (typeof TRACE_COLUMNS)[number];

/** Schema metadata keys in the order they are written. */
export const TRACE_META_KEYS = [
  'source',
  'licence',
  'citation',
  'hardware',
  'engine',
  'served_model',
  'block_size',
  'block_unit',
  'session_rule',
] as const;

/**
 * The Arrow fields of a trace. List children are named `item` (the pyarrow convention) and
 * non-nullable: a present list never holds null elements.
 */
export function traceFields(): Field[] {
  const list = <T extends DataType>(type: T): List<T> => new List(new Field('item', type, false));
  return [
    new Field('arrival_ms', new Float64(), false),
    new Field('request_id', new Utf8(), false),
    new Field('session_id', new Utf8(), true),
    new Field('caller_id', new Utf8(), true),
    new Field('model', new Utf8(), true),
    new Field('input_tokens', new Int32(), false),
    new Field('output_tokens', new Int32(), false),
    new Field('hash_ids', list(new Int32()), true),
    new Field('stream', new Bool(), false),
    new Field('ttft_ms', new Float64(), true),
    new Field('e2e_ms', new Float64(), true),
    new Field('itl_ms', list(new Float32()), true),
  ];
}

/** The full Arrow schema of a trace, `meta` stored as schema (file) metadata. */
export function traceSchema(meta: TraceMeta): Schema {
  return new Schema(traceFields(), metaToArrowMetadata(meta));
}

/** `TraceMeta` as Arrow schema metadata (all values strings; `block_size` in decimal). */
export function metaToArrowMetadata(meta: TraceMeta): Map<string, string> {
  return new Map<string, string>([
    ['source', meta.source],
    ['licence', meta.licence],
    ['citation', meta.citation],
    ['hardware', meta.hardware],
    ['engine', meta.engine],
    ['served_model', meta.servedModel],
    ['block_size', String(meta.blockSize)],
    ['block_unit', meta.blockUnit],
    ['session_rule', meta.sessionRule],
  ]);
}

/**
 * Parses Arrow schema metadata back into `TraceMeta`. Unknown keys are ignored.
 * @throws Error naming `file` and the key when a key is missing, `block_size` is not an
 *   integer ≥ 0, or `block_unit` is not `tokens` or `bytes`.
 */
export function metaFromArrowMetadata(file: string, metadata: ReadonlyMap<string, string>): TraceMeta {
  const get = (key: (typeof TRACE_META_KEYS)[number]): string => {
    const value = metadata.get(key);
    if (value === undefined) {
      throw new Error(`${file}: schema metadata key '${key}' is missing (required keys: ${TRACE_META_KEYS.join(', ')})`);
    }
    return value;
  };
  const blockSizeText = get('block_size');
  const blockSize = Number(blockSizeText);
  if (!/^\d+$/.test(blockSizeText) || !Number.isSafeInteger(blockSize)) {
    throw new Error(`${file}: schema metadata 'block_size' is '${blockSizeText}'; allowed: a decimal integer ≥ 0`);
  }
  const blockUnit = get('block_unit');
  if (blockUnit !== 'tokens' && blockUnit !== 'bytes') {
    throw new Error(`${file}: schema metadata 'block_unit' is '${blockUnit}'; allowed: 'tokens' or 'bytes'`);
  }
  return {
    source: get('source'),
    licence: get('licence'),
    citation: get('citation'),
    hardware: get('hardware'),
    engine: get('engine'),
    servedModel: get('served_model'),
    blockSize,
    blockUnit,
    sessionRule: get('session_rule'),
  };
}
