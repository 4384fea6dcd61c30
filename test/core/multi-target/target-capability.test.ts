// Seed 003 "支持的端点": on the families every target must serve, the walk reaching a target
// whose route does not serve the family ends the request (non-retryable, 400 or 501 by the
// rule) instead of skipping it; and a request that must not be replayed ends on the first
// answered failure, for aliases and router models alike.
import { describe, expect, it } from 'vitest';
import { RoutingCore, parseModelsConfig, type Outcome, type TargetMustServe } from '../../../core/index.ts';
import { req, runOne, seeded } from '../harness.ts';

const RULE: TargetMustServe = { status: 501, notProviderStatus: 400, providerKinds: ['openai_compat'] };
const s500: Outcome = { kind: 'http_status', status: 500, errorClass: 'server_error', retryAfterMs: null };
const reset: Outcome = { kind: 'transport', cause: 'reset' };

function core(): RoutingCore {
  return new RoutingCore(
    parseModelsConfig({
      models: [
        { id: 'dead', route: [{ base_url: 'sim://dead' }] },
        { id: 'chat-only', route: [{ base_url: 'sim://chat', endpoints: ['chat'] }] },
        { id: 'other-kind', route: [{ kind: 'anthropic', base_url: 'sim://claude', endpoints: ['chat'] }] },
        { id: 'any', route: [{ base_url: 'sim://any' }] },
        { id: 'g', routing: { targets: [{ model: 'dead' }, { model: 'chat-only' }, { model: 'any' }], retries: 0 } },
        { id: 'k', routing: { targets: [{ model: 'other-kind' }, { model: 'any' }] } },
        { id: 'r', router: 'round_robin', route: [{ base_url: 'sim://r1' }, { base_url: 'sim://r2' }] },
      ],
    }),
  );
}

describe('targets that cannot serve a family every target must serve', () => {
  it('end the request on reaching one, after a retryable failure, with the capability status; the next target is not tried', () => {
    const tried: string[] = [];
    const r = runOne(core(), 0, seeded(1), (id) => (tried.push(id), id === 'dead:dead' ? reset : { kind: 'ok' }), req({ model: 'g', endpoint: 'embedding', targetMustServe: RULE }));
    expect(tried).toEqual(['dead:dead']);
    expect(r.error).toMatchObject({ status: 501, code: 'target_cannot_serve' });
    expect(r.error!.message).toContain('model `g` (target `chat-only`)');
  });

  it("a target whose kind cannot serve the family gets the 'not a provider' status", () => {
    const r = runOne(core(), 0, seeded(1), () => ({ kind: 'ok' }), req({ model: 'k', endpoint: 'rerank', targetMustServe: RULE }));
    expect(r.error).toMatchObject({ status: 400, code: 'target_cannot_serve' });
    expect(r.error!.message).toContain('model `k` (target `other-kind`) is not a provider');
  });

  it('without the rule such targets are skipped, as before', () => {
    const r = runOne(core(), 0, seeded(1), (id) => (id === 'dead:dead' ? reset : { kind: 'ok' }), req({ model: 'g', endpoint: 'embedding' }));
    expect(r.error).toBeUndefined();
    expect(r.done.metadata.endpointId).toBe('any:any');
  });
});

describe('requests that must not be replayed after an answer', () => {
  it('an alias ends on the first answered failure; a transport failure still fails over', () => {
    const tried: string[] = [];
    const answered = runOne(core(), 0, seeded(1), (id) => (tried.push(id), id === 'dead:dead' ? s500 : { kind: 'ok' }), req({ model: 'g', endpoint: 'chat', replayAnswered: false }));
    expect(tried).toEqual(['dead:dead']);
    expect(answered.error).toMatchObject({ status: 502 });
    const unanswered = runOne(core(), 0, seeded(1), (id) => (id === 'dead:dead' ? reset : { kind: 'ok' }), req({ model: 'g', endpoint: 'chat', replayAnswered: false }));
    expect(unanswered.error).toBeUndefined();
  });

  it('a router model does not fail over after an answered failure', () => {
    const tried: string[] = [];
    const r = runOne(core(), 0, seeded(1), (id) => (tried.push(id), s500), req({ model: 'r', replayAnswered: false }));
    expect(tried).toHaveLength(1);
    expect(r.error).toMatchObject({ status: 502 });
    const usual: string[] = [];
    runOne(core(), 0, seeded(1), (id) => (usual.push(id), s500), req({ model: 'r' }));
    expect(usual.length).toBeGreaterThan(1);
  });
});
