// The admin listener's status reads: GET /status/models (direct models healthy / cooldown /
// unhealthy with a reason; multi-target models not_applicable with their targets) and
// GET /status/config (last load or reload, and the generation in force). A real gateway on
// loopback, an emulator for the live target, a closed port for the failing ones.
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pino from 'pino';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { hashKey } from '../../gateway/callers.ts';
import { buildGatewayConfig, ConfigError, formatProblem, loadGatewayConfig } from '../../gateway/config/load.ts';
import { startGateway, type RunningGateway } from '../../gateway/gateway.ts';
import { startEmulator, type RunningEmulator } from '../../simulator/emulator/emulator.ts';
import { hello, KEYS, servedEndpoint } from './harness.ts';

let gw: RunningGateway | null = null;
let emu: RunningEmulator | null = null;
let dir = '';
beforeEach(() => {
  dir = mkdtempSync(join(tmpdir(), 'switchyard-status-'));
});
afterEach(async () => {
  await gw?.close();
  await emu?.close();
  gw = null;
  emu = null;
  rmSync(dir, { recursive: true, force: true });
});

/** A port with nothing listening (bound, then released). */
async function closedPort(): Promise<number> {
  const srv = createServer();
  await new Promise<void>((r) => srv.listen(0, '127.0.0.1', r));
  const port = (srv.address() as { port: number }).port;
  await new Promise((r) => srv.close(r));
  return port;
}

const auth = {
  mode: 'keys',
  keys: [
    { id: 'user', sha256: hashKey(KEYS.user) },
    { id: 'admin', sha256: hashKey(KEYS.admin), admin: true },
  ],
};

/** a: dead, cooldown on; b: live; chat: failover over a, b; dead: dead, no cooldown. */
function config(deadUrl: string, liveUrl: string) {
  return buildGatewayConfig({
    models: {
      models: [
        { id: 'a', route: [{ base_url: deadUrl }], cooldown: { enabled: true, duration_sec: 60, consecutive_failures: 1 } },
        { id: 'b', route: [{ base_url: liveUrl }] },
        { id: 'dead', route: [{ base_url: deadUrl }] },
        { id: 'chat', routing: { strategy: 'failover', targets: [{ model: 'a' }, { model: 'b' }] } },
      ],
    },
    // Two failures in a row open a breaker: one failed alias request leaves `a` cooling, not shut.
    gateway: { health: { failure_threshold: 2 }, routing_settings: { affinity_enabled: false }, auth },
  });
}

async function start(): Promise<{ dead: string; live: string }> {
  emu = await startEmulator({ mode: 'echo' });
  const dead = `http://127.0.0.1:${await closedPort()}/v1`;
  gw = await startGateway({ config: config(dead, emu.baseUrl), host: '127.0.0.1', port: 0, adminPort: 0, seed: 1, logger: pino({ level: 'silent' }) });
  return { dead, live: emu.baseUrl };
}

const get = (url: string, key?: string) => fetch(url, { headers: key ? { authorization: `Bearer ${key}` } : {} });
const chat = (model: string) =>
  fetch(`${gw!.url}/v1/chat/completions`, {
    method: 'POST',
    headers: { authorization: `Bearer ${KEYS.user}`, 'content-type': 'application/json' },
    body: JSON.stringify({ model, messages: hello, max_tokens: 1 }),
  });

interface Row {
  model: string;
  display_name: string;
  kind: string;
  status: string;
  status_reason: string | null;
  cooldown_until: string | null;
  targets?: Array<{ model: string; status: string; status_reason: string | null; cooldown_until: string | null }>;
}
const models = async (): Promise<Record<string, Row>> => {
  const r = await get(`${gw!.adminUrl}/status/models`, KEYS.admin);
  expect(r.status).toBe(200);
  return Object.fromEntries(((await r.json()) as Row[]).map((m) => [m.model, m]));
};
const configStatus = async () => (await (await get(`${gw!.adminUrl}/status/config`, KEYS.admin)).json()) as { last_load: { kind: string; status: string; at: string; problems: string[] }; generation: { number: number; id: string; cause: string; applied_at: string } };

describe('GET /status/models', () => {
  it('reports healthy direct models and a not_applicable alias with its targets at start', async () => {
    await start();
    const m = await models();
    for (const id of ['a', 'b', 'dead']) expect(m[id], id).toMatchObject({ kind: 'direct', status: 'healthy', status_reason: null, cooldown_until: null });
    expect(m.chat).toMatchObject({ kind: 'multi_target', status: 'not_applicable', display_name: 'chat' });
    expect(m.chat!.targets!.map((t) => [t.model, t.status])).toEqual([['a', 'healthy'], ['b', 'healthy']]);
  });

  it('a target that fails with cooldown on reports cooldown with transport_error and its end; a shut breaker reports unhealthy', async () => {
    await start();
    const before = Date.now();
    const r = await chat('chat');
    expect(r.status).toBe(200);
    expect(await servedEndpoint(gw!, r)).toMatch(/^b:/);
    const m = await models();
    expect(m.a).toMatchObject({ status: 'cooldown', status_reason: 'transport_error' });
    const until = Date.parse(m.a!.cooldown_until!);
    expect(until).toBeGreaterThanOrEqual(before + 59_000);
    expect(until).toBeLessThanOrEqual(Date.now() + 61_000);
    expect(m.chat!.targets![0]).toMatchObject({ model: 'a', status: 'cooldown', status_reason: 'transport_error', cooldown_until: m.a!.cooldown_until });
    expect(m.b!.status).toBe('healthy');

    // `dead` has no cooldown: its breaker opens after two failed direct requests.
    for (let i = 0; i < 3 && (await models()).dead!.status === 'healthy'; i++) expect((await chat('dead')).status).toBeGreaterThanOrEqual(500);
    expect((await models()).dead).toMatchObject({ status: 'unhealthy', status_reason: 'circuit_open', cooldown_until: null });
  });

  it('needs an admin key (401 / 403) and exists only on the admin listener', async () => {
    await start();
    for (const path of ['/status/models', '/status/config']) {
      expect((await get(`${gw!.adminUrl}${path}`)).status, `${path} without key`).toBe(401);
      expect((await get(`${gw!.adminUrl}${path}`, 'sk-wrong')).status, `${path} unknown key`).toBe(401);
      const denied = await get(`${gw!.adminUrl}${path}`, KEYS.user);
      expect(denied.status, `${path} user key`).toBe(403);
      expect(((await denied.json()) as { error: { code: string } }).error.code).toBe('admin_required');
      expect((await get(`${gw!.url}${path}`, KEYS.admin)).status, `${path} on the public listener`).toBe(404);
    }
  });
});

describe('GET /status/config', () => {
  it('reports the start, a rejected reload with its reason while the old generation stays, then an accepted one', async () => {
    const { dead, live } = await start();
    const s0 = await configStatus();
    expect(s0.last_load).toMatchObject({ kind: 'start', status: 'ok', problems: [] });
    expect(s0.generation).toMatchObject({ number: 1, id: 'gen-1', cause: 'start' });
    expect(Number.isNaN(Date.parse(s0.generation.applied_at))).toBe(false);

    // The core refuses it (the CLI's loader would catch it first): reload throws and records why.
    const good = config(dead, live);
    const bad = { ...good, models: { ...good.models, models: good.models.models.map((m) => (m.id === 'dead' ? { ...m, router: 'no-such-router' } : m)) } };
    expect(() => gw!.reload(bad)).toThrow(/unknown router/);
    const s1 = await configStatus();
    expect(s1.last_load).toMatchObject({ kind: 'reload', status: 'rejected' });
    expect(s1.last_load.problems.join('\n')).toMatch(/unknown router 'no-such-router'/);
    expect(Date.parse(s1.last_load.at)).toBeGreaterThanOrEqual(Date.parse(s0.last_load.at));
    expect(s1.generation).toEqual(s0.generation);
    expect((await chat('b')).status).toBe(200); // the old generation still serves

    // The files do not load (what SIGHUP meets): the loader's problems are recorded.
    writeFileSync(join(dir, 'models.yaml'), 'models:\n  - id: x\n    route: [{ base_url: 12 }]\n');
    let problems: string[] = [];
    try {
      loadGatewayConfig(dir, {});
    } catch (e) {
      if (!(e instanceof ConfigError)) throw e;
      problems = e.problems.map((p) => formatProblem(p).trim());
    }
    expect(problems.length).toBeGreaterThan(0);
    gw!.reloadRejected(problems);
    const s2 = await configStatus();
    expect(s2.last_load).toMatchObject({ kind: 'reload', status: 'rejected', problems });
    expect(s2.last_load.problems[0]).toMatch(/models\.yaml:3: models\.0\.route\.0\.base_url/);
    expect(s2.generation.number).toBe(1);

    gw!.reload(config(dead, live));
    const s3 = await configStatus();
    expect(s3.last_load).toMatchObject({ kind: 'reload', status: 'ok', problems: [] });
    expect(s3.generation).toMatchObject({ number: 2, id: 'gen-2', cause: 'reload' });
  });
});
