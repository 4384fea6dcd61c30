// Auto profiles (seed 000 "Auto 模型"): the block's checks, each skip rule, the statuses when no
// candidate serves, the effort rule, and the invariant that the chosen candidate is the first in
// the profile's order that passes every check.
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import {
  autoContextNeedTokens,
  autoModelFacts,
  autoWorld,
  checkAutoBlock,
  isAutoModelName,
  parseModelsConfig,
  RoutingCore,
  selectCandidate,
  skipReason,
  type AutoCandidateWorld,
  type AutoModelFacts,
  type AutoProfile,
  type AutoRequestFacts,
} from '../../../core/index.ts';

const route = (contextLength: number | null, modalities: Array<'text' | 'image' | 'audio'> = ['text']) => ({ acceptsText: modalities.includes('text'), modalities, contextLength });

function facts(id: string, over: Partial<AutoModelFacts> = {}): AutoModelFacts {
  return { id, routes: [route(null)], supportsTools: true, reasoningEfforts: null, maxOutputTokens: null, ...over };
}

function world(models: AutoModelFacts[], opts: { denied?: string[]; down?: string[] } = {}): AutoCandidateWorld {
  const by = new Map(models.map((m) => [m.id, m]));
  return { model: (n) => by.get(n) ?? null, mayUse: (n) => !(opts.denied ?? []).includes(n), admits: (id) => !(opts.down ?? []).includes(id) };
}

function profile(...models: Array<string | [string, 'low' | 'medium' | 'high']>): AutoProfile {
  return {
    name: 'p',
    servedName: 'auto-p',
    version: 'v',
    candidates: models.map((m) => (typeof m === 'string' ? { model: m, reasoningEffort: null } : { model: m[0], reasoningEffort: m[1] })),
  };
}

const plain: AutoRequestFacts = { inputTokens: 100, maxTokens: null, modalities: [], hasTools: false, reasoningEffort: null };

describe('checkAutoBlock', () => {
  const models = parseModelsConfig({
    models: [
      { id: 'big', aliases: ['big-alias'], route: [{ base_url: 'sim://a' }], reasoning_efforts: ['low', 'high'] },
      { id: 'small', route: [{ base_url: 'sim://b' }] },
    ],
  }).models;

  it('serves each profile as auto-<name> and the default profile as auto', () => {
    const r = checkAutoBlock({ default_profile: 'balance', profiles: { balance: { candidates: [{ model: 'small' }, { model: 'big' }] } } }, models);
    expect(r.problems).toEqual([]);
    expect([...r.config!.profiles.keys()]).toEqual(['auto-balance', 'auto']);
    expect(r.config!.profiles.get('auto')).toBe(r.config!.profiles.get('auto-balance'));
    expect(r.config!.sessionIdleTimeoutSec).toBe(1800);
    expect(r.config!.maxSessions).toBe(10_000);
  });

  it('an absent block is off without a word', () => {
    expect(checkAutoBlock(undefined, models)).toEqual({ config: null, problems: [], warnings: [] });
  });

  it('an invalid block is off and lists every problem', () => {
    const r = checkAutoBlock({ default_profile: 'nope', session: { idle_timeout_seconds: -1 }, profiles: { Bad: { candidates: [] } } }, models);
    expect(r.config).toBeNull();
    expect(r.problems.length).toBeGreaterThanOrEqual(2);
    expect(r.problems.join('\n')).toMatch(/idle_timeout_seconds/);
    expect(r.problems.join('\n')).toMatch(/profiles\.Bad/);
  });

  it('a default_profile that is not a profile turns auto off', () => {
    const r = checkAutoBlock({ default_profile: 'nope', profiles: { fast: { candidates: [{ model: 'small' }] } } }, models);
    expect(r.config).toBeNull();
    expect(r.problems[0]).toMatch(/default_profile: 'nope' is not a profile; profiles: fast/);
  });

  it('a profile named like a registered model turns auto off', () => {
    const withAutoModel = parseModelsConfig({ models: [...models, { id: 'auto-fast', route: [{ base_url: 'sim://c' }] }] }).models;
    const r = checkAutoBlock({ profiles: { fast: { candidates: [{ model: 'small' }] } } }, withAutoModel);
    expect(r.config).toBeNull();
    expect(r.problems[0]).toMatch(/'auto-fast' is a registered model/);
    expect(checkAutoBlock({ profiles: { fast: { candidates: [{ model: 'small' }] } } }, models, ['auto-fast']).config).toBeNull();
  });

  it('an unregistered candidate or an undeclared effort is only a warning', () => {
    const r = checkAutoBlock({ profiles: { fast: { candidates: [{ model: 'ghost' }, { model: 'big-alias', reasoning_effort: 'medium' }, { model: 'small', reasoning_effort: 'high' }] } } }, models);
    expect(r.config).not.toBeNull();
    expect(r.warnings).toHaveLength(2);
    expect(r.warnings[0]).toMatch(/'ghost' is not registered/);
    expect(r.warnings[1]).toMatch(/declares reasoning_efforts \[low, high\], not 'medium'/);
  });

  it('the version changes with the profile', () => {
    const a = checkAutoBlock({ profiles: { p: { candidates: [{ model: 'small' }] } } }, models).config!;
    const b = checkAutoBlock({ profiles: { p: { candidates: [{ model: 'small' }, { model: 'big' }] } } }, models).config!;
    expect(a.profiles.get('auto-p')!.version).not.toBe(b.profiles.get('auto-p')!.version);
  });

  it('auto names are auto and auto-*', () => {
    expect(isAutoModelName('auto')).toBe(true);
    expect(isAutoModelName('auto-x')).toBe(true);
    expect(isAutoModelName('autopilot')).toBe(false);
  });
});

describe('skip rules', () => {
  it('caller may not use the model', () => {
    expect(skipReason({ model: 'a', reasoningEffort: null }, plain, world([facts('a')], { denied: ['a'] }))).toBe('caller_not_allowed');
  });
  it('not registered', () => {
    expect(skipReason({ model: 'ghost', reasoningEffort: null }, plain, world([]))).toBe('not_registered');
  });
  it('no admitting endpoint', () => {
    expect(skipReason({ model: 'a', reasoningEffort: null }, plain, world([facts('a')], { down: ['a'] }))).toBe('no_admitting_endpoint');
  });
  it('tools unsupported', () => {
    expect(skipReason({ model: 'a', reasoningEffort: null }, { ...plain, hasTools: true }, world([facts('a', { supportsTools: false })]))).toBe('tools_unsupported');
    expect(skipReason({ model: 'a', reasoningEffort: null }, { ...plain, hasTools: true }, world([facts('a')]))).toBeNull();
  });
  it('input modality unsupported unless some route accepts it', () => {
    const req = { ...plain, modalities: ['image' as const] };
    expect(skipReason({ model: 'a', reasoningEffort: null }, req, world([facts('a')]))).toBe('modality_unsupported');
    expect(skipReason({ model: 'a', reasoningEffort: null }, req, world([facts('a', { routes: [route(null), route(null, ['text', 'image'])] })]))).toBeNull();
  });
  it('context: prompt × 1.25 plus max_tokens capped at the output limit, against the smallest window', () => {
    const m = facts('a', { routes: [route(10_000), route(2_000)], maxOutputTokens: 500 });
    expect(autoContextNeedTokens({ ...plain, inputTokens: 1000, maxTokens: 4000 }, m)).toBe(1250 + 500);
    expect(skipReason({ model: 'a', reasoningEffort: null }, { ...plain, inputTokens: 1000, maxTokens: 4000 }, world([m]))).toBeNull(); // 1750 ≤ 2000
    expect(skipReason({ model: 'a', reasoningEffort: null }, { ...plain, inputTokens: 1300, maxTokens: 4000 }, world([m]))).toBe('context_window'); // 1625 + 500 > 2000
    expect(skipReason({ model: 'a', reasoningEffort: null }, { ...plain, inputTokens: 1e6 }, world([facts('a')]))).toBeNull(); // no window declared
  });
  it('reasoning effort: the request\'s own, else the candidate\'s, must be declared', () => {
    const m = facts('a', { reasoningEfforts: ['low'] });
    expect(skipReason({ model: 'a', reasoningEffort: 'high' }, plain, world([m]))).toBe('reasoning_effort_unsupported');
    expect(skipReason({ model: 'a', reasoningEffort: 'high' }, { ...plain, reasoningEffort: 'low' }, world([m]))).toBeNull();
    expect(skipReason({ model: 'a', reasoningEffort: 'high' }, plain, world([facts('a')]))).toBeNull(); // undeclared
  });
});

describe('selectCandidate', () => {
  it('the candidate\'s effort applies only when the request sets none', () => {
    const w = world([facts('a')]);
    const s1 = selectCandidate(profile(['a', 'high']), plain, w);
    expect(s1.kind === 'serve' && s1.applyEffort).toBe('high');
    const s2 = selectCandidate(profile(['a', 'high']), { ...plain, reasoningEffort: 'low' }, w);
    expect(s2.kind === 'serve' && s2.applyEffort).toBeNull();
  });

  it('falls back past a candidate whose window is too small, recording why', () => {
    const s = selectCandidate(profile('small', 'big'), { ...plain, inputTokens: 2000 }, world([facts('small', { routes: [route(1000)] }), facts('big', { routes: [route(100_000)] })]));
    expect(s).toMatchObject({ kind: 'serve', index: 1, skips: [{ model: 'small', reason: 'context_window' }] });
  });

  it('404 when the caller may use no candidate', () => {
    const s = selectCandidate(profile('a', 'ghost'), plain, world([facts('a')], { denied: ['a'] }));
    expect(s).toMatchObject({ kind: 'reject', status: 404, code: 'model_not_found' });
  });

  it('503 when the usable ones that accept the request have no admitting endpoint', () => {
    const s = selectCandidate(profile('a', 'b'), { ...plain, hasTools: true }, world([facts('a', { supportsTools: false }), facts('b')], { down: ['b'] }));
    expect(s).toMatchObject({ kind: 'reject', status: 503, code: 'all_candidates_unavailable' });
  });

  it('400 when every usable model rejects the request, with the reasons and no model names', () => {
    const s = selectCandidate(profile('a', 'b', 'c'), { ...plain, inputTokens: 5000, hasTools: true }, world([facts('a', { routes: [route(100)] }), facts('b', { supportsTools: false }), facts('c')], { denied: ['c'] }));
    expect(s.kind).toBe('reject');
    if (s.kind !== 'reject') return;
    expect(s.status).toBe(400);
    expect(s.message).toMatch(/context window \(it needs about \d+ tokens; the largest window is 100; shorten the prompt or lower max_tokens\)/);
    expect(s.message).toMatch(/tools/);
    expect(s.message).not.toMatch(/'a'|'b'|'c'/);
    expect(s.skips.map((x) => x.reason)).toEqual(['context_window', 'tools_unsupported', 'caller_not_allowed']);
  });

  it('property: the chosen candidate is the first in order that passes every check; every earlier one is skipped with its reason', () => {
    const modelArb = fc.record({
      window: fc.option(fc.integer({ min: 100, max: 5000 }), { nil: null }),
      tools: fc.boolean(),
      image: fc.boolean(),
      efforts: fc.option(fc.subarray(['low', 'medium', 'high']), { nil: null }),
      denied: fc.boolean(),
      down: fc.boolean(),
      registered: fc.boolean(),
      effort: fc.option(fc.constantFrom('low' as const, 'medium' as const, 'high' as const), { nil: null }),
    });
    const reqArb = fc.record({
      inputTokens: fc.integer({ min: 0, max: 4000 }),
      maxTokens: fc.option(fc.integer({ min: 1, max: 2000 }), { nil: null }),
      modalities: fc.constantFrom([] as Array<'image'>, ['image' as const]),
      hasTools: fc.boolean(),
      reasoningEffort: fc.option(fc.constantFrom('low', 'medium', 'high'), { nil: null }),
    });
    fc.assert(
      fc.property(fc.array(modelArb, { minLength: 1, maxLength: 6 }), reqArb, (specs, request) => {
        const models = specs.map((s, i) => facts(`m${i}`, { routes: [route(s.window, s.image ? ['text', 'image'] : ['text'])], supportsTools: s.tools, reasoningEfforts: s.efforts }));
        const w: AutoCandidateWorld = {
          model: (n) => (specs[Number(n.slice(1))]!.registered ? models[Number(n.slice(1))]! : null),
          mayUse: (n) => !specs[Number(n.slice(1))]!.denied,
          admits: (id) => !specs[Number(id.slice(1))]!.down,
        };
        const p = profile(...specs.map((s, i): string | [string, 'low' | 'medium' | 'high'] => (s.effort ? [`m${i}`, s.effort] : `m${i}`)));
        const sel = selectCandidate(p, request, w);
        const passing = p.candidates.findIndex((c) => skipReason(c, request, w) === null);
        if (passing < 0) {
          expect(sel.kind).toBe('reject');
          expect(sel.skips).toHaveLength(p.candidates.length);
          return;
        }
        expect(sel.kind).toBe('serve');
        if (sel.kind !== 'serve') return;
        expect(sel.index).toBe(passing);
        expect(sel.skips.map((s) => s.model)).toEqual(p.candidates.slice(0, passing).map((c) => c.model));
        for (const s of sel.skips) expect(skipReason(p.candidates.find((c) => c.model === s.model)!, request, w)).toBe(s.reason);
      }),
      { numRuns: 300 },
    );
  });
});

describe('autoWorld over a real core', () => {
  const config = parseModelsConfig({
    models: [
      { id: 'a', route: [{ base_url: 'sim://a', weight: 0, context_length: 4096 }], supports_tools: false, max_output_tokens: 1024 },
      { id: 'b', aliases: ['b2'], route: [{ base_url: 'sim://b1', context_length: 8192 }, { base_url: 'sim://b2', context_length: 2048 }] },
    ],
  });
  const core = new RoutingCore(config);
  const f = autoModelFacts(core, config);

  it('reads tools, output limit and routes from the registry, by id and alias', () => {
    expect(f.get('a')).toMatchObject({ id: 'a', supportsTools: false, maxOutputTokens: 1024 });
    expect(f.get('b2')!.id).toBe('b');
    expect(f.get('b')!.routes.map((r) => r.contextLength)).toEqual([8192, 2048]);
  });

  it('a model whose only route has no weight has no admitting endpoint', () => {
    const w = autoWorld(core, f, () => true, 0);
    expect(w.admits('a')).toBe(false);
    expect(w.admits('b')).toBe(true);
  });
});
