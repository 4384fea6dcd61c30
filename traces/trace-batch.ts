/**
 * Conversion between `TraceRow` objects and Arrow record batches. Pure encoding and
 * decoding: no validation here (the writer and reader in `arrow-trace.ts` validate), so this
 * is also the low-level path tests use to produce deliberately bad files.
 */
import { Bool, DataType, Float32, Float64, Int32, List, RecordBatch, Struct, Utf8, makeData } from 'apache-arrow';
import type { Data, Schema, Vector } from 'apache-arrow';
import type { TraceRow } from './trace-row.ts';
import type { TraceColumn } from './trace-schema.ts';

/**
 * Encodes rows as one record batch of `schema` (as made by `traceSchema`, or a subset of its
 * fields in any order; the field types are taken as the trace types). Values are written
 * as given: a fractional or out-of-range token count is truncated/wrapped to Int32, a null in
 * a non-nullable column is written as a null. Validate first with `checkTraceRow` unless
 * writing a bad file is the point. Builds the column buffers directly (the Arrow builders
 * are several times slower on list columns).
 */
export function encodeTraceBatch(schema: Schema, rows: readonly TraceRow[]): RecordBatch {
  // Thunks, so that only the schema's columns are encoded (a schema may omit nullable ones).
  const encoders: Record<TraceColumn, (type: DataType) => Data> = {
    arrival_ms: () => numbers(new Float64(), rows.map((r) => r.arrivalMs)),
    request_id: () => strings(rows.map((r) => r.requestId)),
    session_id: () => strings(rows.map((r) => r.sessionId)),
    caller_id: () => strings(rows.map((r) => r.callerId)),
    model: () => strings(rows.map((r) => r.model)),
    input_tokens: () => numbers(new Int32(), rows.map((r) => r.inputTokens)),
    output_tokens: () => numbers(new Int32(), rows.map((r) => r.outputTokens)),
    hash_ids: (t) => lists(t as List, rows.map((r) => r.hashIds)),
    stream: () => bools(rows.map((r) => r.stream)),
    ttft_ms: () => numbers(new Float64(), rows.map((r) => r.ttftMs)),
    e2e_ms: () => numbers(new Float64(), rows.map((r) => r.e2eMs)),
    itl_ms: (t) => lists(t as List, rows.map((r) => r.itlMs)),
  };
  const children = schema.fields.map((f) => {
    const encode = (encoders as Record<string, ((type: DataType) => Data) | undefined>)[f.name];
    if (encode === undefined) throw new Error(`encodeTraceBatch: schema has unknown column '${f.name}'`);
    return encode(f.type);
  });
  const data = makeData({ type: new Struct(schema.fields), length: rows.length, nullCount: 0, children });
  return new RecordBatch(schema, data);
}

type Maybe<T> = T | null | undefined;

/** Validity bitmap (bit set = present) and null count; the bitmap is omitted when nothing is null. */
function validity(values: readonly unknown[]): { nullBitmap: Uint8Array | undefined; nullCount: number } {
  const bitmap = new Uint8Array(Math.ceil(values.length / 8));
  let nullCount = 0;
  values.forEach((v, i) => {
    if (v == null) nullCount++;
    else bitmap[i >> 3]! |= 1 << (i & 7);
  });
  return { nullBitmap: nullCount === 0 ? undefined : bitmap, nullCount };
}

function numbers(type: Float64 | Int32 | Float32, values: readonly Maybe<number>[]): Data {
  const Ctor = type.ArrayType as Float64ArrayConstructor | Int32ArrayConstructor | Float32ArrayConstructor;
  const data = new Ctor(values.length);
  values.forEach((v, i) => {
    if (v != null) data[i] = v;
  });
  return makeData({ type, length: values.length, ...validity(values), data } as never);
}

function bools(values: readonly Maybe<boolean>[]): Data {
  const data = new Uint8Array(Math.ceil(values.length / 8));
  values.forEach((v, i) => {
    if (v) data[i >> 3]! |= 1 << (i & 7);
  });
  return makeData({ type: new Bool(), length: values.length, ...validity(values), data });
}

const utf8 = new TextEncoder();

function strings(values: readonly Maybe<string>[]): Data {
  const bytes = values.map((v) => (v == null ? null : utf8.encode(v)));
  const valueOffsets = new Int32Array(values.length + 1);
  let total = 0;
  bytes.forEach((b, i) => {
    total += b?.length ?? 0;
    valueOffsets[i + 1] = total;
  });
  const data = new Uint8Array(total);
  bytes.forEach((b, i) => {
    if (b) data.set(b, valueOffsets[i]!);
  });
  return makeData({ type: new Utf8(), length: values.length, ...validity(values), valueOffsets, data });
}

function lists(type: List, values: readonly Maybe<readonly number[]>[]): Data {
  const valueOffsets = new Int32Array(values.length + 1);
  let total = 0;
  values.forEach((v, i) => {
    total += v?.length ?? 0;
    valueOffsets[i + 1] = total;
  });
  const flat: number[] = new Array(total);
  values.forEach((v, i) => {
    if (v) for (let k = 0; k < v.length; k++) flat[valueOffsets[i]! + k] = v[k]!;
  });
  const child = numbers(type.valueType as Int32 | Float32, flat);
  return makeData({ type, length: values.length, ...validity(values), valueOffsets, child });
}

/** The expected Arrow type of each column, as a predicate plus its name for error messages. */
const COLUMN_TYPES: Record<TraceColumn, { name: string; ok: (t: DataType) => boolean; nullable: boolean }> = {
  arrival_ms: { name: 'Float64', ok: isFloat64, nullable: false },
  request_id: { name: 'Utf8', ok: DataType.isUtf8, nullable: false },
  session_id: { name: 'Utf8', ok: DataType.isUtf8, nullable: true },
  caller_id: { name: 'Utf8', ok: DataType.isUtf8, nullable: true },
  model: { name: 'Utf8', ok: DataType.isUtf8, nullable: true },
  input_tokens: { name: 'Int32', ok: isInt32, nullable: false },
  output_tokens: { name: 'Int32', ok: isInt32, nullable: false },
  hash_ids: { name: 'List<Int32>', ok: (t) => DataType.isList(t) && isInt32((t as List).valueType), nullable: true },
  stream: { name: 'Bool', ok: DataType.isBool, nullable: false },
  ttft_ms: { name: 'Float64', ok: isFloat64, nullable: true },
  e2e_ms: { name: 'Float64', ok: isFloat64, nullable: true },
  itl_ms: { name: 'List<Float32>', ok: (t) => DataType.isList(t) && isFloat32((t as List).valueType), nullable: true },
};

function isFloat64(t: DataType): boolean {
  return DataType.isFloat(t) && (t as Float64).precision === new Float64().precision;
}
function isFloat32(t: DataType): boolean {
  return DataType.isFloat(t) && (t as Float32).precision === new Float32().precision;
}
function isInt32(t: DataType): boolean {
  return DataType.isInt(t) && (t as Int32).bitWidth === 32 && (t as Int32).isSigned;
}

/**
 * Checks that a file's schema has every non-nullable column with its type, and any nullable
 * column that is present with its type (absent nullable columns read as all-null; extra
 * columns are ignored).
 * @throws Error naming `file`, the column, the type found and the type allowed.
 */
export function checkTraceSchema(file: string, schema: Schema): void {
  for (const [column, spec] of Object.entries(COLUMN_TYPES)) {
    const f = schema.fields.find((x) => x.name === column);
    if (f === undefined) {
      if (spec.nullable) continue;
      throw new Error(`${file}: column ${column} is missing; allowed: a ${spec.name} column named '${column}'`);
    }
    if (!spec.ok(f.type)) {
      throw new Error(`${file}: column ${column} has type ${String(f.type)}; allowed: ${spec.name}`);
    }
  }
}

/**
 * Decodes one record batch into rows, without validating values. Nulls in non-nullable
 * columns come back as null (the row's static type notwithstanding) so the caller's check
 * can report them. Lists come back as plain arrays.
 */
export function decodeTraceBatch(batch: RecordBatch): TraceRow[] {
  const n = batch.numRows;
  const child = (name: TraceColumn): Vector | null => batch.getChild(name);
  const arrival = child('arrival_ms');
  const requestId = child('request_id');
  const sessionId = child('session_id');
  const callerId = child('caller_id');
  const model = child('model');
  const input = child('input_tokens');
  const output = child('output_tokens');
  const hashIds = child('hash_ids');
  const stream = child('stream');
  const ttft = child('ttft_ms');
  const e2e = child('e2e_ms');
  const itl = child('itl_ms');
  // Null-free primitive columns are read straight from their typed arrays (the hot path).
  const arrivalArr = dense(arrival);
  const inputArr = dense(input);
  const outputArr = dense(output);
  const hashAt = listReader(hashIds);
  const itlAt = listReader(itl);
  const rows: TraceRow[] = new Array(n);
  for (let i = 0; i < n; i++) {
    rows[i] = {
      arrivalMs: arrivalArr ? (arrivalArr[i] as number) : (arrival?.get(i) ?? null),
      requestId: requestId?.get(i) ?? null,
      sessionId: sessionId?.get(i) ?? null,
      callerId: callerId?.get(i) ?? null,
      model: model?.get(i) ?? null,
      inputTokens: inputArr ? (inputArr[i] as number) : (input?.get(i) ?? null),
      outputTokens: outputArr ? (outputArr[i] as number) : (output?.get(i) ?? null),
      hashIds: hashAt(i),
      stream: stream?.get(i) ?? null,
      ttftMs: ttft?.get(i) ?? null,
      e2eMs: e2e?.get(i) ?? null,
      itlMs: itlAt(i),
    };
  }
  return rows;
}

/** The column's values as one typed array when it has a single chunk and no nulls, else null. */
function dense(v: Vector | null): ArrayLike<number> | null {
  if (v === null || v.nullCount !== 0 || v.data.length !== 1) return null;
  return v.toArray() as ArrayLike<number>;
}

/**
 * A reader of list column `v`: row index → plain array or null. Reads the offsets and the
 * child's typed array directly when the column is one unsliced chunk (always so for batches
 * read from IPC); `Vector.get` on lists is an order of magnitude slower.
 */
function listReader(v: Vector | null): (i: number) => number[] | null {
  if (v === null) return () => null;
  const d = v.data[0];
  const child = d?.children[0];
  if (v.data.length !== 1 || d === undefined || child === undefined || d.offset !== 0 || child.offset !== 0) {
    return (i) => {
      const item = v.get(i) as Vector | null;
      return item == null ? null : Array.from(item.toArray() as ArrayLike<number>);
    };
  }
  const offsets = d.valueOffsets as Int32Array;
  const values = child.values as ArrayLike<number>;
  const noNulls = d.nullCount === 0;
  return (i) => {
    if (!noNulls && !d.getValid(i)) return null;
    const start = offsets[i]!;
    const out: number[] = new Array(offsets[i + 1]! - start);
    for (let k = 0; k < out.length; k++) out[k] = values[start + k]!;
    return out;
  };
}
