// The wire side of auto models: thinking blocks stripped before an Anthropic-native upstream
// (all, or all but the current model's last tool-loop step), the serving model's names masked in
// text for the client, and what the router reads of a body (tool loop, tools, effort, opening).
import { describe, expect, it } from 'vitest';
import { maskServedNames, autoRequestOf, servedAs, stripThinkingBlocks, type AutoServing } from '../../gateway/auto/auto-request.ts';
import { translationFor } from '../../gateway/upstream/anthropic/anthropic-translation.ts';
import { isBodyProblem, readClientRequest, type ClientRequest } from '../../gateway/request-body.ts';
import { RuntimeModelBodySchema } from '../../gateway/admin/route-bodies.ts';

const serving = (over: Partial<AutoServing> = {}): AutoServing => ({
  publicModel: 'auto-balance',
  hiddenNames: ['claude-upstream-name', 'frontier'],
  stripThinking: 'none',
  metadata: { profile: 'balance', profileVersion: 'v', requested: 'auto-balance', candidates: ['frontier'], chosen: 'frontier', skips: [], sessionAction: 'new' },
  ...over,
});

function request(endpoint: 'chat' | 'messages', body: Record<string, unknown>): ClientRequest {
  const r = readClientRequest(endpoint, JSON.stringify(body));
  if (isBodyProblem(r)) throw new Error(r.message);
  return r;
}

const history = [
  { role: 'user', content: 'task' },
  { role: 'assistant', content: [{ type: 'thinking', thinking: 'old model', signature: 's1' }, { type: 'tool_use', id: 't1', name: 'read', input: {} }] },
  { role: 'user', content: [{ type: 'tool_result', tool_use_id: 't1', content: 'r1' }] },
  { role: 'assistant', content: [{ type: 'redacted_thinking', data: 'x' }, { type: 'thinking', thinking: 'current model', signature: 's2' }, { type: 'tool_use', id: 't2', name: 'read', input: {} }] },
  { role: 'user', content: [{ type: 'tool_result', tool_use_id: 't2', content: 'r2' }] },
];

describe('stripThinkingBlocks', () => {
  it('none leaves the messages as they are', () => {
    expect(stripThinkingBlocks(history, 'none')).toBe(history);
  });

  it('all removes every thinking and redacted_thinking block', () => {
    const out = stripThinkingBlocks(history, 'all') as typeof history;
    expect(JSON.stringify(out)).not.toMatch(/thinking/);
    expect(out[3]!.content).toEqual([{ type: 'tool_use', id: 't2', name: 'read', input: {} }]);
    expect(JSON.stringify(history)).toMatch(/old model/); // the client's body is not changed
  });

  it('all_but_last_step keeps the last assistant turn\'s thinking only', () => {
    const out = JSON.stringify(stripThinkingBlocks(history, 'all_but_last_step'));
    expect(out).not.toMatch(/old model/);
    expect(out).toMatch(/current model/);
  });

  it('a turn of thinking only keeps an empty text block', () => {
    const out = stripThinkingBlocks([{ role: 'assistant', content: [{ type: 'thinking', thinking: 'x', signature: '' }] }], 'all') as Array<{ content: unknown }>;
    expect(out[0]!.content).toEqual([{ type: 'text', text: '' }]);
  });

  it('the Anthropic adapter strips before a native Messages upstream', () => {
    const req = { ...request('messages', { model: 'auto-balance', max_tokens: 10, messages: history }), auto: serving({ stripThinking: 'all' }) };
    const plan = translationFor(req, 'claude-upstream-name');
    expect('body' in plan).toBe(true);
    if (!('body' in plan)) return;
    expect(JSON.stringify(plan.body)).not.toMatch(/thinking/);
    const plain = translationFor(request('messages', { model: 'm', max_tokens: 10, messages: history }), 'm');
    expect('body' in plain && JSON.stringify(plain.body)).toMatch(/old model/);
  });
});

describe('maskServedNames', () => {
  const req = { ...request('chat', { model: 'frontier', messages: [{ role: 'user', content: 'hi' }] }), auto: serving() };
  it('replaces each served name once, as a whole name', () => {
    expect(maskServedNames(req, "model 'claude-upstream-name' (frontier) refused; frontier-x and my-frontier stay")).toBe("model 'auto-balance' (auto-balance) refused; frontier-x and my-frontier stay");
  });
  it('leaves a plain request\'s text alone', () => {
    const plain = request('chat', { model: 'frontier', messages: [{ role: 'user', content: 'hi' }] });
    expect(maskServedNames(plain, 'frontier failed')).toBe('frontier failed');
    expect(maskServedNames(req, null)).toBeNull();
  });
});

describe('autoRequestOf and servedAs', () => {
  it('reads tool loop, tools, effort and opening from a chat body', () => {
    const body = { model: 'auto-balance', reasoning_effort: 'low', tools: [{ type: 'function', function: { name: 'f' } }], messages: [{ role: 'user', content: 'a' }, { role: 'assistant', content: null, tool_calls: [] }, { role: 'tool', tool_call_id: 'x', content: 'r' }] };
    const a = autoRequestOf(request('chat', body), 'caller', 'sess');
    expect(a).toMatchObject({ callerId: 'caller', sessionId: 'sess', toolLoop: true, hasTools: true, reasoningEffort: 'low' });
    const turn = autoRequestOf(request('chat', { ...body, messages: [...body.messages, { role: 'user', content: 'next' }] }), 'caller', 'sess');
    expect(turn.toolLoop).toBe(false);
    expect(turn.openingHash).toBe(a.openingHash);
  });

  it('an Anthropic tool_result turn is a tool loop', () => {
    expect(autoRequestOf(request('messages', { model: 'auto', max_tokens: 5, messages: history }), 'c', null).toolLoop).toBe(true);
  });

  it('sets the model and the candidate effort, and caps max_tokens at the output limit', () => {
    const base = request('chat', { model: 'auto-balance', max_tokens: 5000, messages: [{ role: 'user', content: 'a' }] });
    const out = servedAs(base, 'frontier', 'low', 1000, serving());
    expect(out.model).toBe('frontier');
    expect(out.body).toMatchObject({ model: 'frontier', reasoning_effort: 'low', max_tokens: 1000 });
    expect(out.outputTokensHint).toBe(1000);
    expect(base.body.model).toBe('auto-balance');
  });
});

describe('the admin API keeps auto names for auto profiles', () => {
  it('refuses a runtime model or alias named auto or auto-*', () => {
    const route = { base_url: 'http://127.0.0.1:3/v1' };
    for (const body of [{ model_id: 'auto', route }, { model_id: 'auto-balance', route }, { model_id: 'ok', aliases: ['auto-x'], route }]) {
      const r = RuntimeModelBodySchema.safeParse(body);
      expect(r.success).toBe(false);
      expect(r.error!.issues[0]!.message).toMatch(/reserved for auto profiles/);
    }
    expect(RuntimeModelBodySchema.safeParse({ model_id: 'autopilot', route }).success).toBe(true);
  });
});
