// Conversations of auto models (seed 000 "Auto 模型", "会话"): the key, idle timeout and cap, and
// the router's session rules — a tool loop stays on its model unless it can no longer serve, a
// new user turn ranks again, and thinking is stripped once a conversation changed models.
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { AutoRouter, AutoSessions, autoSessionKey, checkAutoBlock, openingMessagesHash, parseModelsConfig, type AutoCandidateWorld, type AutoModelFacts, type AutoRequest } from '../../../core/index.ts';

describe('conversation key', () => {
  it('separates caller, declared session and opening messages', () => {
    const h = openingMessagesHash([{ role: 'system', content: 's' }, { role: 'user', content: 'hi' }]);
    expect(autoSessionKey('c', 's', h)).not.toBe(autoSessionKey('c', null, h));
    expect(autoSessionKey('c', 's', h)).not.toBe(autoSessionKey('d', 's', h));
    expect(autoSessionKey('a|1', 'b', h)).not.toBe(autoSessionKey('a', '1|b', h));
  });

  it('the opening is everything up to the first user message: later turns keep the hash, another opening does not', () => {
    const opening = [{ role: 'system', content: 's' }, { role: 'user', content: 'task' }];
    const h = openingMessagesHash(opening);
    expect(openingMessagesHash([...opening, { role: 'assistant', content: 'x' }, { role: 'user', content: 'more' }])).toBe(h);
    expect(openingMessagesHash([{ role: 'system', content: 's' }, { role: 'user', content: 'sub-agent task' }])).not.toBe(h);
    expect(openingMessagesHash(opening.slice(1), 'sys')).not.toBe(openingMessagesHash(opening.slice(1)));
  });
});

describe('AutoSessions', () => {
  it('forgets an idle entry after the timeout', () => {
    const s = new AutoSessions(1000, 10);
    s.record('k', 'auto-p', 'a', 0);
    expect(s.get('k', 1000)).not.toBeNull();
    expect(s.get('k', 2001)).toBeNull();
  });

  it('refuses bad bounds', () => {
    expect(() => new AutoSessions(0, 1)).toThrow(/idleTimeoutMs/);
    expect(() => new AutoSessions(1, 0)).toThrow(/maxSessions/);
  });

  it('property: the table never exceeds its cap, evicts least recently used, and stays ordered', () => {
    fc.assert(
      fc.property(fc.integer({ min: 1, max: 5 }), fc.array(fc.tuple(fc.integer({ min: 0, max: 9 }), fc.boolean()), { maxLength: 60 }), (cap, ops) => {
        const s = new AutoSessions(1e9, cap);
        const order: string[] = [];
        let t = 0;
        for (const [k, read] of ops) {
          const key = `k${k}`;
          t++;
          if (read) {
            expect(s.get(key, t) !== null).toBe(order.includes(key));
          } else {
            s.record(key, 'auto-p', 'm', t);
            if (order.includes(key)) order.splice(order.indexOf(key), 1);
            order.push(key);
            while (order.length > cap) order.shift();
          }
          s.invariants();
          expect(s.size).toBeLessThanOrEqual(cap);
        }
      }),
    );
  });

  it('marks a conversation switched once a second model serves it', () => {
    const s = new AutoSessions(1e6, 10);
    expect(s.record('k', 'auto-p', 'a', 0).switched).toBe(false);
    expect(s.record('k', 'auto-p', 'a', 1).switched).toBe(false);
    expect(s.record('k', 'auto-p', 'b', 2).switched).toBe(true);
    expect(s.record('k', 'auto-p', 'b', 3).switched).toBe(true);
  });
});

describe('AutoRouter sessions', () => {
  const models = parseModelsConfig({ models: [{ id: 'pref', route: [{ base_url: 'sim://a' }] }, { id: 'backup', route: [{ base_url: 'sim://b' }] }] }).models;
  const config = checkAutoBlock({ session: { idle_timeout_seconds: 60, max_sessions: 100 }, profiles: { p: { candidates: [{ model: 'pref' }, { model: 'backup' }] } } }, models).config!;
  const f = (id: string): AutoModelFacts => ({ id, routes: [{ acceptsText: true, modalities: ['text'], contextLength: null }], supportsTools: true, reasoningEfforts: null, maxOutputTokens: null });
  const worldWith = (down: string[]): AutoCandidateWorld => ({ model: (n) => f(n), mayUse: () => true, admits: (id) => !down.includes(id) });
  const req = (toolLoop: boolean): AutoRequest => ({ callerId: 'c', sessionId: 's', openingHash: 'h', toolLoop, inputTokens: 10, maxTokens: null, modalities: [], hasTools: true, reasoningEffort: null });

  it('a tool loop stays on its model; a new user turn ranks again and returns to the preferred model', () => {
    const r = new AutoRouter(config);
    // The preferred model is down: the conversation starts on the backup.
    const d1 = r.decide('auto-p', req(false), worldWith(['pref']), 0);
    expect(d1).toMatchObject({ kind: 'serve', model: 'backup', metadata: { sessionAction: 'new', skips: [{ model: 'pref', reason: 'no_admitting_endpoint' }] } });
    // The preferred one recovers, but the tool loop stays where it is.
    const d2 = r.decide('auto-p', req(true), worldWith([]), 1000);
    expect(d2).toMatchObject({ kind: 'serve', model: 'backup', stripThinking: 'none', metadata: { sessionAction: 'kept' } });
    // A new user turn ranks again: back on the preferred model, history from another model.
    const d3 = r.decide('auto-p', req(false), worldWith([]), 2000);
    expect(d3).toMatchObject({ kind: 'serve', model: 'pref', stripThinking: 'all', metadata: { sessionAction: 'ranked' } });
    // Tool loop on the preferred model now: its own last step keeps its thinking.
    const d4 = r.decide('auto-p', req(true), worldWith([]), 3000);
    expect(d4).toMatchObject({ kind: 'serve', model: 'pref', stripThinking: 'all_but_last_step', metadata: { sessionAction: 'kept' } });
  });

  it('a tool loop moves when its model can no longer serve', () => {
    const r = new AutoRouter(config);
    r.decide('auto-p', req(false), worldWith([]), 0);
    const d = r.decide('auto-p', req(true), worldWith(['pref']), 1000);
    expect(d).toMatchObject({ kind: 'serve', model: 'backup', stripThinking: 'all', metadata: { sessionAction: 'switched', skips: [{ model: 'pref', reason: 'no_admitting_endpoint' }] } });
  });

  it('an idle conversation is new again', () => {
    const r = new AutoRouter(config);
    r.decide('auto-p', req(false), worldWith(['pref']), 0);
    const d = r.decide('auto-p', req(true), worldWith([]), 61_000);
    expect(d).toMatchObject({ kind: 'serve', model: 'pref', metadata: { sessionAction: 'new' } });
  });

  it('a reload with the same bounds keeps the conversations', () => {
    const r1 = new AutoRouter(config);
    r1.decide('auto-p', req(false), worldWith(['pref']), 0);
    const r2 = new AutoRouter(config, r1);
    expect(r2.decide('auto-p', req(true), worldWith([]), 10).kind === 'serve' && r2.sessions.size).toBe(1);
    expect(r2.decide('auto-p', req(true), worldWith([]), 20)).toMatchObject({ model: 'backup' });
  });

  it('records the profile, its version and ordered candidates', () => {
    const d = new AutoRouter(config).decide('auto-p', req(false), worldWith([]), 0);
    expect(d.metadata).toMatchObject({ profile: 'p', profileVersion: config.profiles.get('auto-p')!.version, requested: 'auto-p', candidates: ['pref', 'backup'], chosen: 'pref' });
  });

  it('a rejection records nothing in the table', () => {
    const r = new AutoRouter(config);
    expect(r.decide('auto-p', req(false), worldWith(['pref', 'backup']), 0)).toMatchObject({ kind: 'reject', status: 503 });
    expect(r.sessions.size).toBe(0);
  });
});

describe('Claude Code permission checks', () => {
  const models = parseModelsConfig({ models: [{ id: 'pref', route: [{ base_url: 'sim://a' }] }, { id: 'backup', route: [{ base_url: 'sim://b' }] }] }).models;
  const config = checkAutoBlock({ session: { idle_timeout_seconds: 60, max_sessions: 100 }, profiles: { p: { candidates: [{ model: 'pref' }, { model: 'backup' }] } } }, models).config!;
  const f = (id: string): AutoModelFacts => ({ id, routes: [{ acceptsText: true, modalities: ['text'], contextLength: null }], supportsTools: true, reasoningEfforts: null, maxOutputTokens: null });
  const worldWith = (down: string[]): AutoCandidateWorld => ({ model: (n) => f(n), mayUse: () => true, admits: (id) => !down.includes(id) });
  const main = (toolLoop: boolean): AutoRequest => ({ callerId: 'c', sessionId: 's', openingHash: 'main', toolLoop, inputTokens: 10, maxTokens: null, modalities: [], hasTools: true, reasoningEffort: null });
  /** A permission check: same caller and session, an opening of its own. */
  const check = (over: Partial<AutoRequest> = {}): AutoRequest => ({ ...main(false), openingHash: 'check', hasTools: false, permissionCheck: true, ...over });
  /** The table's entries as the router sees them (key → entry), for before/after comparisons. */
  const table = (r: AutoRouter) => JSON.stringify(['main', 'check'].map((h) => r.sessions.peek(autoSessionKey('c', 's', h), 1e12)));

  it('is served by the model the session\'s conversation is on, not the preferred one, and records nothing', () => {
    const r = new AutoRouter(config);
    r.decide('auto-p', main(false), worldWith(['pref']), 0); // the conversation fell back to the backup
    const before = table(r);
    const d = r.decide('auto-p', check(), worldWith([]), 1000);
    expect(d).toMatchObject({ kind: 'serve', model: 'backup', stripThinking: 'none', metadata: { sessionAction: 'permission_check', skips: [] } });
    expect(table(r)).toBe(before);
    expect(r.sessions.size).toBe(1);
    // The conversation's own last use is unchanged: it still times out from its own turn.
    expect(r.sessions.peek(autoSessionKey('c', 's', 'main'), 60_500)).toBeNull();
  });

  it('uses its own conversation when it has one, and leaves it unmarked even when another model serves', () => {
    const r = new AutoRouter(config);
    r.decide('auto-p', main(false), worldWith([]), 0); // main on pref
    r.decide('auto-p', { ...main(false), openingHash: 'check' }, worldWith(['pref']), 10); // the check's conversation on backup
    expect(r.decide('auto-p', check(), worldWith([]), 20)).toMatchObject({ model: 'backup' });
    // Its model is down: another candidate serves, but the entry is not switched or moved.
    const d = r.decide('auto-p', check(), worldWith(['backup']), 30);
    expect(d).toMatchObject({ kind: 'serve', model: 'pref', stripThinking: 'all', metadata: { sessionAction: 'permission_check', skips: [{ model: 'backup', reason: 'no_admitting_endpoint' }] } });
    expect(r.sessions.peek(autoSessionKey('c', 's', 'check'), 40)).toMatchObject({ model: 'backup', switched: false, lastUsedMs: 10 });
  });

  it('without a conversation to follow (no session, or a new one) the profile\'s order decides, and nothing is created', () => {
    const r = new AutoRouter(config);
    r.decide('auto-p', main(false), worldWith(['pref']), 0);
    expect(r.decide('auto-p', check({ sessionId: null }), worldWith([]), 10)).toMatchObject({ model: 'pref', metadata: { sessionAction: 'permission_check' } });
    expect(r.decide('auto-p', check({ sessionId: 'other' }), worldWith([]), 10)).toMatchObject({ model: 'pref' });
    expect(r.decide('auto-p', check({ callerId: 'someone-else' }), worldWith([]), 10)).toMatchObject({ model: 'pref' });
    expect(r.sessions.size).toBe(1);
  });

  it('a rejected check records nothing either', () => {
    const r = new AutoRouter(config);
    expect(r.decide('auto-p', check(), worldWith(['pref', 'backup']), 0)).toMatchObject({ kind: 'reject', status: 503, metadata: { sessionAction: 'permission_check' } });
    expect(r.sessions.size).toBe(0);
  });

  it('property: checks interleaved with conversation turns leave every decision of the turns as without them', () => {
    fc.assert(
      fc.property(fc.array(fc.record({ isCheck: fc.boolean(), toolLoop: fc.boolean(), opening: fc.constantFrom('main', 'sub'), down: fc.subarray(['pref', 'backup']) }), { maxLength: 40 }), (steps) => {
        const withChecks = new AutoRouter(config);
        const without = new AutoRouter(config);
        let t = 0;
        for (const s of steps) {
          t += 1000;
          const w = worldWith(s.down);
          if (s.isCheck) {
            withChecks.decide('auto-p', check(), w, t);
            withChecks.sessions.invariants();
            continue;
          }
          const q = { ...main(s.toolLoop), openingHash: s.opening };
          expect(withChecks.decide('auto-p', q, w, t)).toEqual(without.decide('auto-p', q, w, t));
        }
      }),
    );
  });
});

describe('AutoSessions per-session lookup', () => {
  it('finds the conversation last recorded in a session, forgets it with its entry, and never touches the table', () => {
    const s = new AutoSessions(1000, 2);
    const k = (h: string, session = 's') => autoSessionKey('c', session, h);
    s.record(k('a'), 'auto-p', 'm1', 0);
    s.record(k('b'), 'auto-p', 'm2', 10);
    expect(s.latestInSession('c', 's', 20)).toMatchObject({ key: k('b'), entry: { model: 'm2' } });
    expect(s.latestInSession('c', null, 20)).toBeNull();
    s.record(k('x', 't'), 'auto-p', 'm3', 30); // the cap evicts 'a'
    expect(s.latestInSession('c', 's', 40)).toMatchObject({ key: k('b') });
    s.record(k('y', 'u'), 'auto-p', 'm4', 50); // evicts 'b'
    expect(s.latestInSession('c', 's', 60)).toBeNull();
    s.invariants();
    expect(s.latestInSession('c', 'u', 2000)).toBeNull(); // idle past the timeout
    expect(s.size).toBe(2); // peeking dropped nothing
  });
});
