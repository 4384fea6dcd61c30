// Auto models through a real gateway (seed 000 "Auto 模型"), with the official `openai` client
// against engine emulators: a profile falls back past a candidate whose window is too small, a
// tool loop stays on its model, the serving model's name never reaches the client (bodies,
// stream chunks, errors, headers), the statuses when no candidate serves, `/v1/models`, the
// `auto_mode_enabled` switch, and the request log's serving model and `metadata.auto`.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import OpenAI from 'openai';
import pino from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { hashKey } from '../../gateway/callers.ts';
import { buildGatewayConfig } from '../../gateway/config/load.ts';
import { startGateway, type RunningGateway } from '../../gateway/gateway.ts';
import { startEmulator, type RunningEmulator } from '../../simulator/emulator/emulator.ts';
import { rawJson, startRawUpstream, type RawUpstream } from './harness.ts';

const KEY = 'sk-auto-user';
const NARROW_KEY = 'sk-auto-narrow';
const NONE_KEY = 'sk-auto-none';
/** Upstream names the client must never see. */
const SECRET_SMALL = 'secret-small-upstream';
const SECRET_BIG = 'secret-big-upstream';

interface AutoStack {
  gw: RunningGateway;
  small: RunningEmulator;
  big: RunningEmulator;
  raw: RawUpstream;
  dir: string;
  /** The stack's configuration with `auto_mode_enabled` set as given (for reloads). */
  configWith(autoEnabled: boolean): ReturnType<typeof buildGatewayConfig>;
  client(key?: string): OpenAI;
  post(body: unknown, key?: string): Promise<Response>;
  close(): Promise<void>;
}

async function startAutoStack(autoEnabled = true): Promise<AutoStack> {
  const small = await startEmulator({ mode: 'echo', echoText: 'hello one' });
  const big = await startEmulator({ mode: 'echo', echoText: 'hello two' });
  // An upstream that refuses everything, naming its own model in the message.
  const raw = await startRawUpstream((sock) => sock.end(rawJson(400, { error: { type: 'invalid_request_error', message: `model secret-picky-upstream (picky) cannot take this request`, param: null } })));
  const dir = mkdtempSync(join(tmpdir(), 'switchyard-auto-'));
  const configWith = (enabled: boolean) => buildGatewayConfig({
    models: {
      models: [
        { id: 'small', route: [{ base_url: small.baseUrl, context_length: 1000, provider_model_id: SECRET_SMALL }], max_output_tokens: 200, reasoning_efforts: ['low'] },
        { id: 'big', route: [{ base_url: big.baseUrl, context_length: 100_000, provider_model_id: SECRET_BIG }] },
        { id: 'picky', route: [{ base_url: raw.baseUrl, provider_model_id: 'secret-picky-upstream' }], supports_tools: false },
      ],
      auto: {
        default_profile: 'balance',
        session: { idle_timeout_seconds: 600, max_sessions: 100 },
        permission_check: { system_contains: ['decide whether the tool use may proceed'] },
        profiles: {
          balance: { candidates: [{ model: 'small' }, { model: 'big', reasoning_effort: 'low' }] },
          picky: { candidates: [{ model: 'picky' }] },
          narrow: { candidates: [{ model: 'picky' }] },
        },
      },
    },
    gateway: {
      routing_settings: { affinity_enabled: false, prefill_aware_enabled: false },
      health: { failure_threshold: 1000 },
      auto_mode_enabled: enabled,
      request_log: { path: join(dir, 'log.duckdb') },
      auth: {
        mode: 'keys',
        keys: [
          { id: 'user', sha256: hashKey(KEY), allowed_models: ['small', 'big', 'picky'] },
          { id: 'narrow', sha256: hashKey(NARROW_KEY), allowed_models: ['big'] },
          { id: 'none', sha256: hashKey(NONE_KEY), allowed_models: ['picky'] },
        ],
      },
    },
  });
  const gw = await startGateway({ config: configWith(autoEnabled), host: '127.0.0.1', port: 0, seed: 7, logger: pino({ level: 'silent' }) });
  return {
    gw,
    configWith,
    small,
    big,
    raw,
    dir,
    client: (key = KEY) => new OpenAI({ baseURL: `${gw.url}/v1`, apiKey: key, maxRetries: 0, timeout: 10_000 }),
    post: (body, key = KEY) => fetch(`${gw.url}/v1/chat/completions`, { method: 'POST', headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' }, body: JSON.stringify(body) }),
    async close() {
      await gw.close();
      await Promise.all([small.close(), big.close(), raw.close()]);
      rmSync(dir, { recursive: true, force: true });
    },
  };
}

/** Fails when any served model name or upstream name occurs in `text`. */
function expectNoServedName(text: string): void {
  // A name counts where no name character touches it (`auto-picky` is not `picky`).
  for (const n of ['small', 'big', 'picky', SECRET_SMALL, SECRET_BIG, 'secret-picky-upstream']) expect(text).not.toMatch(new RegExp(`(?<![\\w.:/-])${n}(?![\\w.:/-])`));
}

/** A prompt of about `tokens` estimated tokens (4 bytes each). */
const longText = (tokens: number) => 'x'.repeat(tokens * 4);

describe('auto models through the gateway', () => {
  let s: AutoStack;
  beforeAll(async () => {
    s = await startAutoStack();
  });
  afterAll(async () => {
    await s.close();
  });

  it('serves the first candidate that fits, and names only the auto model', async () => {
    s.small.log.clear();
    const r = await s.client().chat.completions.create({ model: 'auto-balance', messages: [{ role: 'user', content: 'short question' }] });
    expect(r.model).toBe('auto-balance');
    expect(s.small.log.all()).toHaveLength(1);
    expect((s.small.log.all()[0]!.body as { model: string }).model).toBe(SECRET_SMALL);
  });

  it('falls back past a candidate whose context window is too small, with the candidate\'s effort', async () => {
    s.big.log.clear();
    // 900 estimated tokens × 1.25 > small's 1000-token window.
    const r = await s.client().chat.completions.create({ model: 'auto-balance', messages: [{ role: 'user', content: longText(900) }] });
    expect(r.model).toBe('auto-balance');
    expect(s.big.log.all()).toHaveLength(1);
    const body = s.big.log.all()[0]!.body as { model: string; reasoning_effort?: string };
    expect(body.model).toBe(SECRET_BIG);
    expect(body.reasoning_effort).toBe('low');
  });

  it('max_tokens is capped at the chosen model\'s output limit', async () => {
    s.small.log.clear();
    await s.client().chat.completions.create({ model: 'auto-balance', max_tokens: 5000, messages: [{ role: 'user', content: 'cap me' }] });
    expect((s.small.log.all()[0]!.body as { max_tokens?: number }).max_tokens).toBe(200);
  });

  it('the request\'s own effort wins over the candidate\'s', async () => {
    s.big.log.clear();
    await s.client().chat.completions.create({ model: 'auto-balance', reasoning_effort: 'high', messages: [{ role: 'user', content: longText(900) }] });
    expect((s.big.log.all()[0]!.body as { reasoning_effort?: string }).reasoning_effort).toBe('high');
  });

  it('plain auto is the default profile', async () => {
    const r = await s.client().chat.completions.create({ model: 'auto', messages: [{ role: 'user', content: 'hi' }] });
    expect(r.model).toBe('auto');
  });

  it('a tool loop stays on its model even when the preferred one could take the step; a new user turn ranks again', async () => {
    const tools = [{ type: 'function' as const, function: { name: 'read', parameters: { type: 'object', properties: {} } } }];
    const c = s.client();
    const session = { headers: { 'x-session-id': 'tool-loop-2' } };
    const opening = [{ role: 'user' as const, content: 'short task' }];
    s.small.log.clear();
    s.big.log.clear();
    // small takes no high effort: the first turn goes to big.
    await c.chat.completions.create({ model: 'auto-balance', tools, reasoning_effort: 'high', messages: opening }, session);
    expect(s.big.log.all()).toHaveLength(1);
    // The tool step sets no effort: small could serve it, but the loop stays on big.
    const loop = [...opening, { role: 'assistant' as const, content: null, tool_calls: [{ id: 't1', type: 'function' as const, function: { name: 'read', arguments: '{}' } }] }, { role: 'tool' as const, tool_call_id: 't1', content: 'result' }];
    await c.chat.completions.create({ model: 'auto-balance', tools, messages: loop }, session);
    expect(s.big.log.all()).toHaveLength(2);
    expect(s.small.log.all()).toHaveLength(0);
    // A new user turn ranks again: small takes it.
    await c.chat.completions.create({ model: 'auto-balance', tools, messages: [...loop, { role: 'assistant' as const, content: 'done' }, { role: 'user' as const, content: 'next' }] }, session);
    expect(s.small.log.all()).toHaveLength(1);
  });

  it("a permission check (auto.permission_check) is served by the session's current model and changes no session state", async () => {
    const tools = [{ type: 'function' as const, function: { name: 'read', parameters: { type: 'object', properties: {} } } }];
    const c = s.client();
    const session = { headers: { 'x-session-id': 'permission-1' } };
    const opening = [{ role: 'user' as const, content: 'another task' }];
    s.small.log.clear();
    s.big.log.clear();
    // The conversation is on big (small takes no high effort).
    await c.chat.completions.create({ model: 'auto-balance', tools, reasoning_effort: 'high', messages: opening }, session);
    expect(s.big.log.all()).toHaveLength(1);
    // A side call with its own opening: ranked on its own it would go to small; as a permission
    // check it stays on the session's model, big.
    const check = [{ role: 'system' as const, content: 'You decide whether the tool use may proceed. Answer allow or deny.' }, { role: 'user' as const, content: 'read /etc/hosts?' }];
    await c.chat.completions.create({ model: 'auto-balance', messages: check }, session);
    expect(s.big.log.all()).toHaveLength(2);
    expect(s.small.log.all()).toHaveLength(0);
    // The same side call without the marker is a new conversation, ranked: small.
    await c.chat.completions.create({ model: 'auto-balance', messages: [{ role: 'system' as const, content: 'Answer allow or deny.' }, check[1]!] }, session);
    expect(s.small.log.all()).toHaveLength(1);
    // The check recorded nothing: the conversation's tool step still stays on big.
    const loop = [...opening, { role: 'assistant' as const, content: null, tool_calls: [{ id: 't1', type: 'function' as const, function: { name: 'read', arguments: '{}' } }] }, { role: 'tool' as const, tool_call_id: 't1', content: 'result' }];
    await c.chat.completions.create({ model: 'auto-balance', tools, messages: loop }, session);
    expect(s.big.log.all()).toHaveLength(3);
  });

  it('every stream chunk names the auto model, and no served-by header is sent', async () => {
    const res = await s.post({ model: 'auto-balance', stream: true, messages: [{ role: 'user', content: 'stream please' }] });
    expect(res.status).toBe(200);
    expect(res.headers.get('x-switchyard-served-by')).toBeNull();
    const text = await res.text();
    expectNoServedName(text);
    const chunks = text.split('\n\n').filter((b) => b.startsWith('data: {'));
    expect(chunks.length).toBeGreaterThan(0);
    for (const ch of chunks) expect(JSON.parse(ch.slice(6)).model).toBe('auto-balance');
    // Through the SDK too.
    const stream = await s.client().chat.completions.create({ model: 'auto-balance', stream: true, messages: [{ role: 'user', content: 'again' }] });
    for await (const ch of stream) expect(ch.model).toBe('auto-balance');
  });

  it('a non-stream body and its headers name no served model', async () => {
    const res = await s.post({ model: 'auto-balance', messages: [{ role: 'user', content: 'hi' }] });
    expect(res.headers.get('x-switchyard-served-by')).toBeNull();
    const text = await res.text();
    expectNoServedName(text);
    for (const [k, v] of res.headers) expectNoServedName(`${k}: ${v}`);
  });

  it('the Responses API names only the auto model, stream and not, and a follow-up turn chains', async () => {
    const first = await s.client().responses.create({ model: 'auto-balance', input: 'hi there' });
    expect(first.model).toBe('auto-balance');
    expectNoServedName(JSON.stringify(first));
    const next = await s.client().responses.create({ model: 'auto-balance', input: 'and again', previous_response_id: first.id });
    expect(next.model).toBe('auto-balance');
    // Read back by its caller; a key that may use none of the profile's models gets 404.
    expect((await s.client().responses.retrieve(first.id)).model).toBe('auto-balance');
    expect(await s.client(NONE_KEY).responses.retrieve(first.id).catch((e: unknown) => e)).toBeInstanceOf(OpenAI.NotFoundError);
    const res = await fetch(`${s.gw.url}/v1/responses`, { method: 'POST', headers: { authorization: `Bearer ${KEY}`, 'content-type': 'application/json' }, body: JSON.stringify({ model: 'auto-balance', input: 'stream it', stream: true }) });
    expect(res.status).toBe(200);
    expect(res.headers.get('x-switchyard-served-by')).toBeNull();
    const text = await res.text();
    expectNoServedName(text);
    expect(text).toContain('response.completed');
    for (const m of text.matchAll(/"model":"([^"]*)"/g)) expect(m[1]).toBe('auto-balance');
  });

  it('a Responses id and its item ids do not carry the serving endpoint (base64url of `<model>:<provider>`)', async () => {
    const first = await s.client().responses.create({ model: 'auto-balance', input: 'hi there' });
    const ids = [first.id, ...first.output.map((o) => o.id ?? '')];
    const res = await fetch(`${s.gw.url}/v1/responses`, { method: 'POST', headers: { authorization: `Bearer ${KEY}`, 'content-type': 'application/json' }, body: JSON.stringify({ model: 'auto-balance', input: 'stream it', stream: true }) });
    for (const m of (await res.text()).matchAll(/"id":"([^"]*)"/g)) ids.push(m[1]!);
    expect(ids.length).toBeGreaterThan(2);
    for (const id of ids) {
      // No base64url run of the id decodes to an endpoint id (`small:local-…`).
      for (const part of id.split('_')) expect(Buffer.from(part, 'base64url').toString('utf8')).not.toMatch(/\b(small|big|picky):/);
    }
    // The follow-up turn still chains on the stored conversation.
    const next = await s.client().responses.create({ model: 'auto-balance', input: 'and again', previous_response_id: first.id });
    expect(next.model).toBe('auto-balance');
  });

  it('an upstream error message names the auto model instead of the serving one', async () => {
    const res = await s.post({ model: 'auto-picky', messages: [{ role: 'user', content: 'hi' }] });
    expect(res.status).toBe(400);
    const text = await res.text();
    expectNoServedName(text);
    expect(text).toContain('auto-picky');
    const err = await s.client().chat.completions.create({ model: 'auto-picky', messages: [{ role: 'user', content: 'hi' }] }).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(OpenAI.BadRequestError);
    expectNoServedName((err as Error).message);
  });

  it('400 when every usable model rejects the request, with the reasons', async () => {
    const tools = [{ type: 'function' as const, function: { name: 'f', parameters: {} } }];
    const res = await s.post({ model: 'auto-picky', tools, messages: [{ role: 'user', content: 'hi' }] });
    expect(res.status).toBe(400);
    const text = await res.text();
    expect(text).toMatch(/tools/);
    expectNoServedName(text);
  });

  it('404 when the caller may use no candidate; a caller sees only the auto models it may use', async () => {
    expect((await s.post({ model: 'auto-balance', messages: [{ role: 'user', content: 'hi' }] }, NONE_KEY)).status).toBe(404);
    expect((await s.post({ model: 'auto-picky', messages: [{ role: 'user', content: 'hi' }] }, NARROW_KEY)).status).toBe(404);
    // narrow may use big only: auto-balance serves it from big.
    s.big.log.clear();
    const r = await s.client(NARROW_KEY).chat.completions.create({ model: 'auto-balance', messages: [{ role: 'user', content: 'hi' }] });
    expect(r.model).toBe('auto-balance');
    expect(s.big.log.all()).toHaveLength(1);
    const narrow = (await s.client(NARROW_KEY).models.list()).data.map((m) => m.id);
    expect(narrow).toEqual(['big', 'auto-balance', 'auto']);
    expect((await s.client(NONE_KEY).models.list()).data.map((m) => m.id)).toEqual(['picky', 'auto-picky', 'auto-narrow']);
  });

  it('/v1/models gives an auto model the largest window and the tool support among its usable models', async () => {
    const list = (await s.client().models.list()).data as unknown as Array<Record<string, unknown>>;
    expect(list.map((m) => m.id)).toEqual(['small', 'big', 'picky', 'auto-balance', 'auto-picky', 'auto-narrow', 'auto']);
    expect(list.find((m) => m.id === 'auto-balance')).toMatchObject({ context_window: 100_000, input_modalities: ['text'], supports_tools: true });
    expect(list.find((m) => m.id === 'auto-picky')).toMatchObject({ supports_tools: false });
    const one = await s.client().models.retrieve('auto-balance');
    expect(one.id).toBe('auto-balance');
  });

  it('the request log records the serving model and metadata.auto', async () => {
    const res = await s.post({ model: 'auto-balance', messages: [{ role: 'user', content: `${longText(900)} for the log` }] });
    const id = res.headers.get('x-request-id');
    await res.text();
    const rows = await s.gw.requestLog!.query('SELECT model, metadata, endpoint_id FROM requests WHERE request_id = $1', [id]);
    expect(rows).toHaveLength(1);
    expect(rows[0]!.model).toBe('big');
    const md = JSON.parse(String(rows[0]!.metadata)) as { auto: Record<string, unknown> };
    expect(md.auto).toMatchObject({ profile: 'balance', requested: 'auto-balance', candidates: ['small', 'big'], chosen: 'big', skips: [{ model: 'small', reason: 'context_window' }], sessionAction: 'new' });
    expect(typeof md.auto.profileVersion).toBe('string');
    // A refusal is logged with its decision too.
    const refused = await s.post({ model: 'auto-balance', messages: [{ role: 'user', content: 'hi' }] }, NONE_KEY);
    const rid = refused.headers.get('x-request-id');
    await refused.text();
    const [row] = await s.gw.requestLog!.query('SELECT http_status, metadata FROM requests WHERE request_id = $1', [rid]);
    expect(row!.http_status).toBe(404);
    expect(JSON.parse(String(row!.metadata)).auto.skips).toEqual([
      { model: 'small', reason: 'caller_not_allowed' },
      { model: 'big', reason: 'caller_not_allowed' },
    ]);
  });
});

describe('auto_mode_enabled off', () => {
  let s: AutoStack;
  beforeAll(async () => {
    s = await startAutoStack(false);
  });
  afterAll(async () => {
    await s.close();
  });

  it('auto models get 404 and are not listed; real models are untouched', async () => {
    expect((await s.post({ model: 'auto-balance', messages: [{ role: 'user', content: 'hi' }] })).status).toBe(404);
    expect((await s.post({ model: 'auto', messages: [{ role: 'user', content: 'hi' }] })).status).toBe(404);
    const ids = (await s.client().models.list()).data.map((m) => m.id);
    expect(ids).toEqual(['small', 'big', 'picky']);
    const r = await s.client().chat.completions.create({ model: 'small', messages: [{ role: 'user', content: 'hi' }] });
    expect(r.model).toBe('small');
  });

  it('a reload turns auto models on; a tool loop keeps its model across a later reload', async () => {
    expect(s.gw.reload(s.configWith(true))).toEqual([]);
    const tools = [{ type: 'function' as const, function: { name: 'read', parameters: { type: 'object', properties: {} } } }];
    const opening = [{ role: 'user' as const, content: 'reload task' }];
    const session = { headers: { 'x-session-id': 'reload-1' } };
    s.big.log.clear();
    s.small.log.clear();
    await s.client().chat.completions.create({ model: 'auto-balance', tools, reasoning_effort: 'high', messages: opening }, session);
    expect(s.big.log.all()).toHaveLength(1);
    s.gw.reload(s.configWith(true));
    const loop = [...opening, { role: 'assistant' as const, content: null, tool_calls: [{ id: 't1', type: 'function' as const, function: { name: 'read', arguments: '{}' } }] }, { role: 'tool' as const, tool_call_id: 't1', content: 'r' }];
    await s.client().chat.completions.create({ model: 'auto-balance', tools, messages: loop }, session);
    expect(s.big.log.all()).toHaveLength(2);
    expect(s.small.log.all()).toHaveLength(0);
    s.gw.reload(s.configWith(false));
    expect((await s.post({ model: 'auto-balance', messages: [{ role: 'user', content: 'hi' }] })).status).toBe(404);
  });
});

describe('a bad auto: block', () => {
  const base = (auto: unknown, extraModels: Array<Record<string, unknown>> = []) =>
    buildGatewayConfig({
      models: { models: [{ id: 'm', route: [{ base_url: 'http://127.0.0.1:9/v1' }] }, ...extraModels], auto },
      gateway: { auto_mode_enabled: true, auth: { mode: 'none' } },
    });

  it('turns auto models off and lists every problem, but the gateway starts', async () => {
    const config = base({ default_profile: 'nope', profiles: { p: { candidates: [] } } });
    expect(config.warnings.join('\n')).toMatch(/auto models are off: .*profiles\.p\.candidates/);
    const gw = await startGateway({ config, host: '127.0.0.1', port: 0, seed: 7, logger: pino({ level: 'silent' }) });
    try {
      const res = await fetch(`${gw.url}/v1/chat/completions`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ model: 'auto-p', messages: [{ role: 'user', content: 'hi' }] }) });
      expect(res.status).toBe(404);
      const list = (await (await fetch(`${gw.url}/v1/models`)).json()) as { data: Array<{ id: string }> };
      expect(list.data.map((m) => m.id)).toEqual(['m']);
    } finally {
      await gw.close();
    }
  });

  it('a profile named like a registered model turns auto models off; an unregistered candidate is a warning', () => {
    const clash = base({ profiles: { x: { candidates: [{ model: 'm' }] } } }, [{ id: 'auto-x', route: [{ base_url: 'http://127.0.0.1:9/v1' }] }]);
    expect(clash.warnings.join('\n')).toMatch(/auto models are off: .*'auto-x' is a registered model/);
    const ghost = base({ profiles: { x: { candidates: [{ model: 'ghost' }, { model: 'm' }] } } });
    expect(ghost.warnings.join('\n')).toMatch(/'ghost' is not registered/);
    expect(ghost.warnings.join('\n')).not.toMatch(/auto models are off/);
    // A profile named with the prefix is served with it twice, and says so.
    const doubled = base({ profiles: { 'auto-b': { candidates: [{ model: 'm' }] } } });
    expect(doubled.warnings.join('\n')).toMatch(/auto.profiles.auto-b: served as 'auto-auto-b' .* name it 'b' to serve 'auto-b'/);
  });
});

describe('no admitting endpoint', () => {
  it('503 when the candidates that could take the request have no endpoint to admit it', async () => {
    const config = buildGatewayConfig({
      models: { models: [{ id: 'idle', route: [{ base_url: 'http://127.0.0.1:9/v1', weight: 0 }] }], auto: { profiles: { p: { candidates: [{ model: 'idle' }] } } } },
      gateway: { auto_mode_enabled: true, auth: { mode: 'none' } },
    });
    const gw = await startGateway({ config, host: '127.0.0.1', port: 0, seed: 7, logger: pino({ level: 'silent' }) });
    try {
      const client = new OpenAI({ baseURL: `${gw.url}/v1`, apiKey: 'none', maxRetries: 0, timeout: 10_000 });
      const err = await client.chat.completions.create({ model: 'auto-p', messages: [{ role: 'user', content: 'hi' }] }).catch((e: unknown) => e);
      expect(err).toBeInstanceOf(OpenAI.APIError);
      expect((err as InstanceType<typeof OpenAI.APIError>).status).toBe(503);
      expectNoServedName((err as Error).message);
      expect((err as Error).message).not.toMatch(/idle(?![\w-])/);
    } finally {
      await gw.close();
    }
  });
});

describe('videos of an auto model', () => {
  let emu: RunningEmulator;
  let gw: RunningGateway;
  beforeAll(async () => {
    emu = await startEmulator({ mode: 'echo' });
    const config = buildGatewayConfig({
      models: {
        models: [{ id: 'small', route: [{ base_url: emu.baseUrl, provider_model_id: SECRET_SMALL, endpoints: ['chat', 'video'] }] }],
        auto: { default_profile: 'balance', profiles: { balance: { candidates: [{ model: 'small' }] } } },
      },
      gateway: { auto_mode_enabled: true, auth: { mode: 'keys', keys: [{ id: 'user', sha256: hashKey(KEY) }] } },
    });
    gw = await startGateway({ config, host: '127.0.0.1', port: 0, seed: 7, logger: pino({ level: 'silent' }) });
  });
  afterAll(async () => {
    await gw?.close();
    await emu?.close();
  });
  const submit = async () => {
    const res = await fetch(`${gw.url}/v1/videos`, { method: 'POST', headers: { authorization: `Bearer ${KEY}`, 'content-type': 'application/json' }, body: JSON.stringify({ model: 'auto-balance', prompt: 'a cat' }) });
    expect(res.status).toBe(200);
    return (await res.json()) as { id: string; model: string };
  };

  it('the caller can poll the job it submitted on the auto model', async () => {
    const job = await submit();
    expect(job.model).toBe('auto-balance');
    const res = await fetch(`${gw.url}/v1/videos/${job.id}`, { headers: { authorization: `Bearer ${KEY}` } });
    expect(res.status).toBe(200);
    const text = await res.text();
    expect((JSON.parse(text) as { model: string }).model).toBe('auto-balance');
    expectNoServedName(text);
    expect(res.headers.get('x-switchyard-served-by')).toBeNull();
    expect((await fetch(`${gw.url}/v1/videos/${job.id}/content`, { headers: { authorization: `Bearer ${KEY}` } })).status).toBe(200);
  });

  // A plain video id is base64url of [endpointId, model, upstreamId], and an endpoint id names its
  // model (`small:local-<port>`): an auto model's job carries the endpoint sealed instead.
  it('the video id does not carry the serving endpoint, and a forged seal is not found', async () => {
    const job = await submit();
    const decoded = Buffer.from(job.id.slice('video_sy'.length), 'base64url').toString('utf8');
    expect(decoded).not.toMatch(/small|local-|127\.0\.0\.1/);
    const [sealed, model] = JSON.parse(decoded) as [string, string, string];
    expect(sealed).toMatch(/^#[0-9a-f]{32}$/);
    expect(model).toBe('auto-balance');
    const forged = 'video_sy' + Buffer.from(JSON.stringify(['#' + '0'.repeat(32), 'auto-balance', 'video_emu_1'])).toString('base64url');
    expect((await fetch(`${gw.url}/v1/videos/${forged}`, { headers: { authorization: `Bearer ${KEY}` } })).status).toBe(404);
  });
});
