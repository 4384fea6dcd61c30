/**
 * One client request driven through the core's lifecycle seam, with real sockets: the core
 * decides (dispatch, cancel, commit, respond_error, done, wait_until); this class performs each
 * action and reports what the sockets did (attempt_sent, first_output, first_token, finished,
 * failed, deadline, client_gone). It is the gateway's counterpart of the simulator's replay loop.
 *
 * The commit point is the core's: a stream is committed at its first token (a content or
 * tool-call delta). Until then the attempt's role-only / empty chunks are held here, and no
 * status or header has gone to the client, so a failure before the first token — even after a
 * preamble — fails over invisibly. After commit, a failure can only be told in-band: an error
 * event and the end of the stream, never the stream's terminator. A non-stream response commits
 * when its whole body has arrived. Error bodies, in-band errors and the terminator are written
 * in the request's client wire (`ClientRequest.wire`, its endpoint family's). Routing metadata
 * goes to the log, never to the client. A multi-target alias's answer names the direct model that
 * served it in `x-switchyard-served-by` (seed 003; the body keeps the alias); a model with its
 * own routes, an error and an auto model (whose client sees only the auto model's name,
 * `auto/auto-request.ts`) carry no such header. The serving endpoint is in the request log and
 * `RunningGateway.servedEndpoint`.
 *
 * Events are queued, never applied re-entrantly: an action that causes an event (a deadline, an
 * abort) is stepped after the current batch of actions is done.
 */
import { wakeupsFor } from './wakeups.ts';
import type { AttemptKey, LifecycleAction, LifecycleEvent, ListLinks, RequestLife, RoutingMetadata } from '../../core/index.ts';
import { roleOf, type Caller } from '../callers.ts';
import { clientMessage, midStreamMessage, statusOf } from '../errors.ts';
import type { ClientRequest } from '../request-body.ts';
import type { RelayEvent } from '../sse-relay.ts';
import type { RequestTrace } from '../tracing/tracing.ts';
import type { AttemptEnd } from '../upstream/adapter.ts';
import { newAttempt, type Attempt } from './attempt.ts';
import type { ClientResponse, HeaderPairs } from './client-response.ts';
import { DeadlineTimer } from './deadline-timer.ts';
import type { ExchangeContext, ExchangeMeta, FinishedExchange } from './exchange-context.ts';
import { logRequestLine } from './request-line.ts';
import { routeRequestOf } from './route-request.ts';
import { PASS_THROUGH_CODES, upstreamMessage } from './upstream-error-body.ts';
import { DROPPED_PARAMS_HEADER } from '../upstream/dropped-params.ts';
import { maskServedNames, publicModelOf } from '../auto/auto-request.ts';
import type { SharedGrant } from '../state/shared-units.ts';

const SSE_TYPE = ['content-type', 'text/event-stream'] as const;
const NO_CACHE = ['cache-control', 'no-cache'] as const;
const NO_BUFFERING = ['x-accel-buffering', 'no'] as const;
const JSON_TYPE = ['content-type', 'application/json'] as const;
const NO_HEADERS: HeaderPairs = [];
/** Core codes that, on a committed stream with no upstream error body, mean the upstream broke off mid-stream. */
const MID_STREAM_CODES: ReadonlySet<string> = new Set(['upstream_unavailable', 'upstream_server_error', 'upstream_timeout']);
const ZERO_USAGE = { inputTokens: 0, outputTokens: 0, cachedTokens: 0 } as const;

/** One request's life in the gateway. */
export class Exchange implements ListLinks<Exchange> {
  /**
   * Links of the gateway's list of running exchanges (an `IntrusiveList`, managed by it): a
   * long-lived Set gaining and losing one exchange per request made scavenges promote its garbage.
   */
  prev: Exchange | null = null;
  next: Exchange | null = null;
  list: object | null = null;
  private life: RequestLife | null = null;
  private readonly attempts = new Map<number, Attempt>();
  private committed: Attempt | null = null;
  /** The stream start was written without backpressure. */
  private streamOk = true;
  /** Committed frames of the current batch, written at its end. */
  private out = '';
  /** The core's message of a failed request (endpoint ids included): for the log only. */
  private errorDetail: string | null = null;
  private readonly queue: LifecycleEvent[] = [];
  private busy = false;
  private over = false;
  /** The life's pending `wait_until`s, behind one timer; a fired one is reported as a `deadline` event unless the exchange is over. */
  private readonly deadlines: DeadlineTimer;
  private readonly startedAtMs: number;
  private readonly requestId: string;
  private readonly baseHeaders: HeaderPairs;
  /** Set by `cutForDrain`. */
  private cut = false;
  /** The life is registered for outbound-slot wake-ups (it queued an attempt). */
  private wakeable = false;
  /** The request's spans; null when tracing is off. */
  private readonly trace: RequestTrace | null;
  /** The request's prompt estimate (tokens), for shared token quotas. */
  private inputTokens = 0;
  /** Attempts waiting for a shared unit (`dispatchShared`), by id: `closed` once the core cancelled one meanwhile. */
  private readonly holding = new Map<number, { closed: boolean }>();
  /** Shared units held by attempts, by id; each released exactly once when its attempt ends. */
  private readonly grants = new Map<number, SharedGrant>();

  constructor(
    private readonly ctx: ExchangeContext,
    private readonly client: ClientResponse,
    private readonly req: ClientRequest,
    private readonly caller: Caller,
    private readonly meta: ExchangeMeta,
  ) {
    this.startedAtMs = ctx.now();
    this.deadlines = new DeadlineTimer(() => ctx.now(), (deadlineId) => {
      if (!this.over) this.run(() => this.step({ kind: 'deadline', deadlineId }));
    });
    this.requestId = meta.requestId;
    this.baseHeaders = meta.baseHeaders;
    this.trace = ctx.tracing === null ? null : ctx.tracing.startRequest(meta.traceHeaders, this.startedAtMs);
  }

  /** Begins routing. */
  start(): void {
    const request = routeRequestOf(this.req, this.meta, this.ctx.core.model(this.req.model)?.planner.readsPrefixHashes === true, roleOf(this.caller));
    this.inputTokens = request.inputTokens;
    const { life, actions } = this.ctx.core.start(request, this.ctx.now(), this.ctx.rngFor(this.req.model));
    this.life = life;
    this.busy = true;
    try {
      this.apply(actions);
    } finally {
      this.busy = false;
    }
    this.drainQueue();
  }

  /** The client disconnected. */
  clientGone(): void {
    this.run(() => {
      if (this.life && !this.life.isDone) this.step({ kind: 'client_gone' });
    });
  }

  /**
   * The drain's grace ran out with this request still running: the gateway ends it itself, so
   * the client learns why instead of seeing its connection drop. A committed stream gets an
   * in-band `draining` error event and a properly terminated chunked body (never the stream's
   * terminator); a request not yet answered gets 503 `draining` with Retry-After. Upstream attempts are
   * cancelled (the core is told the client is gone, which releases its claims), and the request
   * is reported as cut (`FinishedExchange.cut`), not as the client's disconnect.
   */
  cutForDrain(): void {
    this.run(() => {
      if (this.over) return;
      this.cut = true;
      const message = 'The gateway is shutting down and could not finish this response; retry the request.';
      if (this.client.open) {
        if (this.client.headersSent) this.client.end(this.takeOut() + this.req.wire.streamError('draining', message, 503, null));
        else this.client.send(503, [...this.baseHeaders, ['content-type', 'application/json'], ['retry-after', '1']], this.req.wire.errorBody('draining', message, null, 503, 1));
      }
      if (this.life && !this.life.isDone) this.step({ kind: 'client_gone' });
    });
  }

  /**
   * Runs `f`; a throw (a bug) ends this request with a 500 (or an in-band error) instead of
   * taking the process down from a socket callback, and the life is closed as if the client had
   * gone, so its claims are released.
   */
  run(f: () => void): void {
    try {
      f();
    } catch (e) {
      this.crash(e);
    }
  }

  private crash(e: unknown): void {
    this.ctx.log.error({ requestId: this.requestId, err: e }, 'request failed inside the gateway');
    for (const att of this.attempts.values()) if (!att.closed) this.closeAttempt(att.id, true);
    this.releaseAllShared();
    if (this.client.open) {
      const message = 'The gateway failed while handling this request.';
      if (this.client.headersSent) this.client.end(this.takeOut() + this.req.wire.streamError('internal_error', message, 500, null));
      else this.client.send(500, [...this.baseHeaders, ['content-type', 'application/json']], this.req.wire.errorBody('internal_error', message, null, 500, null));
    }
    if (this.life && !this.life.isDone) {
      try {
        this.life.step({ kind: 'client_gone' }, this.ctx.now());
      } catch {
        // Already failing; the log line above has the cause.
      }
    }
    if (this.wakeable && this.life) {
      this.wakeable = false;
      wakeupsFor(this.ctx.core).unregister(this.life);
    }
    if (!this.over) {
      this.over = true;
      this.report(null);
      this.meta.released();
    }
  }

  private report(md: RoutingMetadata | null): void {
    const f = this.ctx.onFinished;
    if (!f && this.trace === null) return;
    try {
      const finished: FinishedExchange = {
        req: this.req,
        requestId: this.requestId,
        sessionId: this.meta.sessionId,
        callerId: this.caller.id,
        startedAtMs: this.startedAtMs,
        endedAtMs: this.ctx.now(),
        metadata: md,
        httpStatus: this.client.aborted ? 499 : (this.client.status ?? 500),
        cut: this.cut,
      };
      if (this.trace !== null) this.trace.end(finished);
      if (f) f(finished);
    } catch (e) {
      this.ctx.log.error({ requestId: this.requestId, err: e }, 'request log/metrics/trace failed');
    }
  }

  private step(event: LifecycleEvent): void {
    this.queue.push(event);
    if (!this.busy) this.drainQueue();
  }

  private drainQueue(): void {
    this.busy = true;
    try {
      while (this.queue.length > 0) {
        const e = this.queue.shift()!;
        if (!this.life || this.life.isDone) continue;
        this.apply(this.life.step(e, this.ctx.now()));
      }
    } finally {
      this.busy = false;
    }
    // A step may have freed an outbound slot or hold place that the core granted to another
    // request's queued attempt: step that request now (see wakeups.ts).
    const core = this.ctx.core;
    if (this.wakeable && this.life?.isDone) {
      this.wakeable = false;
      wakeupsFor(core).unregister(this.life);
    }
    if (core.hasWakeups) wakeupsFor(core).deliver(core);
  }

  private apply(actions: readonly LifecycleAction[]): void {
    for (const a of actions) {
      switch (a.kind) {
        case 'dispatch':
          this.dispatch(a.attemptId, a.endpointId, a.key);
          break;
        case 'cancel':
          this.closeAttempt(a.attemptId, true);
          break;
        case 'commit':
          this.commit(a.attemptId);
          break;
        case 'respond_error':
          this.respondError(a.status, a.code, a.message, a.retryAfterSec, a.attemptId);
          break;
        case 'acquire_slot':
          // Queued behind an outbound slot or hold place: the grant comes as a wake-up. Only
          // queued lives are registered, so most requests touch no shared table here.
          if (!this.wakeable && this.life && !this.life.isDone) {
            this.wakeable = true;
            wakeupsFor(this.ctx.core).register(this.life, (e) => this.run(() => this.step(e)));
          }
          break;
        case 'wait_until': {
          this.deadlines.add(a.deadlineId, a.atMs);
          break;
        }
        case 'done':
          this.finish(a.metadata);
          break;
      }
    }
  }

  private dispatch(id: number, endpointId: string, key: AttemptKey | undefined): void {
    const units = this.ctx.sharedUnits?.() ?? null;
    if (units !== null) {
      const model = this.ctx.core.model(this.req.model) ?? null;
      if (model !== null && units.needs(model, endpointId)) {
        // A limit shared with other replicas: take its unit from Redis before the call leaves (state/shared-units.ts).
        const held = { closed: false };
        this.holding.set(id, held);
        const planner = model.planner as { predictor?: { predict(inputTokens: number, hint: number | null): number } };
        const tokens = this.inputTokens + (planner.predictor?.predict(this.inputTokens, null) ?? 0);
        void units.acquire(model, endpointId, tokens).then((r) =>
          this.run(() => {
            this.holding.delete(id);
            if (held.closed || this.over || !this.life || this.life.isDone) {
              if (r.ok) r.grant.release(null);
              return;
            }
            if (!r.ok) {
              // Spent across the replicas: no upstream call; the core falls to its next candidate.
              this.step({ kind: 'failed', attemptId: id, outcome: r.outcome });
              return;
            }
            this.grants.set(id, r.grant);
            this.send(id, endpointId, key);
            if (!this.attempts.has(id)) this.releaseShared(id, null); // refused before it went out
          }),
        );
        return;
      }
    }
    this.send(id, endpointId, key);
  }

  /** Ends attempt `id`'s shared unit, if it holds one (`total`: its real token count, when known). */
  private releaseShared(id: number, total: number | null): void {
    const g = this.grants.get(id);
    if (g === undefined) return;
    this.grants.delete(id);
    g.release(total);
  }

  /** Ends every shared unit still held (the request is over); attempts still waiting for one release theirs when it comes. */
  private releaseAllShared(): void {
    for (const h of this.holding.values()) h.closed = true;
    for (const id of [...this.grants.keys()]) this.releaseShared(id, null);
  }

  /** Sends attempt `id` upstream. */
  private send(id: number, endpointId: string, key: AttemptKey | undefined): void {
    const target = this.ctx.routes.get(endpointId);
    let apiKey: string | null = null;
    if (key !== undefined) {
      const secret = this.ctx.keySecret?.(key.fingerprint);
      if (secret === undefined) {
        // A key removed after the core chose it: fail the attempt (by key id, never the secret) so the core moves on.
        this.ctx.log.error({ requestId: this.requestId, endpointId, keyId: key.keyId }, 'pooled key has no secret');
        this.step({ kind: 'failed', attemptId: id, outcome: { kind: 'transport', cause: 'refused' } });
        return;
      }
      apiKey = secret;
    }
    if (!target || !target.endpoints.has(this.req.endpoint)) {
      // A config/core mismatch (or a route whose kind cannot serve this endpoint) is a bug of
      // the configuration check; fail the attempt so the core can fall back.
      this.ctx.log.error({ requestId: this.requestId, endpointId, endpoint: this.req.endpoint }, target ? 'route cannot serve this endpoint' : 'no upstream target for endpoint');
      this.step({ kind: 'failed', attemptId: id, outcome: { kind: 'transport', cause: 'refused' } });
      return;
    }
    const att = newAttempt(id, target);
    this.attempts.set(id, att);
    att.handle = target.adapter.startAttempt(
      target,
      this.req,
      {
        requestId: this.requestId,
        maxErrorBodyBytes: this.ctx.maxErrorBodyBytes,
        clientHeaders: this.meta.forwardedHeaders,
        traceHeaders: this.trace === null ? null : this.trace.attempt(id, target, this.ctx.now()),
        apiKey,
        onResponse: this.meta.keepResponse ? (response) => (att.response = response) : undefined,
      },
      {
        headers: () => this.run(() => !att.closed && this.step({ kind: 'first_output', attemptId: id })),
        events: (events) => {
          let wait: void | Promise<void> = undefined;
          this.run(() => (wait = this.onEvents(att, events)));
          return wait;
        },
      },
      (end) => this.run(() => this.onAttemptEnd(att, end)),
    );
    this.step({ kind: 'attempt_sent', attemptId: id });
  }

  /**
   * Stream frames from an attempt: held before commit, relayed after. The frames of one batch
   * (one upstream read) are joined into one write; the last batch's go out with the final
   * terminator or error in one `end`. (Wrapping a batch in an outer `cork` instead made this uWS
   * build drop connections under backpressure.) Returns a promise when the client is congested.
   */
  private onEvents(att: Attempt, events: RelayEvent[]): void | Promise<void> {
    let congested = false;
    let chunked = false;
    for (const ev of events) {
      if (att.closed) break;
      if (ev.kind === 'frame') {
        if (ev.token) att.contentFrames++;
        if (this.committed === att) {
          this.out += ev.text;
          chunked = true;
        } else if (!ev.token) {
          att.pending.push(ev.text);
        } else {
          att.pending.push(ev.text);
          this.step({ kind: 'first_token', attemptId: att.id });
          // If the core committed this attempt, commit() flushed everything held, token included.
          if (this.committed !== att) return;
          if (!this.streamOk) congested = true;
        }
      } else if (ev.kind === 'done') {
        att.closed = true;
        this.releaseShared(att.id, ev.usage ? ev.usage.inputTokens + ev.usage.outputTokens : null);
        // `finish` ends the response with what is still in `out`, then the wire's terminator.
        this.step({ kind: 'finished', attemptId: att.id, usage: ev.usage ?? ZERO_USAGE });
      }
    }
    // One `chunk` per upstream read after commit: the core arms (and lazily re-arms) the stream-idle wait.
    if (chunked && !att.closed) this.step({ kind: 'chunk', attemptId: att.id });
    if (this.out.length > 0 && this.client.open) {
      const text = this.out;
      this.out = '';
      if (!this.client.write(text)) congested = true;
    }
    if (congested && this.client.open) return this.client.drained();
  }

  /** Frames relayed but not yet written, emptied. */
  private takeOut(): string {
    const t = this.out;
    this.out = '';
    return t;
  }

  private onAttemptEnd(att: Attempt, end: AttemptEnd): void {
    if (att.closed) return;
    att.closed = true;
    this.releaseShared(att.id, end.kind === 'body' && end.usage ? end.usage.inputTokens + end.usage.outputTokens : null);
    switch (end.kind) {
      case 'aborted':
      case 'streamed':
        return;
      case 'body':
        att.body = end.text;
        att.bytes = end.bytes ?? null;
        this.step({ kind: 'finished', attemptId: att.id, usage: end.usage ?? ZERO_USAGE });
        return;
      case 'failed':
        att.errorBody = end.errorBody;
        this.ctx.log.debug({ requestId: this.requestId, endpointId: att.target.endpointId, outcome: end.outcome }, 'attempt failed');
        this.step({ kind: 'failed', attemptId: att.id, outcome: end.outcome });
        return;
    }
  }

  /**
   * `x-switchyard-served-by` for an answer from `endpointId`: the direct model's id when the
   * request named a multi-target alias and that endpoint is one of its targets; nothing
   * otherwise. An auto model's client never learns which model served it.
   */
  private servedByHeader(endpointId: string): HeaderPairs {
    if (this.req.auto) return NO_HEADERS;
    const direct = this.ctx.core.model(this.req.model)?.multiTarget?.targets.find((t) => t.endpointId === endpointId)?.model;
    return direct === undefined ? NO_HEADERS : [['x-switchyard-served-by', direct]];
  }

  /** Closes attempt `id` (nothing more is reported for it), aborting it upstream when `abort`. */
  private closeAttempt(id: number, abort: boolean): void {
    const held = this.holding.get(id);
    if (held !== undefined) held.closed = true;
    this.releaseShared(id, null);
    const att = this.attempts.get(id);
    if (!att) return;
    att.closed = true;
    if (abort) att.handle?.abort();
  }

  private commit(id: number): void {
    const att = this.attempts.get(id);
    if (!att) return;
    this.committed = att;
    const servedBy = this.servedByHeader(att.target.endpointId);
    const fromAdapter = att.handle?.commitHeaders ?? NO_HEADERS; // e.g. the fields a translating adapter dropped
    if (fromAdapter !== NO_HEADERS && this.ctx.log.isLevelEnabled('info')) {
      const dropped = fromAdapter.find(([k]) => k === DROPPED_PARAMS_HEADER);
      if (dropped) this.ctx.log.info({ requestId: this.requestId, endpointId: att.target.endpointId, droppedParams: dropped[1] }, 'request fields dropped for this upstream');
    }
    if (this.req.stream) {
      this.streamOk = this.client.startStream([...this.baseHeaders, ...servedBy, ...fromAdapter, SSE_TYPE, NO_CACHE, NO_BUFFERING], att.pending.join(''));
      att.pending = [];
    } else {
      const bytes = att.bytes;
      if (bytes !== null) this.client.send(200, [...this.baseHeaders, ...servedBy, ...fromAdapter, ['content-type', bytes.contentType]], bytes.data);
      else this.client.send(200, [...this.baseHeaders, ...servedBy, ...fromAdapter, JSON_TYPE], att.body ?? '');
      att.body = null;
      att.bytes = null;
    }
  }

  /**
   * The core ended the request with an error. When it names the attempt whose upstream error
   * it reports, that attempt's own message goes to the client: as the body of a request-scoped
   * 4xx, and as the message of an in-band error after commit (with its Retry-After).
   */
  private respondError(status: number, code: string, coreMessage: string, retryAfterSec: number | null, attemptId: number | undefined): void {
    this.errorDetail = coreMessage;
    if (!this.client.open) return;
    // For an auto model, the serving model's names in any text that reaches the client become the auto model's.
    const upstreamBody = maskServedNames(this.req, attemptId === undefined ? null : (this.attempts.get(attemptId)?.errorBody ?? null));
    const message = maskServedNames(this.req, clientMessage(code, publicModelOf(this.req), coreMessage));
    if (this.client.headersSent) {
      // Committed stream: an in-band error, then the end — never the terminator. The upstream's
      // own error message when it sent one; a transport cut or stall of the committed attempt is
      // told as such (no other route was tried), not as "every route failed".
      const fromUpstream = upstreamMessage(upstreamBody);
      const live = this.committed;
      if (fromUpstream === null && live !== null && MID_STREAM_CODES.has(code)) {
        // A stall keeps its own code (upstream_timeout, as before the stream started); a cut is upstream_stream_interrupted.
        const timedOut = code === 'upstream_timeout';
        const text = maskServedNames(this.req, midStreamMessage(publicModelOf(this.req), live.contentFrames, timedOut));
        const outCode = timedOut ? code : 'upstream_stream_interrupted';
        this.client.end(this.takeOut() + this.req.wire.streamError(outCode, text, timedOut ? status : statusOf(outCode), retryAfterSec));
        return;
      }
      this.client.end(this.takeOut() + this.req.wire.streamError(code, fromUpstream ?? message, status, retryAfterSec));
      return;
    }
    const unserved = code === 'endpoint_not_served' ? this.req.family.answerWhenUnserved?.(this.req) : undefined;
    if (unserved) {
      // No route can serve this family; the family answers itself (count_tokens' estimate).
      this.client.send(200, [...this.baseHeaders, ...unserved.headers, ['content-type', 'application/json']], unserved.body);
      return;
    }
    const headers: Array<readonly [string, string]> = [...this.baseHeaders, ['content-type', 'application/json']];
    if (retryAfterSec !== null) headers.push(['retry-after', String(retryAfterSec)]);
    const passed = status >= 400 && status < 500 && PASS_THROUGH_CODES.has(code) ? this.req.wire.passThroughBody(upstreamBody) : null;
    // Typed by the code's catalogue status; the status line carries `status`.
    // A capability error carries its own status (400 or 501), which types it.
    this.client.send(status, headers, passed ?? this.req.wire.errorBody(code, message, null, code === 'target_cannot_serve' ? status : statusOf(code), retryAfterSec));
  }

  private finish(md: RoutingMetadata): void {
    if (this.over) return;
    this.over = true;
    this.deadlines.clear();
    // Attempts still running are aborted; a finished stream may still drain its body after
    // [DONE] (closed already), which keeps its connection reusable.
    for (const att of this.attempts.values()) if (!att.closed) this.closeAttempt(att.id, true);
    this.releaseAllShared();
    if (this.client.open) {
      if (md.status === 'ok' && this.req.stream && this.committed) this.client.end(this.takeOut() + this.req.wire.streamEnd);
      else if (!this.client.headersSent) this.client.send(500, [...this.baseHeaders, ['content-type', 'application/json']], this.req.wire.errorBody('internal_error', 'The request ended without a response.', null, 500, null));
    }
    const keep = this.meta.keepResponse;
    if (keep && md.status === 'ok' && this.committed?.response) void keep(this.committed.response, this.committed.target.endpointId);
    // The per-request line is built only when it will be written (the default level is warn).
    if (this.ctx.log.isLevelEnabled('info')) logRequestLine(this.ctx.log, md, { callerId: this.caller.id, startedAtMs: this.startedAtMs, nowMs: this.ctx.now(), cut: this.cut, errorDetail: this.errorDetail });
    this.report(md);
    this.meta.released();
  }
}
