// The admission gates one attempt of any model kind asks, and the small request-life pieces both
// families share: the deadline book and the commit rule.
import { describe, expect, it } from 'vitest';
import fc from 'fast-check';
import { buildAdmissions, type AdmissionState } from '../../../core/admission/admission.ts';
import type { AdmissionGate } from '../../../core/admission/gate.ts';
import { HealthRegistry } from '../../../core/health/health-registry.ts';
import { RetryAfterTable } from '../../../core/health/retry-after.ts';
import { CooldownRegistry } from '../../../core/health/cooldown.ts';
import { OutboundLimiter } from '../../../core/outbound/outbound-limiter.ts';
import { EngineHold } from '../../../core/outbound/engine-hold.ts';
import { TargetRateLimit } from '../../../core/multi-target/target-rate-limit.ts';
import { Admission, type TicketHolder } from '../../../core/admission/admission.ts';
import { DeadlineBook, deadlineAttempt, deadlineKind, type DeadlineKind } from '../../../core/request/deadline-book.ts';
import { commitsAt } from '../../../core/request/policy/commit.ts';

function state(limit = 1): AdmissionState {
  return {
    health: new HealthRegistry({}),
    retryAfter: new RetryAfterTable(),
    cooldowns: new CooldownRegistry(),
    limiter: new OutboundLimiter({ enabled: true, initialLimit: limit, maxLimit: 4, probeSuccessInterval: 10 }, () => {}),
    hold: new EngineHold(() => {}),
    outboundLimitEnabled: true,
  };
}

const holder = (): TicketHolder => ({ ticket: null, ticketGate: null });

const remote = { endpointId: 'm/openai/api.example', outboundKey: 'openai|k1' };
const local = { endpointId: 'm/vllm/local', outboundKey: null };

describe('admission gates', () => {
  it('Retry-After refuses an endpoint until its time, for routers and aliases alike', () => {
    const s = state();
    const { router, alias } = buildAdmissions(s);
    router.gates.retryAfter.note(remote.endpointId, { kind: 'http_status', status: 429, errorClass: 'rate_limited', retryAfterMs: 2000 }, 1000);
    for (const adm of [router, alias]) {
      expect(adm.refusal(remote, 1500)?.name).toBe('retry_after');
      expect(adm.gates.retryAfter.retryInMs(remote, 1500)).toBe(1500);
    }
    expect(alias.admits(remote, 3000)).toBe(true);
    expect(router.admits(remote, 3000)).toBe(true);
  });

  it('a bare 503 sets no wait; a 503 with Retry-After does, and says 503', () => {
    const { router } = buildAdmissions(state());
    router.gates.retryAfter.note('a', { kind: 'http_status', status: 503, errorClass: 'server_error', retryAfterMs: null }, 0);
    expect(router.admits({ endpointId: 'a' }, 1)).toBe(true);
    router.gates.retryAfter.note('a', { kind: 'http_status', status: 503, errorClass: 'overloaded', retryAfterMs: 1000 }, 0);
    expect(router.admits({ endpointId: 'a' }, 1)).toBe(false);
    expect(router.gates.retryAfter.statusOf('a')).toBe(503);
  });

  it('cooldown refuses for aliases only, and can be ignored by name (try_anyway)', () => {
    const s = state();
    s.cooldowns.configure('t', { consecutiveFailures: 1, durationMs: 5000, triggerStatuses: new Set([500]) } as never);
    s.cooldowns.record('t', { kind: 'transport', cause: 'reset' }, 0);
    const { router, alias } = buildAdmissions(s);
    expect(s.cooldowns.active('t', 10)).toBe(true);
    expect(alias.refusal({ endpointId: 't' }, 10)?.name).toBe('cooldown');
    expect(alias.admits({ endpointId: 't' }, 10, 'cooldown')).toBe(true);
    expect(router.admits({ endpointId: 't' }, 10)).toBe(true);
  });

  it('a target over its rate limit is refused by take, and admitted again after refill', () => {
    const { alias } = buildAdmissions(state());
    const t = { endpointId: 't', rateLimit: new TargetRateLimit(60, 1) };
    expect(alias.gates.rateLimit.take(t, 0)).toBe(true);
    expect(alias.gates.rateLimit.take(t, 0)).toBe(false);
    expect(alias.gates.rateLimit.retryInMs(t, 0)).toBe(1000);
    expect(alias.gates.rateLimit.admits(t, 1000)).toBe(true);
    expect(alias.gates.rateLimit.take({ endpointId: 'r' }, 0)).toBe(true); // routes have no limit
  });

  it('both kinds queue on the same outbound slots of a provider key', () => {
    const s = state(1);
    const { router, alias } = buildAdmissions(s);
    const a = holder();
    const b = holder();
    expect(router.queue(remote, null, 'life-a', 1, a)).toBe(true);
    expect(alias.queue(remote, null, 'life-b', 1, b)).toBe(true);
    expect(a.ticket!.state).toBe('held');
    expect(b.ticket!.state).toBe('queued');
    expect(router.release(a, { kind: 'ok' })).toBe(true);
    expect(b.ticket!.state).toBe('held');
    expect(router.release(a, null)).toBe(false); // idempotent
    alias.release(b, null);
    s.limiter.invariants();
  });

  it('engine hold applies to local routes with a limit, on the router kind only', () => {
    const { router, alias } = buildAdmissions(state());
    const h = holder();
    expect(router.queue(local, null, 'x', 1, h)).toBe(false);
    expect(router.queue(local, 2, 'x', 1, h)).toBe(true);
    expect(h.ticketGate!.name).toBe('engine_hold');
    expect(h.ticketGate!.releasedAtFirstOutput).toBe(true);
    expect(alias.queue(local, 2, 'x', 2, holder())).toBe(false);
    router.release(h, null);
  });

  it('a new check gate joins every attempt without touching the life', () => {
    const base = buildAdmissions(state()).router;
    const keyPool: AdmissionGate = { name: 'outbound_slot', admits: (t) => t.endpointId !== 'dry', retryInMs: () => Number.POSITIVE_INFINITY };
    const adm = new Admission({ ...base.gates, checks: [...base.gates.checks, keyPool] });
    expect(adm.refusal({ endpointId: 'dry' }, 0)).toBe(keyPool);
    expect(adm.admits({ endpointId: 'wet' }, 0)).toBe(true);
  });
});

describe('deadline book', () => {
  const KINDS: DeadlineKind[] = ['overall', 'queue', 'headers', 'total', 'idle', 'engine_wait', 'hedge', 'backoff'];
  it('takes back what was armed, once; disarmed deadlines are ignored', () => {
    fc.assert(
      fc.property(fc.array(fc.tuple(fc.constantFrom(...KINDS), fc.integer({ min: 0, max: 50 })), { minLength: 1, maxLength: 30 }), (arms) => {
        const book = new DeadlineBook();
        const ids = arms.map(([k, a], i) => book.arm(k, a, i).deadlineId);
        expect(new Set(ids).size).toBe(ids.length);
        const a0 = arms[0]![1];
        if (a0 > 0) book.disarmAttempt(a0);
        arms.forEach(([k, a], i) => {
          const p = book.take(ids[i]!);
          if (a0 > 0 && a === a0) expect(p).toBe(0);
          else {
            expect(deadlineKind(p)).toBe(k);
            expect(deadlineAttempt(p)).toBe(a);
          }
          expect(book.take(ids[i]!)).toBe(0);
        });
      }),
    );
  });

  it('disarms one kind of one attempt', () => {
    const book = new DeadlineBook();
    const h = book.arm('headers', 3, 10).deadlineId;
    const i = book.arm('idle', 3, 20).deadlineId;
    book.disarm(3, 'headers');
    expect(book.armed(h)).toBe(false);
    expect(book.armed(i)).toBe(true);
  });
});

describe('commit rule', () => {
  it('router: a stream commits at its first token; aliases without a first-chunk wait at the response start', () => {
    expect(commitsAt('first_token', 'first_output', true)).toBe(false);
    expect(commitsAt('first_token', 'first_token', true)).toBe(true);
    expect(commitsAt('response_start', 'first_output', true)).toBe(true);
    expect(commitsAt('response_start', 'first_output', false)).toBe(false);
    expect(commitsAt('first_token', 'first_token', false)).toBe(false);
    expect(commitsAt('first_token', 'finished', false)).toBe(true);
  });
});
