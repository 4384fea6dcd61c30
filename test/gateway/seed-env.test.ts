// The seed's environment names (CIRCUIT_*, ROUTER_HEALTH_EWMA_ALPHA, AFFINITY_SWEEP_THRESHOLD,
// ENABLE_ROUTEWISE): each fills its gateway setting, the files win over them, a bad value is
// refused naming the variable and its range, and `switchyard validate` shows both sources.
import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pino from 'pino';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { hashKey } from '../../gateway/callers.ts';
import { buildGatewayConfig, ConfigError } from '../../gateway/config/load.ts';
import { startGateway, type RunningGateway } from '../../gateway/gateway.ts';
import { hello, KEYS } from './harness.ts';

let gw: RunningGateway | null = null;
let dir = '';
beforeEach(() => {
  dir = mkdtempSync(join(tmpdir(), 'switchyard-seed-env-'));
});
afterEach(async () => {
  await gw?.close();
  gw = null;
  rmSync(dir, { recursive: true, force: true });
});

async function closedPort(): Promise<number> {
  const srv = createServer();
  await new Promise<void>((r) => srv.listen(0, '127.0.0.1', r));
  const port = (srv.address() as { port: number }).port;
  await new Promise((r) => srv.close(r));
  return port;
}

const auth = { mode: 'keys', keys: [{ id: 'admin', sha256: hashKey(KEYS.admin), admin: true }] };
const models = (url: string) => ({ models: [{ id: 'plain', route: [{ base_url: url }] }, { id: 'own', router: 'fixed', route: [{ base_url: url }] }] });
const build = (env: Record<string, string>, gateway: Record<string, unknown> = {}, routing?: unknown) =>
  buildGatewayConfig({ models: models('http://127.0.0.1:9/v1'), gateway: { auth, ...gateway }, ...(routing !== undefined && { routing }) }, env);

const ALL = {
  CIRCUIT_FAILURE_THRESHOLD: '7',
  CIRCUIT_COOLDOWN_SECONDS: '12.5',
  CIRCUIT_MIN_AVAILABILITY: '0.4',
  ROUTER_HEALTH_EWMA_ALPHA: '0.25',
  AFFINITY_SWEEP_THRESHOLD: '50',
  ENABLE_ROUTEWISE: 'true',
};

describe('the seed environment names', () => {
  it('each one takes effect in the running gateway', async () => {
    gw = await startGateway({ config: build(ALL), host: '127.0.0.1', port: 0, seed: 1, logger: pino({ level: 'silent' }) });
    expect(gw.core.health.options).toEqual({ failureThreshold: 7, cooldownMs: 12_500, minAvailability: 0.4, ewmaAlpha: 0.25 });
    expect(gw.core.settings.affinitySweepThreshold).toBe(50);
    // Only the model that takes the default router is switched.
    expect(Object.fromEntries(gw.core.allModels().map((m) => [m.id, m.strategy]))).toEqual({ plain: 'routewise', own: 'fixed' });
  });

  it('CIRCUIT_FAILURE_THRESHOLD=1 opens the breaker after one failed request', async () => {
    const config = buildGatewayConfig({ models: models(`http://127.0.0.1:${await closedPort()}/v1`), gateway: { auth } }, { CIRCUIT_FAILURE_THRESHOLD: '1' });
    gw = await startGateway({ config, host: '127.0.0.1', port: 0, seed: 1, logger: pino({ level: 'silent' }) });
    const r = await fetch(`${gw.url}/v1/chat/completions`, { method: 'POST', headers: { authorization: `Bearer ${KEYS.admin}`, 'content-type': 'application/json' }, body: JSON.stringify({ model: 'plain', messages: hello, max_tokens: 1 }) });
    expect(r.status).toBeGreaterThanOrEqual(500);
    const ep = gw.core.model('plain')!.routes[0]!.endpointId;
    expect(gw.core.health.snapshotOf(ep, performance.now()).state).toBe('open');
  });

  it('without them the defaults hold, and ENABLE_ROUTEWISE=false changes nothing', () => {
    const c = build({ ENABLE_ROUTEWISE: 'false' });
    expect(c.settings.health).toEqual({});
    expect(c.models.routing.default_router).toBe('fixed');
    expect(c.settingSources.map((s) => s.source)).toEqual(['default', 'default', 'default', 'default', 'default', 'default']);
  });

  it('gateway.yaml and the routing file win over the environment, with a warning', () => {
    const c = build(ALL, { health: { failure_threshold: 2, ewma_alpha: 0.5 }, routing_settings: { affinity_sweep_threshold: 9 } }, { default_router: 'round_robin' });
    expect(c.settings.health).toEqual({ failure_threshold: 2, cooldown_sec: 12.5, min_availability: 0.4, ewma_alpha: 0.5 });
    expect(c.routingSettings).toMatchObject({ affinity_sweep_threshold: 9 });
    expect(c.models.routing.default_router).toBe('round_robin');
    for (const v of ['CIRCUIT_FAILURE_THRESHOLD', 'ROUTER_HEALTH_EWMA_ALPHA', 'AFFINITY_SWEEP_THRESHOLD', 'ENABLE_ROUTEWISE']) expect(c.warnings.join('\n')).toContain(`${v}=`);
    const by = Object.fromEntries(c.settingSources.map((s) => [s.variable, s.source]));
    expect(by).toEqual({ CIRCUIT_FAILURE_THRESHOLD: 'file', CIRCUIT_COOLDOWN_SECONDS: 'environment', CIRCUIT_MIN_AVAILABILITY: 'environment', ROUTER_HEALTH_EWMA_ALPHA: 'file', AFFINITY_SWEEP_THRESHOLD: 'file', ENABLE_ROUTEWISE: 'file' });
  });

  it('an explicit default_router: fixed is still switched by ENABLE_ROUTEWISE (the seed: "while it is still fixed")', () => {
    expect(build({ ENABLE_ROUTEWISE: '1' }, {}, { default_router: 'fixed' }).models.routing.default_router).toBe('routewise');
  });

  it('AFFINITY_SWEEP_THRESHOLD fills a gateway.yaml routing_settings block that leaves it out, and yields to ROUTING_AFFINITY_SWEEP_THRESHOLD', () => {
    expect(build({ AFFINITY_SWEEP_THRESHOLD: '40' }, { routing_settings: { affinity_enabled: false } }).routingSettings).toEqual({ affinity_enabled: false, affinity_sweep_threshold: 40 });
    const both = build({ AFFINITY_SWEEP_THRESHOLD: '40', ROUTING_AFFINITY_SWEEP_THRESHOLD: '30' });
    expect((both.routingSettings as { affinitySweepThreshold: number }).affinitySweepThreshold).toBe(30);
    expect(both.warnings.join('\n')).toMatch(/ROUTING_AFFINITY_SWEEP_THRESHOLD is set, so AFFINITY_SWEEP_THRESHOLD=40 is ignored/);
  });

  it.each([
    ['CIRCUIT_FAILURE_THRESHOLD', '0', 'an integer ≥ 1'],
    ['CIRCUIT_FAILURE_THRESHOLD', '2.5', 'an integer ≥ 1'],
    ['CIRCUIT_COOLDOWN_SECONDS', '-1', 'a number of seconds > 0'],
    ['CIRCUIT_MIN_AVAILABILITY', '1.5', 'a number in [0, 1]'],
    ['ROUTER_HEALTH_EWMA_ALPHA', '0', 'a number in (0, 1]'],
    ['AFFINITY_SWEEP_THRESHOLD', 'many', 'an integer ≥ 1'],
    ['ENABLE_ROUTEWISE', 'maybe', 'a boolean'],
  ])('%s=%s is refused naming the variable and its range', (name, value, range) => {
    let err: unknown = null;
    try {
      build({ [name]: value });
    } catch (e) {
      err = e;
    }
    expect(err).toBeInstanceOf(ConfigError);
    const p = (err as ConfigError).problems.find((x) => x.field === name)!;
    expect(p.file).toBe('(environment)');
    expect(p.message).toContain(`${name}='${value}' is not accepted; ${name} takes ${range}`);
    expect((err as Error).message).toContain(name);
  });

  it('switchyard validate shows each setting with its source, file and environment alike, and refuses a bad value', async () => {
    writeFileSync(join(dir, 'models.yaml'), `models:\n  - id: plain\n    route:\n      - base_url: http://127.0.0.1:9/v1\n`);
    writeFileSync(join(dir, 'gateway.yaml'), `auth:\n  mode: none\nhealth:\n  failure_threshold: 5\n`);
    const ok = await validate(dir, { CIRCUIT_FAILURE_THRESHOLD: '7', CIRCUIT_COOLDOWN_SECONDS: '12' });
    expect(ok.code, ok.out).toBe(0);
    expect(ok.out).toContain(`setting: health.failure_threshold = 5 (from ${join(dir, 'gateway.yaml')}; CIRCUIT_FAILURE_THRESHOLD=7 not used)`);
    expect(ok.out).toContain('setting: health.cooldown_sec = 12 (from environment CIRCUIT_COOLDOWN_SECONDS=12)');
    expect(ok.out).toContain('setting: health.min_availability = 0.7 (default; CIRCUIT_MIN_AVAILABILITY unset)');
    expect(ok.out).toContain('setting: routing.default_router = fixed (default; ENABLE_ROUTEWISE unset)');
    const bad = await validate(dir, { CIRCUIT_MIN_AVAILABILITY: '2' });
    expect(bad.code).toBe(1);
    expect(bad.out).toContain("CIRCUIT_MIN_AVAILABILITY='2' is not accepted; CIRCUIT_MIN_AVAILABILITY takes a number in [0, 1]");
  });
});

/** `switchyard validate <path>` in a child process with `env` added to this one's (seed names cleared). */
function validate(path: string, env: Record<string, string>): Promise<{ code: number | null; out: string }> {
  const root = join(import.meta.dirname, '../..');
  const base = { ...process.env };
  for (const k of Object.keys(ALL)) delete base[k];
  return new Promise((resolve) => {
    const p = spawn(process.execPath, [join(root, 'bin/switchyard.mjs'), 'validate', path], { cwd: root, env: { ...base, ...env }, stdio: ['ignore', 'pipe', 'pipe'] });
    let out = '';
    p.stdout.on('data', (d: Buffer) => (out += d.toString()));
    p.stderr.on('data', (d: Buffer) => (out += d.toString()));
    p.once('exit', (code) => resolve({ code, out }));
  });
}
