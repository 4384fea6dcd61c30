/**
 * The engine emulator: an OpenAI-compatible HTTP server (uWebSockets.js) that answers like a
 * vLLM replica would, in wall-clock time, by running the simulator's engine model
 * (`VllmReplica` with a fitted step-time profile: continuous batching, chunked prefill, prefix
 * cache) on timers and streaming one SSE chunk per produced token. An `echo` mode answers at once
 * with a fixed tiny reply and no model, to measure gateway overhead. Fault knobs (`faults.ts`)
 * make it misbehave on purpose. It records every request it received and when its client went
 * away (`request-log.ts`), so tests can assert what the gateway did upstream.
 *
 * Endpoints: POST /v1/chat/completions, /v1/completions, /v1/embeddings, /v1/responses (OpenAI's
 * API; the Responses API's object and named events, `responses-shapes.ts`);
 * POST /v1/rerank, /v1/images/generations, /v1/images/edits, /v1/audio/transcriptions,
 * /v1/audio/translations, /v1/audio/speech, /v1/videos and GET /v1/videos/{id}[/content]
 * (small deterministic answers, `family-shapes.ts`; multipart bodies are read into fields);
 * POST /v1/messages, /v1/messages/count_tokens (Anthropic's Messages API, its auth, errors and
 * event stream); POST /tokenize (vLLM's and SGLang's tokenizer, no key, no faults); GET /v1/models;
 * GET /emulator/records; GET and PUT /emulator/faults (JSON, merged over the current knobs);
 * with `usage` set, GET /v1/usage (a hosted API's quota report, for quota fetchers: one record
 * `{provider, usage_label, unit: "requests", used, limit, window_sec, resets_at: null}` whose
 * `used` counts the chat, completion, embedding and message requests this emulator served (past
 * the key and fault checks) on top of what PUT /emulator/usage `{"used": n}` last set it to, e.g. to stand for other clients).
 * Chat, completions and messages share one generation path (engine timing, every fault); only
 * the bytes differ, written by the dialect's `OutputWriter` (`openai-shapes.ts`,
 * `anthropic-shapes.ts`).
 *
 * Prompt size: 4 bytes of prompt text per token (the gateway's estimate); the prompt text is the
 * messages' JSON (chat), the prompt's (completions), or that of `{system, messages, tools}`
 * (Anthropic). Prefix caching works on that text: it is cut into blocks of `HASH_BLOCK_TOKENS`
 * tokens and each block gets a hash chained over its predecessors, so requests that share a
 * prefix share blocks. Output length: `max_tokens` (or `max_completion_tokens`), else
 * `defaultOutputTokens`; either must be an integer ≥ 1 when given (else a 400 naming it, as
 * OpenAI's API answers); Anthropic's `max_tokens` is required.
 * Backpressure: token chunks are tiny and paced by the model, so writes rely on uWS's buffering.
 */
import uWS from '@trufflesuite/uws-js-unofficial';
import type { HttpRequest, HttpResponse, TemplatedApp } from '@trufflesuite/uws-js-unofficial';
import { deriveRng, type Rng } from '../../core/index.ts';
import { ReplicasSchema, replicaFactory, resolveReplicas, type ReplicasConfig } from '../engine/replica-config.ts';
import { FaultKnobsSchema, NO_FAULTS, planFaults, type FaultKnobs, type FaultPlan } from './faults.ts';
import { ANTHROPIC_ERRORS, anthropicWriter } from './anthropic-shapes.ts';
import { embedding, errorBody, OPENAI_ERRORS, openAiWriter, tokenText, type ChunkHead, type EmulatedEndpoint } from './openai-shapes.ts';
import type { ErrorShapes, Failure, OutputWriter, StopKind, TokenCounts } from './output-writer.ts';
import { RequestLog, type RecordOutcome, type RequestRecord } from './request-log.ts';
import { responsesToolToCall, responsesWriter } from './responses-shapes.ts';
import { WallClockEngine, type EngineListener } from './wall-clock-engine.ts';
import { imagesBody, multipartFields, rerankBody, SPEECH_BYTES, transcriptAnswer, transcriptStream, VIDEO_BYTES, VideoJobs } from './family-shapes.ts';

/** Tokens per prefix-cache hash block of the emulator (a multiple of vLLM's 16-token KV block). */
export const HASH_BLOCK_TOKENS = 16;
/** Prompt bytes per token (the gateway's estimate; seed 000 "prefill load"). */
const BYTES_PER_TOKEN = 4;
const DEFAULT_PROFILE = 'llama2-70b-h100-tp4';

/** Options of `startEmulator`. */
export interface EmulatorOptions {
  /** Listen address; default 127.0.0.1. */
  host?: string;
  /** Port; 0 (default) picks a free one — read it from the result. */
  port?: number;
  /** `engine` (default): the modelled replica; `echo`: a fixed tiny answer at once. */
  mode?: 'engine' | 'echo';
  /** Legacy linear step-time profile under simulator/engine/profiles/ (default llama2-70b-h100-tp4). */
  engineProfile?: string;
  /**
   * The replica, as an experiment's `replicas:` block without `count` (validated by
   * `ReplicasSchema`): engine limits such as `max_num_seqs` / `kv_blocks`, or a whole engine
   * description where the simulator has one. Without `profile` or `model`, `engineProfile` is used.
   */
  engine?: Record<string, unknown>;
  /** Initial fault knobs (validated; unknown keys throw). */
  faults?: Partial<FaultKnobs>;
  /**
   * When set, requests must carry `Authorization: Bearer <apiKey>` (else 401), like a hosted API;
   * Anthropic's routes also take `x-api-key: <apiKey>`. `/tokenize` needs no key.
   */
  apiKey?: string | null;
  /**
   * Keys this upstream rate-limits: a request sent with one of them (`Authorization: Bearer` or
   * `x-api-key`) is answered 429 with `Retry-After: retry_after_sec` at once, like a hosted API
   * whose quota for that key is spent (a 429 storm on one key of a pool). Changeable while it
   * runs (`setRateLimitedKeys`).
   */
  rateLimitedKeys?: readonly string[];
  /** Output tokens when the request sets no max_tokens. Default 64. */
  defaultOutputTokens?: number;
  /** Upper bound on output tokens. Default 4096. */
  maxOutputTokens?: number;
  /** The reply of echo mode. Default `ok`. */
  echoText?: string;
  /** Seed of the fault draws. Default 1. */
  seed?: number;
  /** Model name in responses; default: the request's `model`. */
  modelName?: string | null;
  /** Records kept. Default 10,000. */
  recordCapacity?: number;
  /** Status polls after which an emulated video job reads `completed` (0: completed at submit). Default 1. */
  videoPolls?: number;
  /** The quota report of GET /v1/usage (see the module comment); absent ⇒ that path is 404. */
  usage?: EmulatorUsageOptions;
}

/** The emulator's one usage record: a request allowance under `provider` / `usageLabel`. */
export interface EmulatorUsageOptions {
  provider: string;
  usageLabel: string;
  /** Requests allowed in the window (> 0). */
  limit: number;
  /** The window the provider states, seconds; null (default) when it states none. */
  windowSec?: number | null;
}

/** A running emulator. */
export interface RunningEmulator {
  readonly host: string;
  readonly port: number;
  /** `http://host:port/v1`, the base_url a route points at. */
  readonly baseUrl: string;
  readonly mode: 'engine' | 'echo';
  /** Every request received (bounded), with waiters for tests. */
  readonly log: RequestLog;
  faults(): FaultKnobs;
  /** Merges `patch` over the current knobs. @throws Error naming a bad knob. */
  setFaults(patch: Partial<FaultKnobs>): FaultKnobs;
  /** Replaces the keys answered with 429 (`EmulatorOptions.rateLimitedKeys`). */
  setRateLimitedKeys(keys: readonly string[]): void;
  /** Requests inside the engine now (engine mode; 0 in echo mode). */
  inEngine(): number;
  /** The usage GET /v1/usage reports now, or null without `usage`. */
  usage(): { used: number; limit: number } | null;
  /** Sets the used count (as PUT /emulator/usage does). @throws RangeError unless an integer ≥ 0. */
  setUsageUsed(used: number): void;
  /** Stops listening and drops every open connection. */
  close(): Promise<void>;
}

/** What a request that is served (not failed at once) meets: first-token stall and mid-stream faults. */
type ServePlan = Extract<FaultPlan, { kind: 'serve' }>;

/** The plan of a route that takes no faults. */
const SPARED: ServePlan = { kind: 'serve', firstTokenStallMs: 0, midstream: null };

/** How one path is served: its error dialect, its key check, whether faults apply, and the handler. */
interface Route {
  readonly errors: ErrorShapes;
  /** `bearer`: `Authorization: Bearer <key>`; `anthropic`: that or `x-api-key: <key>`; `none`: no check. */
  readonly auth: 'bearer' | 'anthropic' | 'none';
  readonly faults: boolean;
  readonly serve: (x: Exchange, body: Record<string, unknown>, plan: ServePlan) => void;
}

/** One generation request, parsed by its dialect for the shared path. */
interface Generation {
  /** The text whose size is the prompt's and whose blocks are hashed for the prefix cache. */
  promptText: string;
  /** The output limit the request set, or null. */
  asked: number | null;
  stream: boolean;
  /** Whether the answer is a forced tool call (its pieces are the arguments' JSON). */
  tool: boolean;
  /** Whether echo mode reports its one token whatever the limit says. */
  echoOneToken: boolean;
  writer: OutputWriter;
}

/** Request headers kept in the log (Anthropic's key and version headers, the W3C trace context). */
const LOGGED_HEADERS = ['x-api-key', 'anthropic-version', 'anthropic-beta', 'traceparent', 'tracestate'] as const;

/** The `max_model_len` `/tokenize` reports when the replica sets none (echo mode, legacy profiles). */
const DEFAULT_MODEL_LEN = 32_768;

/** First stand-in token id of `/tokenize` (clear of the special tokens at the bottom of a vocabulary). */
const STAND_IN_TOKEN_BASE = 1_000;

interface Exchange {
  readonly res: HttpResponse;
  record: RequestRecord | null;
  /** True once the response is finished, closed or aborted: nothing more may touch `res`. */
  gone: boolean;
  cleanup: (() => void) | null;
}

/**
 * Starts an emulator and resolves once it listens.
 * @throws Error when the port cannot be bound, the profile is missing, or a knob is invalid.
 */
export async function startEmulator(opts: EmulatorOptions = {}): Promise<RunningEmulator> {
  const host = opts.host ?? '127.0.0.1';
  const mode = opts.mode ?? 'engine';
  let knobs: FaultKnobs = parseKnobs({ ...NO_FAULTS, ...opts.faults });
  let limitedKeys = new Set<string>(opts.rateLimitedKeys ?? []);
  const rng: Rng = deriveRng(opts.seed ?? 1, 'emulator/faults');
  const log = new RequestLog(opts.recordCapacity);
  const defaultOut = opts.defaultOutputTokens ?? 64;
  const maxOut = opts.maxOutputTokens ?? 4096;
  const echoText = opts.echoText ?? 'ok';
  const replica: Record<string, unknown> = { count: 1, ...opts.engine };
  if (replica.profile === undefined && replica.model === undefined) replica.profile = opts.engineProfile ?? DEFAULT_PROFILE;
  const replicas = ReplicasSchema.parse(replica);
  const engine = mode === 'engine' ? new WallClockEngine(replicaFactory(replicas, HASH_BLOCK_TOKENS)(0), knobs.latency_scale) : null;
  const maxModelLen = engine ? modelWindow(replicas) : DEFAULT_MODEL_LEN;
  const open = new Set<Exchange>();
  let seq = 0;
  let usageUsed = 0;
  if (opts.usage && !(opts.usage.limit > 0)) throw new RangeError(`emulator: usage.limit must be > 0 requests, got ${opts.usage.limit}`);
  const setUsageUsed = (used: number): void => {
    if (!(Number.isInteger(used) && used >= 0)) throw new RangeError(`emulator: usage used must be an integer ≥ 0, got ${used}`);
    usageUsed = used;
  };

  const app: TemplatedApp = uWS.App();

  const finish = (x: Exchange, outcome: RecordOutcome): void => {
    if (x.record) log.end(x.record, outcome, performance.now());
    x.gone = true;
    x.cleanup?.();
    open.delete(x);
  };

  const respond = (x: Exchange, status: number, body: string | Buffer, headers: Array<[string, string]> = [], contentType = 'application/json'): void => {
    if (x.gone) return;
    if (x.record) x.record.status = status;
    x.res.cork(() => {
      x.res.writeStatus(statusLine(status)).writeHeader('content-type', contentType);
      for (const [k, v] of headers) x.res.writeHeader(k, v);
      x.res.end(body);
    });
  };

  /** Sends a whole response and ends the record. */
  const reply = (x: Exchange, status: number, body: string, outcome: RecordOutcome, headers: Array<[string, string]> = []): void => {
    respond(x, status, body, headers);
    finish(x, outcome);
  };

  /** Closes the connection without (more) response bytes. */
  const drop = (x: Exchange, outcome: RecordOutcome): void => {
    if (x.gone) return;
    finish(x, outcome);
    x.res.close();
  };

  /**
   * A route's handler: reads the body, logs it, checks the key and draws the faults the route
   * takes, then hands the request to `serve`. Errors before `serve` are in the route's dialect.
   */
  const handle = (route: Route) => (res: HttpResponse, req: HttpRequest) => {
    const x: Exchange = { res, record: null, gone: false, cleanup: null };
    open.add(x);
    // uWS's request is only valid in this call: read every header the request needs now.
    const authorization = req.getHeader('authorization');
    const xApiKey = req.getHeader('x-api-key');
    const headers: Record<string, string> = {};
    for (const name of LOGGED_HEADERS) {
      const v = req.getHeader(name);
      if (v) headers[name] = v;
    }
    const requestId = req.getHeader('x-request-id') || null;
    const path = req.getUrl();
    const contentType = req.getHeader('content-type');
    res.onAborted(() => {
      if (x.gone) return;
      finish(x, 'client_gone');
    });
    readBody(res, (raw) => {
      let body: unknown = null;
      if (/^multipart\/form-data/i.test(contentType)) body = multipartFields(raw, contentType);
      else {
        try {
          body = JSON.parse(raw.toString('utf8'));
        } catch {
          body = null;
        }
      }
      const obj = isObject(body) ? body : null;
      const fields = { requestId, path, receivedAtMs: performance.now(), body, authorization, stream: obj?.stream === true };
      x.record = log.open(Object.keys(headers).length > 0 ? { ...fields, headers } : fields);
      if (!obj) return reply(x, 400, route.errors.badRequest('body is not a JSON object'), 'bad_request');
      if (!authorized(route.auth, authorization, xApiKey)) return reply(x, 401, route.errors.unauthorized(), 'unauthorized');
      if (!route.faults) return route.serve(x, obj, SPARED);
      if (limitedKeys.size > 0 && (limitedKeys.has(authorization.replace(/^Bearer /, '')) || limitedKeys.has(xApiKey))) {
        return reply(x, 429, route.errors.rateLimited(), 'rate_limited', [['retry-after', String(knobs.retry_after_sec)]]);
      }
      const plan = planFaults(knobs, rng);
      if (plan.kind === 'reset') return drop(x, 'reset');
      if (plan.kind === 'error') return reply(x, plan.status, route.errors.fault(plan.status), 'error');
      if (plan.kind === 'rate_limited') return reply(x, 429, route.errors.rateLimited(), 'rate_limited', [['retry-after', String(plan.retryAfterSec)]]);
      usageUsed++;
      route.serve(x, obj, plan);
    });
  };

  /** Whether the caller sent the key: `Authorization: Bearer` everywhere, or `x-api-key` on Anthropic's routes. */
  const authorized = (auth: Route['auth'], authorization: string, xApiKey: string): boolean => {
    if (!opts.apiKey || auth === 'none') return true;
    return authorization === `Bearer ${opts.apiKey}` || (auth === 'anthropic' && xApiKey === opts.apiKey);
  };

  const serveEmbedding = (x: Exchange, body: Record<string, unknown>): void => {
    const inputs = Array.isArray(body.input) ? body.input : [body.input];
    const dims = typeof body.dimensions === 'number' && body.dimensions > 0 ? Math.min(4096, Math.floor(body.dimensions)) : 8;
    let tokens = 0;
    const data = inputs.map((inp, index) => {
      const text = typeof inp === 'string' ? inp : JSON.stringify(inp ?? '');
      tokens += Math.ceil(text.length / BYTES_PER_TOKEN);
      return { object: 'embedding', index, embedding: embedding(text, dims) };
    });
    const model = opts.modelName ?? String(body.model ?? 'emulated');
    respond(x, 200, JSON.stringify({ object: 'list', data, model, usage: { prompt_tokens: tokens, total_tokens: tokens } }));
    finish(x, 'ok');
  };

  /** Chat and text completions: OpenAI's request checks, then the shared generation path. */
  const serveOpenAi =
    (endpoint: EmulatedEndpoint) =>
    (x: Exchange, body: Record<string, unknown>, plan: ServePlan): void => {
      if (endpoint === 'chat' ? !Array.isArray(body.messages) : body.prompt === undefined) {
        return reply(x, 400, OPENAI_ERRORS.badRequest(endpoint === 'chat' ? "'messages' must be an array" : "'prompt' is required"), 'bad_request');
      }
      const badLimit = outputLimitProblem(body);
      if (badLimit) return reply(x, 400, errorBody(badLimit.message, 'invalid_request_error', badLimit.code, badLimit.param), 'bad_request');
      const stream = body.stream === true;
      const includeUsage = stream && isObject(body.stream_options) && body.stream_options.include_usage === true;
      const head: ChunkHead = {
        id: `${endpoint === 'chat' ? 'chatcmpl' : 'cmpl'}-emu-${++seq}`,
        model: opts.modelName ?? String(body.model ?? 'emulated'),
        created: Math.floor(Date.now() / 1000),
        endpoint,
      };
      const tool = endpoint === 'chat' ? toolToCall(body) : null;
      serveGeneration(
        x,
        {
          promptText: endpoint === 'chat' ? JSON.stringify(body.messages ?? null) : JSON.stringify(body.prompt ?? null),
          asked: firstNumber(body.max_tokens, body.max_completion_tokens),
          stream,
          tool: tool !== null,
          echoOneToken: false,
          writer: openAiWriter(head, tool ? { id: `call_emu_${seq}`, name: tool } : null, includeUsage),
        },
        plan,
      );
    };

  /** Anthropic's Messages API: its request checks, then the shared generation path. */
  const serveMessages = (x: Exchange, body: Record<string, unknown>, plan: ServePlan): void => {
    const problem = messagesProblem(body, true);
    if (problem) return reply(x, 400, ANTHROPIC_ERRORS.badRequest(problem), 'bad_request');
    const n = ++seq;
    const tool = anthropicToolToCall(body);
    const writer = anthropicWriter({
      id: `msg_emu_${n}`,
      model: opts.modelName ?? String(body.model ?? 'emulated'),
      tool: tool ? { id: `toolu_emu_${n}`, name: tool } : null,
      thinking: isObject(body.thinking) && body.thinking.type === 'enabled',
    });
    // max_tokens is required here, so it says nothing about the reply echo mode should give.
    serveGeneration(x, { promptText: anthropicPromptText(body), asked: body.max_tokens as number, stream: body.stream === true, tool: tool !== null, echoOneToken: true, writer }, plan);
  };

  /** OpenAI's Responses API: its output limit, then the shared generation path. */
  const serveResponses = (x: Exchange, body: Record<string, unknown>, plan: ServePlan): void => {
    const limit = body.max_output_tokens;
    if (limit !== undefined && limit !== null && (typeof limit !== 'number' || !Number.isInteger(limit) || limit < 1)) {
      return reply(x, 400, errorBody(`Invalid 'max_output_tokens': ${JSON.stringify(limit)}. Expected an integer of at least 1.`, 'invalid_request_error', 'invalid_value', 'max_output_tokens'), 'bad_request');
    }
    if (typeof body.input !== 'string' && !Array.isArray(body.input)) {
      return reply(x, 400, errorBody("Missing required parameter: 'input'.", 'invalid_request_error', 'missing_required_parameter', 'input'), 'bad_request');
    }
    const n = ++seq;
    const tool = responsesToolToCall(body);
    const writer = responsesWriter({
      id: `resp_emu_${n}`,
      model: opts.modelName ?? String(body.model ?? 'emulated'),
      createdAt: Math.floor(Date.now() / 1000),
      tool: tool ? { callId: `call_emu_${n}`, name: tool } : null,
      reasoning: Array.isArray(body.include) && body.include.includes('reasoning.encrypted_content') ? `enc_emu_${n}` : null,
    });
    const promptText = JSON.stringify({ instructions: body.instructions ?? null, input: body.input });
    serveGeneration(x, { promptText, asked: typeof limit === 'number' ? limit : null, stream: body.stream === true, tool: tool !== null, echoOneToken: false, writer }, plan);
  };

  /** Anthropic's token counter: the prompt's size without generating. */
  const serveCountTokens = (x: Exchange, body: Record<string, unknown>): void => {
    const problem = messagesProblem(body, false);
    if (problem) return reply(x, 400, ANTHROPIC_ERRORS.badRequest(problem), 'bad_request');
    reply(x, 200, JSON.stringify({ input_tokens: tokenCount(anthropicPromptText(body)) }), 'ok');
  };

  /** vLLM's and SGLang's `/tokenize`: a count and stand-in token ids of a prompt or of chat messages. */
  const serveTokenize = (x: Exchange, body: Record<string, unknown>): void => {
    const text = typeof body.prompt === 'string' ? body.prompt : Array.isArray(body.messages) ? JSON.stringify(body.messages) : null;
    if (text === null) return reply(x, 400, OPENAI_ERRORS.badRequest("either 'prompt' (a string) or 'messages' (an array) is required"), 'bad_request');
    const count = tokenCount(text);
    const tokens = Array.from({ length: count }, (_, i) => STAND_IN_TOKEN_BASE + (i % 1000));
    reply(x, 200, JSON.stringify({ count, max_model_len: maxModelLen, tokens }), 'ok');
  };

  /** The one generation path of every dialect: engine timing, stalls and mid-stream faults. */
  const serveGeneration = (x: Exchange, g: Generation, plan: ServePlan): void => {
    const record = x.record!;
    const { promptText, stream, writer } = g;
    const outputTokens = mode === 'echo' && g.echoOneToken ? 1 : Math.max(1, Math.min(maxOut, g.asked ?? (mode === 'echo' ? 1 : defaultOut)));
    const inputTokens = tokenCount(promptText);
    const stop: StopKind = g.tool ? 'tool' : g.asked !== null && outputTokens === g.asked ? 'length' : 'stop';
    const mid = plan.midstream;
    // Echo mode answers with `echoText` as one token.
    const pieceOf = (i: number): string => {
      if (mode === 'echo') return echoText;
      if (!g.tool) return tokenText(i);
      return toolArgsPiece(i, outputTokens);
    };

    let sent = 0;
    let cached = 0;
    const counts = (): TokenCounts => ({ input: inputTokens, output: outputTokens, cached });
    let text = '';
    let holdUntilMs = 0;
    let stalled = false;
    const queue: Array<() => void> = [];
    let flushTimer: NodeJS.Timeout | null = null;
    let engineId: number | null = null;
    let stallTimer: NodeJS.Timeout | null = null;
    x.cleanup = () => {
      if (engineId !== null) engine?.cancel(engineId);
      if (flushTimer) clearTimeout(flushTimer);
      if (stallTimer) clearTimeout(stallTimer);
    };

    const write = (s: string): void => {
      if (!x.gone) x.res.cork(() => x.res.write(s));
    };
    let headSent = false;
    const writeHead = (): void => {
      if (x.gone || headSent) return;
      headSent = true;
      record.status = 200;
      x.res.cork(() => x.res.writeStatus('200 OK').writeHeader('content-type', 'text/event-stream').writeHeader('cache-control', 'no-cache'));
    };
    /** Ends the response with `f`: in-band when streaming, else as a plain error response. */
    const fail = (f: Failure, outcome: RecordOutcome): void => {
      if (stream && headSent) {
        write(f.event);
        if (!x.gone) x.res.cork(() => x.res.end());
        finish(x, outcome);
      } else reply(x, f.status, f.body, outcome);
    };

    /**
     * Applies the mid-stream faults due before token `sent`: false when the response is over or
     * the token was deferred by a stall that starts now.
     */
    const midstreamGate = (retry: () => void): boolean => {
      if (!mid) return true;
      if (mid.disconnectAfterTokens === sent) {
        drop(x, 'disconnected');
        return false;
      }
      if (mid.errorAfterTokens === sent) {
        fail(writer.midstreamError(), 'midstream_error');
        return false;
      }
      if (mid.malformedAfterTokens === sent) {
        if (stream) {
          writeHead();
          write('data: {"id":"malformed","choices":[{"index":0,"delta":{"content":"cut\n\n');
          if (!x.gone) x.res.cork(() => x.res.end());
          finish(x, 'malformed');
        } else reply(x, 200, '{"id":"malformed","object":"chat.completion","choices":[{"index":0,"message":{"role":"assistant","content":"cut', 'malformed');
        return false;
      }
      if (mid.stallAfterTokens === sent && !stalled && mid.stallMs > 0) {
        stalled = true;
        holdUntilMs = performance.now() + mid.stallMs;
        paced(retry, true);
        return false;
      }
      return true;
    };

    let preambleSent = false;
    const emitToken = (i: number): void => {
      if (x.gone) return;
      if (i === 0 && stream && !preambleSent) {
        preambleSent = true;
        const pre = writer.preamble(counts());
        if (pre) write(pre);
      }
      if (!midstreamGate(() => emitToken(i))) return;
      const piece = pieceOf(i);
      if (stream) write(writer.piece(i, piece));
      else text += piece;
      if (sent === 0) record.firstTokenAtMs = performance.now();
      sent++;
      record.tokensSent = sent;
    };

    const emitEnd = (): void => {
      if (x.gone) return;
      if (!midstreamGate(emitEnd)) return;
      if (stream) {
        const tail = writer.tail(stop, counts());
        x.res.cork(() => x.res.end(tail));
        finish(x, 'ok');
      } else {
        reply(x, 200, writer.whole(text, stop, counts()), 'ok');
      }
    };

    /** Runs queued output in order once no stall holds it. */
    const flush = (): void => {
      flushTimer = null;
      while (queue.length > 0 && !x.gone) {
        const wait = holdUntilMs - performance.now();
        if (wait > 0) {
          flushTimer ??= setTimeout(flush, wait);
          return;
        }
        queue.shift()!();
      }
    };
    /** Runs `f` now, or after the stall in force, keeping order; `first` puts it at the head. */
    const paced = (f: () => void, first = false): void => {
      const wait = holdUntilMs - performance.now();
      if (queue.length === 0 && wait <= 0) return f();
      if (first) queue.unshift(f);
      else queue.push(f);
      if (flushTimer === null) flushTimer = setTimeout(flush, Math.max(0, wait));
    };

    const listener: EngineListener = {
      token(i, cachedTokens) {
        if (i === 0) cached = cachedTokens;
        paced(() => emitToken(i));
      },
      finished() {
        engineId = null;
        paced(emitEnd);
      },
      rejected() {
        engineId = null;
        const message = `This model's maximum context length is exceeded: ${inputTokens} prompt tokens + ${outputTokens} output tokens do not fit in the KV cache.`;
        // Once headers went out (a stalled stream) the refusal can only be in-band.
        fail(writer.contextTooLong(message), 'bad_request');
      },
    };

    const start = (): void => {
      stallTimer = null;
      if (x.gone) return;
      if (engine) {
        engineId = engine.submit(inputTokens, outputTokens, prefixHashes(promptText), listener);
        // Headers go out once the engine has accepted the request (a refusal is a plain 400).
        if (x.gone) return;
        if (stream) writeHead();
      } else {
        if (stream) writeHead();
        x.res.cork(() => {
          listener.token(0, 0);
          listener.finished();
        });
      }
    };
    if (plan.firstTokenStallMs > 0) {
      if (stream) writeHead();
      stallTimer = setTimeout(start, plan.firstTokenStallMs);
    } else start();
  };

  const modelOf = (body: Record<string, unknown>): string => opts.modelName ?? String(body.model ?? 'emulated');
  const videos = new VideoJobs(opts.videoPolls ?? 1);
  const answer = (x: Exchange, body: string | Buffer, contentType = 'application/json'): void => {
    respond(x, 200, body, [], contentType);
    finish(x, 'ok');
  };
  const needs = (x: Exchange, body: Record<string, unknown>, field: string): boolean => {
    if (body[field] !== undefined && body[field] !== null) return true;
    reply(x, 400, OPENAI_ERRORS.badRequest(`'${field}' is required`), 'bad_request');
    return false;
  };
  const serveRerank = (x: Exchange, body: Record<string, unknown>): void => {
    if (needs(x, body, 'query') && needs(x, body, 'documents')) answer(x, rerankBody(body, modelOf(body)));
  };
  const serveImages = (x: Exchange, body: Record<string, unknown>): void => {
    if (needs(x, body, 'prompt')) answer(x, imagesBody(body));
  };
  const serveTranscript = (x: Exchange, body: Record<string, unknown>): void => {
    if (!needs(x, body, 'file')) return;
    if (body.stream === true) return answer(x, transcriptStream(), 'text/event-stream');
    const a = transcriptAnswer(body);
    answer(x, a.body, a.contentType);
  };
  const serveSpeech = (x: Exchange, body: Record<string, unknown>): void => {
    if (needs(x, body, 'input')) answer(x, SPEECH_BYTES, body.response_format === 'wav' ? 'audio/wav' : 'audio/mpeg');
  };
  const serveVideo = (x: Exchange, body: Record<string, unknown>): void => {
    if (needs(x, body, 'prompt')) answer(x, videos.submit(body, modelOf(body)));
  };
  /** GET /v1/videos/{id} and /content: the key check, then the job's status or bytes (no faults). */
  app.get('/v1/videos/*', (res, req) => {
    const x: Exchange = { res, record: null, gone: false, cleanup: null };
    open.add(x);
    const authorization = req.getHeader('authorization');
    const path = req.getUrl();
    x.record = log.open({ requestId: req.getHeader('x-request-id') || null, path, receivedAtMs: performance.now(), body: null, authorization, stream: false });
    res.onAborted(() => {
      if (!x.gone) finish(x, 'client_gone');
    });
    if (!authorized('bearer', authorization, '')) return reply(x, 401, OPENAI_ERRORS.unauthorized(), 'unauthorized');
    const [raw, tail] = path.slice('/v1/videos/'.length).split('/');
    let id = raw!;
    try {
      id = decodeURIComponent(id);
    } catch {
      // Taken as it is: matches no job.
    }
    const missing = () => reply(x, 404, errorBody(`No video found with id '${id}'.`, 'invalid_request_error', 'video_not_found', null), 'bad_request');
    if (tail === 'content') {
      if (!videos.complete(id)) return missing();
      return answer(x, VIDEO_BYTES, 'video/mp4');
    }
    const status = videos.poll(id);
    if (status === null) return missing();
    answer(x, status);
  });
  const openAi = (serve: Route['serve']): Route => ({ errors: OPENAI_ERRORS, auth: 'bearer', faults: true, serve });
  app.post('/v1/rerank', handle(openAi(serveRerank)));
  app.post('/v1/images/generations', handle(openAi(serveImages)));
  app.post('/v1/images/edits', handle(openAi(serveImages)));
  app.post('/v1/audio/transcriptions', handle(openAi(serveTranscript)));
  app.post('/v1/audio/translations', handle(openAi(serveTranscript)));
  app.post('/v1/audio/speech', handle(openAi(serveSpeech)));
  app.post('/v1/videos', handle(openAi(serveVideo)));
  const anthropic = (serve: Route['serve']): Route => ({ errors: ANTHROPIC_ERRORS, auth: 'anthropic', faults: true, serve });
  app.post('/v1/chat/completions', handle(openAi(serveOpenAi('chat'))));
  app.post('/v1/completions', handle(openAi(serveOpenAi('completion'))));
  app.post('/v1/embeddings', handle(openAi(serveEmbedding)));
  app.post('/v1/responses', handle(openAi(serveResponses)));
  app.post('/v1/messages', handle(anthropic(serveMessages)));
  app.post('/v1/messages/count_tokens', handle(anthropic(serveCountTokens)));
  // vLLM serves /tokenize outside /v1 and without its API-key check; so does the emulator, fault-free.
  app.post('/tokenize', handle({ errors: OPENAI_ERRORS, auth: 'none', faults: false, serve: serveTokenize }));
  app.get('/v1/models', (res) => {
    res.writeHeader('content-type', 'application/json').end(
      JSON.stringify({ object: 'list', data: [{ id: opts.modelName ?? 'emulated', object: 'model', created: 0, owned_by: 'switchyard-emulator' }] }),
    );
  });
  app.get('/v1/usage', (res, req) => {
    const u = opts.usage;
    if (!u) return void res.writeStatus('404 Not Found').writeHeader('content-type', 'application/json').end(errorBody('this emulator reports no usage (start it with usage:)', 'invalid_request_error', 404));
    if (!authorized('bearer', req.getHeader('authorization'), '')) return void res.writeStatus(statusLine(401)).writeHeader('content-type', 'application/json').end(OPENAI_ERRORS.unauthorized());
    const record = { provider: u.provider, usage_label: u.usageLabel, unit: 'requests', used: usageUsed, limit: u.limit, window_sec: u.windowSec ?? null, resets_at: null };
    res.writeHeader('content-type', 'application/json').end(JSON.stringify({ object: 'list', data: [record] }));
  });
  app.put('/emulator/usage', (res) => {
    let aborted = false;
    res.onAborted(() => (aborted = true));
    readBody(res, (text) => {
      if (aborted) return;
      let status = 200;
      let out: string;
      try {
        const body = JSON.parse(text.toString('utf8')) as { used?: unknown };
        setUsageUsed(body.used as number);
        out = JSON.stringify({ used: usageUsed });
      } catch (e) {
        status = 400;
        out = errorBody((e as Error).message, 'invalid_request_error', 400);
      }
      res.cork(() => res.writeStatus(statusLine(status)).writeHeader('content-type', 'application/json').end(out));
    });
  });
  app.get('/emulator/faults', (res) => {
    res.writeHeader('content-type', 'application/json').end(JSON.stringify(knobs));
  });
  app.put('/emulator/faults', (res) => {
    let aborted = false;
    res.onAborted(() => (aborted = true));
    readBody(res, (text) => {
      if (aborted) return;
      let status = 200;
      let out: string;
      try {
        out = JSON.stringify(setFaults(JSON.parse(text.toString('utf8')) as Partial<FaultKnobs>));
      } catch (e) {
        status = 400;
        out = errorBody((e as Error).message, 'invalid_request_error', 400);
      }
      res.cork(() => res.writeStatus(statusLine(status)).writeHeader('content-type', 'application/json').end(out));
    });
  });
  app.get('/emulator/records', (res) => {
    const rows = log.all().map(({ body: _b, authorization: _a, headers: _h, ...rest }) => rest);
    res.writeHeader('content-type', 'application/json').end(JSON.stringify(rows));
  });
  app.any('/*', (res) => {
    res.writeStatus('404 Not Found').writeHeader('content-type', 'application/json').end(errorBody('not found', 'invalid_request_error', 404));
  });

  const setFaults = (patch: Partial<FaultKnobs>): FaultKnobs => {
    knobs = parseKnobs({ ...knobs, ...patch });
    engine?.setLatencyScale(knobs.latency_scale);
    return knobs;
  };

  const port = await new Promise<number>((resolve, reject) => {
    // LIBUS_LISTEN_EXCLUSIVE_PORT (1): no SO_REUSEPORT, so a port in use is refused, not shared.
    // The typings lack the (host, port, options, cb) overload; the native binding has it.
    (app.listen as unknown as (h: string, p: number, o: number, cb: (ls: unknown) => void) => TemplatedApp)(host, opts.port ?? 0, 1, (ls) => {
      if (!ls) reject(new Error(`emulator: cannot listen on ${host}:${opts.port ?? 0} (in use, or not an address of this machine)`));
      else resolve(uWS.us_socket_local_port(ls as Parameters<typeof uWS.us_socket_local_port>[0]));
    });
  });

  return {
    host,
    port,
    baseUrl: `http://${host}:${port}/v1`,
    mode,
    log,
    faults: () => knobs,
    setFaults,
    setRateLimitedKeys: (keys) => {
      limitedKeys = new Set(keys);
    },
    inEngine: () => engine?.size ?? 0,
    usage: () => (opts.usage ? { used: usageUsed, limit: opts.usage.limit } : null),
    setUsageUsed,
    async close() {
      for (const x of [...open]) drop(x, 'client_gone');
      engine?.close();
      // `close()` exists in this uWS build (closes the listener and every socket) but is missing from its typings.
      (app as TemplatedApp & { close(): void }).close();
    },
  };
}

/** Validates knobs with a message naming the bad one. */
function parseKnobs(raw: unknown): FaultKnobs {
  const r = FaultKnobsSchema.safeParse(raw);
  if (!r.success) throw new Error(`emulator faults: ${r.error.issues.map((i) => `${i.path.join('.') || '(root)'}: ${i.message}`).join('; ')}`);
  return r.data;
}

/** Reads a request body (copying uWS's transient chunks) and hands it over as UTF-8 text. */
function readBody(res: HttpResponse, done: (body: Buffer) => void): void {
  const parts: Buffer[] = [];
  res.onData((chunk, isLast) => {
    parts.push(Buffer.from(chunk.slice(0)));
    if (isLast) done(parts.length === 1 ? parts[0]! : Buffer.concat(parts));
  });
}

// 529 is Anthropic's "overloaded" status; it has no IANA reason phrase, so it gets a descriptive one.
const REASONS: Record<number, string> = {
  200: 'OK',
  400: 'Bad Request',
  401: 'Unauthorized',
  403: 'Forbidden',
  404: 'Not Found',
  429: 'Too Many Requests',
  500: 'Internal Server Error',
  502: 'Bad Gateway',
  503: 'Service Unavailable',
  504: 'Gateway Timeout',
  529: 'Site Overloaded',
};

function statusLine(status: number): string {
  return `${status} ${REASONS[status] ?? 'Status'}`;
}

function isObject(v: unknown): v is Record<string, unknown> {
  return v !== null && typeof v === 'object' && !Array.isArray(v);
}

/**
 * The 400 OpenAI's API gives for a bad `max_tokens` / `max_completion_tokens` (its wording and
 * codes: `invalid_type` for a non-integer, `integer_below_min_value` below 1), or null when both
 * are absent, null or integers ≥ 1.
 */
function outputLimitProblem(body: Record<string, unknown>): { message: string; code: string; param: string } | null {
  for (const param of ['max_tokens', 'max_completion_tokens'] as const) {
    const v = body[param];
    if (v === undefined || v === null) continue;
    if (typeof v !== 'number' || !Number.isInteger(v)) {
      const got = typeof v === 'number' ? 'a decimal number' : Array.isArray(v) ? 'an array' : typeof v === 'object' ? 'an object' : `a ${typeof v}`;
      return { message: `Invalid type for '${param}': expected an integer, but got ${got} instead.`, code: 'invalid_type', param };
    }
    if (v < 1) return { message: `Invalid '${param}': integer below minimum value. Expected a value >= 1, but got ${v} instead.`, code: 'integer_below_min_value', param };
  }
  return null;
}

function firstNumber(...vs: unknown[]): number | null {
  for (const v of vs) if (typeof v === 'number' && Number.isFinite(v) && v > 0) return Math.floor(v);
  return null;
}

/**
 * The function the emulator calls, or null: only when the request forces a tool call
 * (`tool_choice: "required"` or a named function) — `auto` gets a text answer, so tests decide.
 */
function toolToCall(body: Record<string, unknown>): string | null {
  const tools = Array.isArray(body.tools) ? body.tools : [];
  if (tools.length === 0) return null;
  const choice = body.tool_choice;
  if (isObject(choice) && isObject(choice.function) && typeof choice.function.name === 'string') return choice.function.name;
  if (choice !== 'required') return null;
  const first = tools[0];
  return isObject(first) && isObject(first.function) && typeof first.function.name === 'string' ? first.function.name : 'tool';
}

/** Tokens of `text` at `BYTES_PER_TOKEN` UTF-8 bytes each, rounded up. */
function tokenCount(text: string): number {
  return Math.ceil(Buffer.byteLength(text) / BYTES_PER_TOKEN);
}

/**
 * The replica's context window: vLLM's `max_model_len`, SGLang's default `context_length` (the
 * model's), or `DEFAULT_MODEL_LEN` for a legacy profile, which names no model.
 */
function modelWindow(replicas: ReplicasConfig): number {
  const r = resolveReplicas(replicas);
  if (r.kind !== 'calibrated') return DEFAULT_MODEL_LEN;
  return r.engine === 'vllm' ? r.maxModelLen : r.arch.maxContextTokens;
}

/** The text of an Anthropic request that counts as its prompt: `system`, `messages` and `tools` as JSON. */
function anthropicPromptText(body: Record<string, unknown>): string {
  return JSON.stringify({ system: body.system, messages: body.messages, tools: body.tools });
}

/**
 * The 400 message Anthropic's API gives for a bad Messages body (field path, then the problem),
 * or null: `messages` must be a non-empty array and, when `needsMaxTokens`, `max_tokens` an
 * integer ≥ 1.
 */
function messagesProblem(body: Record<string, unknown>, needsMaxTokens: boolean): string | null {
  if (needsMaxTokens) {
    const v = body.max_tokens;
    if (v === undefined || v === null) return 'max_tokens: Field required';
    if (typeof v !== 'number' || !Number.isInteger(v)) return 'max_tokens: Input should be a valid integer';
    if (v < 1) return 'max_tokens: Input should be greater than or equal to 1';
  }
  if (body.messages === undefined) return 'messages: Field required';
  if (!Array.isArray(body.messages)) return 'messages: Input should be a valid list';
  if (body.messages.length === 0) return 'messages: at least one message is required';
  return null;
}

/**
 * The tool an Anthropic request forces, or null: `tool_choice` `{type:'tool', name}` names it,
 * `{type:'any'}` takes the first tool; `auto` and `none` get a text answer.
 */
function anthropicToolToCall(body: Record<string, unknown>): string | null {
  const tools = Array.isArray(body.tools) ? body.tools : [];
  const choice = body.tool_choice;
  if (tools.length === 0 || !isObject(choice)) return null;
  if (choice.type === 'tool' && typeof choice.name === 'string') return choice.name;
  if (choice.type !== 'any') return null;
  const first = tools[0];
  return isObject(first) && typeof first.name === 'string' ? first.name : 'tool';
}

/** Piece `i` of `n` of the streamed tool-call arguments `{"query": "<words>"}`. */
function toolArgsPiece(i: number, n: number): string {
  if (n === 1) return '{"query": ""}';
  if (i === 0) return '{"query": "';
  if (i === n - 1) return '"}';
  return tokenText(i - 1);
}

/** Chained FNV-1a hashes of the prompt's full blocks of `HASH_BLOCK_TOKENS` tokens (4 bytes each). */
function prefixHashes(text: string): number[] {
  const blockChars = HASH_BLOCK_TOKENS * BYTES_PER_TOKEN;
  const out: number[] = [];
  let h = 0x811c9dc5;
  for (let start = 0; start + blockChars <= text.length; start += blockChars) {
    for (let i = start; i < start + blockChars; i++) h = Math.imul(h ^ text.charCodeAt(i), 0x01000193);
    out.push(h >>> 0);
  }
  return out;
}
