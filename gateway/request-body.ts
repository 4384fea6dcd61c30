/**
 * What the gateway reads from a client's request body, and the body it sends upstream. Kept lean
 * on purpose (the hot path): one `JSON.parse`, the shared field checks here (`model`, `stream`,
 * `stream_options`, `max_tokens`), then the endpoint family's own (`endpoints/`: messages and
 * their roles, sampling knobs, `prompt` / `input`) and its prompt-size estimate — no schema
 * validation of the whole body; the upstream judges the rest and its 4xx passes through.
 */
import type { EndpointFamilyName, Modality } from '../core/index.ts';
import type { AutoServing } from './auto/auto-request.ts';
import type { ClientWire } from './endpoints/client-wire.ts';
import type { EndpointFamily } from './endpoints/endpoint-family.ts';
import { endpointFamily, wireOf } from './endpoints/families.ts';
import type { SpooledUpload } from './multipart-spool.ts';

/**
 * The id of an endpoint family the gateway serves (`endpoints/families.ts`: `chat`,
 * `completion`, `embedding`, …), the same id the routing core compares with a route's `endpoints:`.
 */
export type Endpoint = EndpointFamilyName;


/** Largest `max_tokens` / `max_completion_tokens` accepted (2^31 − 1); more is a 400. */
export const MAX_OUTPUT_TOKENS = 2 ** 31 - 1;

/** A checked client request. */
export interface ClientRequest {
  readonly endpoint: Endpoint;
  /** The parsed body, unchanged. */
  readonly body: Record<string, unknown>;
  /** `model` as the client wrote it (id or alias). */
  readonly model: string;
  readonly stream: boolean;
  /** The client asked for a usage chunk (`stream_options.include_usage`). */
  readonly includeUsage: boolean;
  /** Estimated prompt tokens (see the module doc). */
  readonly inputTokens: number;
  /**
   * `max_completion_tokens` or `max_tokens`, when set (an integer 1 … `MAX_OUTPUT_TOKENS`; other
   * values are refused with a `BodyProblem` whose `param` names the field).
   */
  readonly outputTokensHint: number | null;
  /** Input modalities beyond text. */
  readonly modalities: Modality[];
  /**
   * The family's client wire (`EndpointFamily.wire`, else OpenAI's), resolved once here: every
   * error body, in-band error, relayed event and stream terminator of this request is written with it.
   */
  readonly wire: ClientWire;
  /** The request's endpoint family (`endpoints/families.ts`). */
  readonly family: EndpointFamily;
  /**
   * Set when an auto model chose `model` (`auto/auto-request.ts`): the public name the client
   * sees instead, the serving model's names to mask, and the decision for the log.
   */
  readonly auto?: AutoServing;
  /**
   * A `multipart/form-data` body, spooled to a file (`multipart-spool.ts`): `body` then holds
   * its text fields (and, for each file part, `{ filename, content_type, size_bytes }`), and each
   * attempt sends the file again. Absent: a JSON body.
   */
  readonly upload?: SpooledUpload;
  /**
   * A `GET /v1/videos/{id}` (`status`) or `/content` (`content`) of a job submitted through the
   * gateway (`endpoints/video-id.ts`): the upstream's own id, and the id the client knows.
   * Absent: a POST of the family.
   */
  readonly videoFetch?: { readonly op: 'status' | 'content'; readonly upstreamId: string; readonly publicId: string };
}

/** A request the gateway refuses before routing. */
export interface BodyProblem {
  readonly code: 'invalid_json' | 'invalid_request';
  readonly message: string;
  readonly param: string | null;
  /**
   * `model` as the client wrote it, when the body got far enough to have one (a non-empty
   * string) before the problem was found; absent otherwise. For the metrics' model label.
   */
  readonly model?: string;
}

/**
 * Parses and checks a body for `endpoint`: JSON object, `model`, `stream`, `stream_options`,
 * `max_tokens` / `max_completion_tokens` (null or an integer 1 … 2^31 − 1), then the family's
 * checks (`endpoints/families.ts`).
 * @returns the request, or the problem to answer with (400).
 * @throws Error when `endpoint` is not a registered family (the HTTP layer only mounts registered ones).
 */
export function readClientRequest(endpoint: Endpoint, text: string): ClientRequest | BodyProblem {
  let parsed: unknown;
  try {
    parsed = JSON.parse(text);
  } catch (e) {
    return { code: 'invalid_json', message: `We could not parse the JSON body of your request: ${(e as Error).message}`, param: null };
  }
  if (!isRecord(parsed)) return { code: 'invalid_json', message: 'The request body must be a JSON object.', param: null };
  if (nestsDeeperThan(parsed, MAX_BODY_DEPTH)) {
    return { code: 'invalid_request', message: `The request body nests arrays and objects more than ${MAX_BODY_DEPTH} levels deep; flatten it.`, param: null };
  }
  return checkedRequest(endpoint, parsed, {});
}

/**
 * Deepest nesting of arrays and objects accepted in a JSON body (the body itself is level 1).
 * The gateway's own walks (prompt-size estimates, translation, `JSON.stringify` of the body sent
 * upstream) recurse, and V8 overflows its stack a few thousand levels down; a real request —
 * tool schemas included — stays far below this.
 */
export const MAX_BODY_DEPTH = 128;

/**
 * True when `root` holds arrays or objects nested more than `limit` levels deep. Iterative, and
 * it visits containers only (a string or number costs one step), so it is cheap next to the
 * `JSON.parse` that produced `root`.
 */
function nestsDeeperThan(root: object, limit: number): boolean {
  const values: unknown[] = [root];
  const depths: number[] = [1];
  while (values.length > 0) {
    const v = values.pop() as object;
    const d = depths.pop()!;
    if (d > limit) return true;
    const children = Array.isArray(v) ? (v as unknown[]) : Object.values(v);
    for (const c of children) {
      if (c !== null && typeof c === 'object') {
        values.push(c);
        depths.push(d + 1);
      }
    }
  }
  return false;
}

/**
 * `readClientRequest` for a spooled `multipart/form-data` body: its text fields as the body
 * (`stream` as a boolean when it reads `true` or `false`; a name repeated, or ending in `[]`,
 * collects an array), each file part as `{ filename, content_type, size_bytes }`, then the same
 * checks.
 * @returns the request (holding `upload`), or the problem (400).
 */
export function readUploadRequest(endpoint: Endpoint, upload: SpooledUpload): ClientRequest | BodyProblem {
  const body: Record<string, unknown> = {};
  for (const p of upload.parts) {
    const name = p.name.endsWith('[]') ? p.name.slice(0, -2) : p.name;
    const v: unknown = p.filename !== null ? { filename: p.filename, content_type: p.contentType, size_bytes: p.end - p.start } : name === 'stream' && (p.value === 'true' || p.value === 'false') ? p.value === 'true' : p.value;
    const had = body[name];
    if (had === undefined) body[name] = p.name.endsWith('[]') ? [v] : v;
    else body[name] = Array.isArray(had) ? [...(had as unknown[]), v] : [had, v];
  }
  return checkedRequest(endpoint, body, { upload });
}

/** The shared and the family's checks of a parsed body, then the request. */
function checkedRequest(endpoint: Endpoint, body: Record<string, unknown>, extra: Pick<ClientRequest, 'upload' | 'videoFetch'>): ClientRequest | BodyProblem {
  if (typeof body.model !== 'string' || body.model.length === 0) {
    const m = body.model;
    if (m === undefined || m === null || m === '') return { code: 'invalid_request', message: 'You must provide a model parameter.', param: 'model' };
    const got = Array.isArray(m) ? 'an array' : typeof m === 'object' ? 'an object' : `a ${typeof m}`;
    return { code: 'invalid_request', message: `Invalid type for 'model': expected a string (a model id, see GET /v1/models), but got ${got} instead.`, param: 'model' };
  }
  const family = endpointFamily(endpoint);
  if (!family) throw new Error(`endpoint family '${endpoint}' is not registered (endpoints/families.ts)`);
  const problem = checkFields(family, body);
  if (problem) return { ...problem, model: body.model };
  const stream = family.streams && body.stream === true;
  const { inputTokens, modalities } = family.prompt(body);
  const so = body.stream_options;
  return {
    endpoint,
    body,
    model: body.model,
    stream,
    includeUsage: stream && isRecord(so) && so.include_usage === true,
    inputTokens,
    outputTokensHint: positiveInt(body.max_completion_tokens) ?? positiveInt(body.max_tokens),
    modalities,
    wire: wireOf(family),
    family,
    ...extra,
  };
}

/**
 * The request of a `GET /v1/videos/{id}` or `/content`: the model the job was submitted on
 * (`model`, what the status body echoes) and the upstream's id, on the `video` family.
 */
export function videoFetchRequest(model: string, fetch: NonNullable<ClientRequest['videoFetch']>): ClientRequest {
  const family = endpointFamily('video');
  if (!family) throw new Error(`endpoint family 'video' is not registered (endpoints/families.ts)`);
  return { endpoint: 'video', body: { model }, model, stream: false, includeUsage: false, inputTokens: 0, outputTokensHint: null, modalities: [], wire: wireOf(family), family, videoFetch: fetch };
}

/** The checks after `model`: `stream`, `stream_options`, the output limits, then the family's own. */
function checkFields(family: EndpointFamily, body: Record<string, unknown>): BodyProblem | null {
  if (body.stream !== undefined && body.stream !== null && typeof body.stream !== 'boolean') {
    return { code: 'invalid_request', message: `Invalid type for 'stream': expected a boolean.`, param: 'stream' };
  }
  if (body.stream_options !== undefined && body.stream_options !== null && !isRecord(body.stream_options)) {
    return { code: 'invalid_request', message: `Invalid type for 'stream_options': expected an object.`, param: 'stream_options' };
  }
  for (const field of ['max_tokens', 'max_completion_tokens'] as const) {
    const v = body[field];
    if (v === undefined || v === null) continue;
    if (typeof v !== 'number' || !Number.isInteger(v) || v < 1 || v > MAX_OUTPUT_TOKENS) {
      return {
        code: 'invalid_request',
        message: `Invalid '${field}': ${JSON.stringify(v) ?? String(v)}. Expected an integer from 1 to ${MAX_OUTPUT_TOKENS}.`,
        param: field,
      };
    }
  }
  return family.check(body);
}

/** True when `r` is a refusal rather than a request. */
export function isBodyProblem(r: ClientRequest | BodyProblem): r is BodyProblem {
  return 'code' in r;
}

/**
 * The JSON body for one upstream attempt: the client's body with `model` set to the route's
 * upstream model name and, for streams, `stream_options.include_usage: true` (the gateway always
 * wants usage; `sse-relay.ts` removes it again when the client did not ask).
 */
export function upstreamBody(req: ClientRequest, upstreamModel: string): string {
  const out: Record<string, unknown> = { ...req.body, model: upstreamModel };
  if (req.stream) out.stream_options = { ...(isRecord(req.body.stream_options) ? req.body.stream_options : {}), include_usage: true };
  return JSON.stringify(out);
}

function positiveInt(v: unknown): number | null {
  return typeof v === 'number' && Number.isFinite(v) && v > 0 ? Math.floor(v) : null;
}

function isRecord(v: unknown): v is Record<string, unknown> {
  return v !== null && typeof v === 'object' && !Array.isArray(v);
}
