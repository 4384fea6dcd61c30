// The HTTP fuzzer's parts, shared by `bench/fuzz.ts` (millions of cases) and the CI slice
// (`fuzz.test.ts`): seeded fast-check arbitraries for whole raw HTTP/1.1 requests (method, path,
// headers, framing, body), a raw-socket client that sends one case on its own connection and
// splits what comes back into responses, and the check every case must pass.
//
// Bodies are mutations of a valid request of each endpoint family: a field set to a value of the
// wrong type, removed, or replaced by a giant string, a huge number, deep nesting, a lone
// surrogate escape or invalid UTF-8 bytes; keys duplicated; the text cut short; plain garbage.
// Headers: keys missing, wrong, repeated; oversize values; latin-1 bytes; odd routing headers.
// Framing: a correct Content-Length, a chunked body, or a broken one (Content-Length longer or
// shorter than the body, a chunked body cut short, two different Content-Lengths).
import { connect } from 'node:net';
import fc from 'fast-check';
import { ERROR_STATUS } from '../../core/index.ts';
import { statusOf } from '../../gateway/errors.ts';
import { KEYS } from './harness.ts';

/** One raw request. `framing` says whether the bytes form exactly one well-framed request. */
export interface FuzzCase {
  readonly method: string;
  readonly path: string;
  readonly headers: ReadonlyArray<readonly [string, string]>;
  readonly body: Uint8Array;
  /** `length`/`chunked`: well framed, so exactly one response is due; the others: broken framing. */
  readonly framing: 'length' | 'chunked' | 'length_short' | 'length_long' | 'chunked_cut' | 'two_lengths';
  /** What the body mutation was (for the report). */
  readonly mutation: string;
}

/** The inference paths fuzzed, with a valid body of each. */
export const FUZZ_ENDPOINTS: ReadonlyArray<{ path: string; body: Record<string, unknown>; anthropic: boolean }> = [
  { path: '/v1/chat/completions', body: { model: 'demo', messages: [{ role: 'user', content: 'hi' }], max_tokens: 2 }, anthropic: false },
  { path: '/v1/completions', body: { model: 'demo', prompt: 'hi', max_tokens: 2 }, anthropic: false },
  { path: '/v1/embeddings', body: { model: 'demo', input: 'hi' }, anthropic: false },
  { path: '/v1/responses', body: { model: 'demo', input: 'hi', max_output_tokens: 2 }, anthropic: false },
  { path: '/v1/rerank', body: { model: 'demo', query: 'q', documents: ['a', 'b'] }, anthropic: false },
  { path: '/v1/messages', body: { model: 'demo', max_tokens: 2, messages: [{ role: 'user', content: 'hi' }] }, anthropic: true },
  { path: '/v1/messages/count_tokens', body: { model: 'demo', messages: [{ role: 'user', content: 'hi' }] }, anthropic: true },
];

/** Paths outside the endpoint families: lookups, odd encodings, unknown URLs. */
const ODD_PATHS = [
  '/v1/models',
  '/v1/models/demo',
  '/v1/models/%zz',
  '/v1/responses/%E0%A4%A',
  '/v1/responses/%zz',
  '/v1/responses/resp_x',
  '/v1/videos/x',
  '/v1/videos/x/content',
  '/v1/videos/a/b/c',
  '/v1/chat/completions?x=%ff&y',
  '//v1/chat/completions',
  '/v1/../v1/chat/completions',
  '/health',
  '/metrics',
  '/routing',
  '/admin/routes',
  '/v1/assistants',
  '/nope',
  '/',
];

const ENC = new TextEncoder();

/** A JSON value of any type, including the extremes the parser must survive. */
function oddValue(): fc.Arbitrary<{ text: string; label: string }> {
  return fc.oneof(
    fc.jsonValue({ maxDepth: 3 }).map((v) => ({ text: JSON.stringify(v) ?? 'null', label: 'wrong_type' })),
    fc.constantFrom('1e999', '-1e999', '123456789012345678901234567890', '-0', '0.0000000000000000001', '1.5', '-1', '0', '2147483648').map((t) => ({ text: t, label: 'odd_number' })),
    fc.integer({ min: 1_000, max: 200_000 }).map((n) => ({ text: `"${'x'.repeat(n)}"`, label: 'giant_string' })),
    fc.integer({ min: 10, max: 20_000 }).map((n) => ({ text: '['.repeat(n) + ']'.repeat(n), label: 'deep_nesting' })),
    fc.integer({ min: 10, max: 5_000 }).map((n) => ({ text: '{"a":'.repeat(n) + '1' + '}'.repeat(n), label: 'deep_nesting' })),
    fc.constantFrom('"\\ud800"', '"\\udc00x"', '"a\\ud83d"', '"\\u0000"', '"\\uZZZZ"', '"\\x41"').map((t) => ({ text: t, label: 'escapes' })),
  );
}

/** A body for `base`: valid, mutated at the value level, or broken at the byte level. */
function bodyOf(base: Record<string, unknown>): fc.Arbitrary<{ bytes: Uint8Array; mutation: string }> {
  const text = JSON.stringify(base);
  const keys = Object.keys(base);
  const setField = fc.tuple(fc.constantFrom(...keys, 'messages.0.content', 'messages.0.role', 'stream', 'stream_options', 'max_tokens', 'n', 'tools', 'extra'), oddValue()).map(([key, v]) => {
    const parsed = JSON.parse(text) as Record<string, unknown>;
    const marker = '"__FUZZ__"';
    if (key.startsWith('messages.') && Array.isArray(parsed.messages)) {
      const field = key.split('.')[2]!;
      (parsed.messages[0] as Record<string, unknown>)[field] = '__FUZZ__';
    } else parsed[key] = '__FUZZ__';
    return { bytes: ENC.encode(JSON.stringify(parsed).replace(marker, v.text)), mutation: `set ${key}: ${v.label}` };
  });
  const streamOn = fc.constant(null).map(() => ({ bytes: ENC.encode(JSON.stringify({ ...base, stream: true })), mutation: 'stream' }));
  const drop = fc.constantFrom(...keys).map((key) => {
    const parsed = JSON.parse(text) as Record<string, unknown>;
    delete parsed[key];
    return { bytes: ENC.encode(JSON.stringify(parsed)), mutation: `drop ${key}` };
  });
  const dupKey = fc.constantFrom('"model":"nope",', '"model":1,', '"messages":null,', '"stream":true,').map((dup) => ({ bytes: ENC.encode(`{${dup}${text.slice(1)}`), mutation: 'duplicate_key' }));
  const truncated = fc.integer({ min: 0, max: text.length - 1 }).map((n) => ({ bytes: ENC.encode(text.slice(0, n)), mutation: 'truncated_json' }));
  const badUtf8 = fc.tuple(fc.constantFrom([0xff], [0xc0, 0x80], [0xed, 0xa0, 0x80], [0xe2, 0x82], [0xf4, 0x90, 0x80, 0x80]), fc.integer({ min: 0, max: text.length })).map(([bad, at]) => {
    const i = text.indexOf('"hi"') >= 0 ? text.indexOf('"hi"') + 1 : Math.min(at, text.length);
    const head = ENC.encode(text.slice(0, i));
    const tail = ENC.encode(text.slice(i));
    return { bytes: new Uint8Array([...head, ...bad, ...tail]), mutation: 'invalid_utf8' };
  });
  const nonObject = fc.constantFrom('[]', '"x"', '1', 'null', 'true', '', ' ', '{}', '{"model":"demo"}', '{"model":""}', '{"model":"demo-alias","messages":[]}').map((t) => ({ bytes: ENC.encode(t), mutation: 'non_object' }));
  const garbage = fc.uint8Array({ maxLength: 512 }).map((b) => ({ bytes: b, mutation: 'garbage' }));
  return fc.oneof(
    { weight: 2, arbitrary: fc.constant({ bytes: ENC.encode(text), mutation: 'valid' }) },
    { weight: 1, arbitrary: streamOn },
    { weight: 6, arbitrary: setField },
    { weight: 1, arbitrary: drop },
    { weight: 1, arbitrary: dupKey },
    { weight: 2, arbitrary: truncated },
    { weight: 1, arbitrary: badUtf8 },
    { weight: 1, arbitrary: nonObject },
    { weight: 1, arbitrary: garbage },
  );
}

/** Header sets: the key (right, wrong, missing, in Anthropic's header), content type, and extras. */
function headersOf(): fc.Arbitrary<Array<[string, string]>> {
  const auth = fc.constantFrom<Array<[string, string]>>(
    [['authorization', `Bearer ${KEYS.user}`]],
    [['authorization', `Bearer ${KEYS.user}`]],
    [['authorization', `Bearer ${KEYS.admin}`]],
    [['authorization', 'Bearer sk-wrong']],
    [['authorization', 'Bearer ']],
    [['authorization', 'Basic Zm9vOmJhcg==']],
    [],
    [['x-api-key', KEYS.user]],
    [['x-api-key', 'nope']],
    [['authorization', `Bearer ${KEYS.user}`], ['authorization', 'Bearer sk-wrong']],
  );
  const type = fc.constantFrom<Array<[string, string]>>([['content-type', 'application/json']], [['content-type', 'application/json']], [], [['content-type', 'text/plain']], [['content-type', 'multipart/form-data']], [['content-type', 'multipart/form-data; boundary=zz']], [['content-type', 'application/json; charset=latin1']]);
  const latin1 = String.fromCharCode(0xe9, 0xff, 0x80, 0xa0);
  const extra = fc.constantFrom<Array<[string, string]>>(
    [['x-request-id', 'fuzz-1']],
    [['x-request-id', 'x'.repeat(300)]],
    [['x-request-id', `id${latin1}`]],
    [['x-route-pin', 'nope']],
    [['x-route-pin', '']],
    [['x-session-id', 's'.repeat(4_000)]],
    [['x-switchyard-routing-tags', ', ,,A,b ,'.repeat(50)]],
    [['x-switchyard-budget-alpha', 'NaN']],
    [['x-switchyard-budget-alpha', '-1']],
    [['traceparent', '00-zz-yy-01']],
    [['cookie', `a=b; ${latin1}=; ;;=x`]],
    [['x-big', 'b'.repeat(7_000)]],
    [['x-huge', 'h'.repeat(70_000)]],
    Array.from({ length: 60 }, (_, i): [string, string] => [`x-f${i}`, '1']),
    Array.from({ length: 150 }, (): [string, string] => ['x-same', '1']),
    [['x-odd', latin1]],
    [['x-empty', '']],
    [['accept-encoding', 'gzip, br, zstd']],
    [['expect', '100-continue']],
    [['transfer-encoding', 'gzip']],
  );
  // Every family gets both key spellings: the Anthropic ones accept x-api-key, the others must refuse it.
  return fc.tuple(auth, type, fc.array(extra, { maxLength: 2 })).map(([a, t, e]) => [...a, ...t, ...e.flat()]);
}

/** Arbitrary whole requests: mostly POSTs to the endpoint families, some odd methods and paths. */
export function fuzzCaseArb(): fc.Arbitrary<FuzzCase> {
  const inference = fc.constantFrom(...FUZZ_ENDPOINTS).chain((ep) =>
    fc.record({
      method: fc.constantFrom('POST', 'POST', 'POST', 'POST', 'POST', 'POST', 'GET', 'PUT', 'OPTIONS'),
      path: fc.constant(ep.path),
      headers: headersOf(),
      body: bodyOf(ep.body),
      framing: fc.constantFrom<FuzzCase['framing']>('length', 'length', 'length', 'length', 'length', 'length', 'chunked', 'length_short', 'length_long', 'chunked_cut', 'two_lengths'),
    }),
  );
  const odd = fc.record({
    method: fc.constantFrom('GET', 'POST', 'DELETE', 'PATCH', 'HEAD', 'OPTIONS', 'FOO'),
    path: fc.oneof(fc.constantFrom(...ODD_PATHS), fc.integer({ min: 1, max: 12_000 }).map((n) => `/${'p'.repeat(n)}`)),
    headers: headersOf(),
    body: fc.oneof(fc.constant({ bytes: new Uint8Array(0), mutation: 'empty' }), bodyOf(FUZZ_ENDPOINTS[0]!.body)),
    framing: fc.constantFrom<FuzzCase['framing']>('length', 'length', 'chunked', 'length_short'),
  });
  return fc.oneof({ weight: 9, arbitrary: inference }, { weight: 1, arbitrary: odd }).map((c) => ({ ...c, body: c.body.bytes, mutation: c.body.mutation }));
}

/** The request's bytes on the wire (always `connection: close`, so the server ends the exchange). */
export function encodeCase(c: FuzzCase): Buffer {
  const head: string[] = [`${c.method} ${c.path} HTTP/1.1`, 'host: 127.0.0.1', 'connection: close'];
  for (const [k, v] of c.headers) head.push(`${k}: ${v}`);
  const body = Buffer.from(c.body);
  let payload: Buffer;
  switch (c.framing) {
    case 'length':
      head.push(`content-length: ${body.length}`);
      payload = body;
      break;
    case 'length_short':
      // Declares more than is sent: the body is cut short and the client half-closes.
      head.push(`content-length: ${body.length + 10}`);
      payload = body;
      break;
    case 'length_long':
      // Declares less than is sent: the rest reaches the server as the start of another request.
      head.push(`content-length: ${Math.max(0, body.length - 3)}`);
      payload = body;
      break;
    case 'two_lengths':
      head.push(`content-length: ${body.length}`, `content-length: ${body.length + 1}`);
      payload = body;
      break;
    case 'chunked':
    case 'chunked_cut': {
      head.push('transfer-encoding: chunked');
      const half = body.length >> 1;
      const parts = [body.subarray(0, half), body.subarray(half)].filter((p) => p.length > 0);
      const chunks = parts.map((p) => Buffer.concat([Buffer.from(`${p.length.toString(16)}\r\n`), p, Buffer.from('\r\n')]));
      payload = c.framing === 'chunked' ? Buffer.concat([...chunks, Buffer.from('0\r\n\r\n')]) : Buffer.concat(chunks.slice(0, 1));
      break;
    }
  }
  return Buffer.concat([Buffer.from(`${head.join('\r\n')}\r\n\r\n`, 'latin1'), payload]);
}

/** One parsed response. */
export interface RawResponse {
  status: number;
  headers: Record<string, string>;
  body: Buffer;
}

/**
 * Splits `buf` (everything a connection received) into responses (Content-Length and chunked
 * bodies; a body without either runs to the end). `rest` holds bytes that are not a whole
 * response, which a well-behaved server never leaves.
 */
export function splitResponses(buf: Buffer, headRequest = false): { responses: RawResponse[]; rest: Buffer } {
  const responses: RawResponse[] = [];
  let at = 0;
  while (at < buf.length) {
    const end = buf.indexOf('\r\n\r\n', at);
    if (end < 0) break;
    const lines = buf.subarray(at, end).toString('latin1').split('\r\n');
    const m = /^HTTP\/1\.[01] (\d{3})/.exec(lines[0]!);
    if (!m) break;
    if (m[1]!.startsWith('1')) {
      // An interim response (`100 Continue` to `Expect: 100-continue`): the final one follows.
      at = end + 4;
      continue;
    }
    const headers: Record<string, string> = {};
    for (const l of lines.slice(1)) {
      const i = l.indexOf(':');
      if (i > 0) headers[l.slice(0, i).toLowerCase()] = l.slice(i + 1).trim();
    }
    let p = end + 4;
    let body: Buffer;
    if (headRequest) body = Buffer.alloc(0);
    else if (headers['transfer-encoding']?.includes('chunked')) {
      const parts: Buffer[] = [];
      for (;;) {
        const lineEnd = buf.indexOf('\r\n', p);
        if (lineEnd < 0) return { responses, rest: buf.subarray(at) };
        const size = parseInt(buf.subarray(p, lineEnd).toString('latin1'), 16);
        if (!Number.isFinite(size)) return { responses, rest: buf.subarray(at) };
        p = lineEnd + 2;
        if (size === 0) {
          p += 2;
          break;
        }
        if (p + size + 2 > buf.length) return { responses, rest: buf.subarray(at) };
        parts.push(buf.subarray(p, p + size));
        p += size + 2;
      }
      body = Buffer.concat(parts);
    } else if (headers['content-length'] !== undefined) {
      const n = Number(headers['content-length']);
      if (p + n > buf.length) break;
      body = buf.subarray(p, p + n);
      p += n;
    } else {
      body = buf.subarray(p);
      p = buf.length;
    }
    responses.push({ status: Number(m[1]), headers, body });
    at = p;
  }
  return { responses, rest: buf.subarray(at) };
}

/**
 * Sends `bytes` on a new connection to `port` and collects everything until the server closes
 * it (or `timeoutMs` passes: `timedOut`). A reset by the server counts as a close.
 */
export function sendRaw(port: number, bytes: Buffer, halfClose: boolean, timeoutMs: number): Promise<{ data: Buffer; timedOut: boolean }> {
  return new Promise((resolve) => {
    const parts: Buffer[] = [];
    const sock = connect(port, '127.0.0.1');
    let done = false;
    const finish = (timedOut: boolean): void => {
      if (done) return;
      done = true;
      clearTimeout(timer);
      sock.destroy();
      resolve({ data: Buffer.concat(parts), timedOut });
    };
    const timer = setTimeout(() => finish(true), timeoutMs);
    sock.on('data', (d: Buffer) => parts.push(d));
    sock.on('error', () => finish(false));
    sock.on('close', () => finish(false));
    sock.on('connect', () => {
      sock.write(bytes, () => {
        if (halfClose) sock.end();
      });
    });
  });
}

/** Every status a client may get: 200, the gateway's catalogue, and uWS's own protocol refusals. */
export const DOCUMENTED_STATUSES: ReadonlySet<number> = new Set([200, ...Object.values(ERROR_STATUS), ...['invalid_api_key', 'admin_required', 'invalid_json', 'body_too_large', 'overloaded', 'not_found', 'endpoint_not_supported', 'internal_error'].map((c) => statusOf(c)), 400, 431, 505]);

/** Methods uWS serves; it closes the connection on any other. */
const HTTP_METHODS = new Set(['GET', 'POST', 'PUT', 'DELETE', 'PATCH', 'HEAD', 'OPTIONS']);

/**
 * Requests the HTTP layer (uWS) refuses by closing the connection without a response, before
 * the gateway sees them: more than 48 header lines, more than ~100 KiB of headers, an unknown
 * method, a `Transfer-Encoding` other than `chunked` (request smuggling).
 */
export function refusedByHttpLayer(c: FuzzCase): boolean {
  const headerBytes = c.headers.reduce((n, [k, v]) => n + k.length + v.length + 4, 0);
  const te = c.headers.some(([k]) => k === 'transfer-encoding');
  return c.headers.length + 3 > 48 || headerBytes > 100 * 1024 || !HTTP_METHODS.has(c.method) || te;
}

/** What a case came to: `null` when it passed, else why it failed. */
export function checkCase(c: FuzzCase, got: { data: Buffer; timedOut: boolean }): string | null {
  const wellFramed = c.framing === 'length' || c.framing === 'chunked';
  const { responses, rest } = splitResponses(got.data, false);
  // uWS neither answers nor closes a request it refuses: its idle timeout (10–12 s) ends it.
  if (wellFramed && responses.length === 0 && refusedByHttpLayer(c)) return null;
  if (wellFramed && got.timedOut) return 'no end: the connection was still open at the timeout';
  if (wellFramed && responses.length !== 1) return `${responses.length} responses to one request`;
  if (rest.length > 0 && !got.timedOut) return `bytes after the last whole response: ${JSON.stringify(rest.subarray(0, 80).toString('latin1'))}`;
  for (const r of responses) {
    if (!DOCUMENTED_STATUSES.has(r.status)) return `status ${r.status} outside the documented set`;
    if (r.status === 500) return `status 500 (${r.body.subarray(0, 200).toString()})`;
    if (c.method === 'HEAD' && r.body.length > 0) return `a body of ${r.body.length} bytes in the response to HEAD`;
    if (r.status < 400 || c.method === 'HEAD') continue;
    // uWS's own refusals of a malformed request line or headers carry no body.
    if (r.body.length === 0 && !(r.headers['content-type'] ?? '').includes('json')) {
      if (r.status === 400 || r.status === 431 || r.status === 505) continue;
      return `status ${r.status} with an empty body`;
    }
    let parsed: unknown;
    try {
      parsed = JSON.parse(r.body.toString('utf8'));
    } catch {
      return `status ${r.status} with a body that is not JSON: ${JSON.stringify(r.body.subarray(0, 120).toString())}`;
    }
    const e = (parsed as { error?: { message?: unknown; code?: unknown; type?: unknown } }).error;
    const anthropic = (parsed as { type?: unknown }).type === 'error';
    if (!e || typeof e.message !== 'string' || e.message.length === 0) return `status ${r.status} without error.message`;
    if (anthropic ? typeof e.type !== 'string' : typeof e.code !== 'string') return `status ${r.status} without a stable error ${anthropic ? 'type' : 'code'}: ${r.body.subarray(0, 200).toString()}`;
  }
  return null;
}

/** A failing case, as it is saved (bytes in base64) so that it can be replayed as a regression. */
export function describeCase(c: FuzzCase, why: string): Record<string, unknown> {
  return { why, method: c.method, path: c.path.length > 200 ? `${c.path.slice(0, 200)}…(${c.path.length})` : c.path, framing: c.framing, mutation: c.mutation, headers: c.headers.map(([k, v]) => [k, v.length > 200 ? `${v.slice(0, 200)}…(${v.length})` : v]), request_base64: encodeCase(c).toString('base64') };
}

/** Runs `cases` against `port`, `concurrency` at a time; the failures, in case order. */
export async function runCases(port: number, cases: readonly FuzzCase[], concurrency: number, timeoutMs = 15_000, brokenWaitMs = 300): Promise<Array<{ index: number; case: FuzzCase; why: string }>> {
  const failures: Array<{ index: number; case: FuzzCase; why: string }> = [];
  let next = 0;
  await Promise.all(
    Array.from({ length: concurrency }, async () => {
      while (next < cases.length) {
        const index = next++;
        const c = cases[index]!;
        const halfClose = c.framing === 'length_short' || c.framing === 'chunked_cut';
        // A broken frame leaves the server waiting for bytes that never come, and uWS holds a
        // request it refuses (too many header lines, an unknown method) without an answer: its
        // idle timeout, not the fuzzer, ends those connections, so they get a short wait.
        const shortWait = !(c.framing === 'length' || c.framing === 'chunked') || refusedByHttpLayer(c);
        const got = await sendRaw(port, encodeCase(c), halfClose, shortWait ? brokenWaitMs : timeoutMs);
        const why = checkCase(c, got);
        if (why !== null) failures.push({ index, case: c, why });
      }
    }),
  );
  return failures.sort((a, b) => a.index - b.index);
}

/** `count` cases drawn from seed `seed` (the same seed and count give the same cases). */
export function sampleCases(seed: number, count: number): FuzzCase[] {
  return fc.sample(fuzzCaseArb(), { seed, numRuns: count });
}
