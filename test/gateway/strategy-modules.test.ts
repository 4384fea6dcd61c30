// Strategy modules named in gateway.yaml (`strategies:`): the example module routes a real
// gateway's requests on loopback; a missing module leaves out only the model that uses it, with
// the module's path and the reason, and `switchyard validate` reports it; an unknown
// router_params key of a module's strategy is refused like a built-in's; a module naming itself
// after a built-in is refused; a planner answering a candidate that does not exist fails only that
// request, with one 500.
import { servedEndpoint } from './harness.ts';
import { spawn, type ChildProcess } from 'node:child_process';
import { copyFileSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pino from 'pino';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { ConfigError, loadGatewayConfigAsync, type GatewayConfig } from '../../gateway/config/load.ts';
import { validateCommand } from '../../gateway/gateway-command.ts';
import { startGateway, type RunningGateway } from '../../gateway/gateway.ts';
import { startEmulator, type RunningEmulator } from '../../simulator/emulator/emulator.ts';
import { freePort } from '../free-port.ts';

const EXAMPLE = join(import.meta.dirname, '..', '..', 'examples', 'strategies', 'cheapest-first.mjs');
const dirs: string[] = [];
afterAll(() => dirs.forEach((d) => rmSync(d, { recursive: true, force: true })));

function configDir(files: Record<string, string>): string {
  const dir = mkdtempSync(join(tmpdir(), 'switchyard-strategies-'));
  dirs.push(dir);
  copyFileSync(EXAMPLE, join(dir, 'cheapest-first.mjs'));
  for (const [name, text] of Object.entries(files)) writeFileSync(join(dir, name), text);
  return dir;
}

/** models.yaml: `cheap` routed by the example (the dearer route first), `broken` by a missing module, `plain` by fixed. */
function modelsYaml(dear: string, cheap: string, cheapParams = ''): string {
  return `models:
  - id: cheap
    router: cheapest-first
${cheapParams}    route:
      - base_url: ${dear}
        pricing: { input_usd_per_1m: 3, output_usd_per_1m: 15 }
      - base_url: ${cheap}
        pricing: { input_usd_per_1m: 0.5, output_usd_per_1m: 1 }
  - id: broken
    router: not-there
    route:
      - base_url: ${cheap}
  - id: plain
    route:
      - base_url: ${dear}
  - id: wrong
    router: wrong-pick
    route:
      - base_url: ${dear}
`;
}

const GATEWAY = 'strategies: [./cheapest-first.mjs, ./not-there.mjs, ./wrong-pick.mjs]\nauth: { mode: none }\n';
/** Keeps the contract's shape but answers a candidate that does not exist. */
const WRONG_PICK = `export const name = 'wrong-pick';\nexport function create() { return { pick: () => ({ candidate: 3, reason: 'x' }) }; }\n`;

async function problemsOf(dir: string): Promise<string> {
  try {
    await loadGatewayConfigAsync(dir, {});
  } catch (e) {
    if (e instanceof ConfigError) return e.message;
    throw e;
  }
  throw new Error('expected a ConfigError');
}

describe('strategy modules in a real gateway', () => {
  let dear: RunningEmulator;
  let cheap: RunningEmulator;
  let gw: RunningGateway;
  let config: GatewayConfig;
  let dir: string;

  beforeAll(async () => {
    dear = await startEmulator({ faults: { latency_scale: 0.02 } });
    cheap = await startEmulator({ faults: { latency_scale: 0.02 } });
    dir = configDir({ 'models.yaml': modelsYaml(dear.baseUrl, cheap.baseUrl), 'gateway.yaml': GATEWAY, 'wrong-pick.mjs': WRONG_PICK });
    config = await loadGatewayConfigAsync(dir, {});
    gw = await startGateway({ config, host: '127.0.0.1', port: 0, adminPort: null, seed: 1, logger: pino({ level: 'silent' }) });
  });
  afterAll(async () => {
    await gw?.close();
    await Promise.all([dear?.close(), cheap?.close()]);
  });

  it('loads the module relative to gateway.yaml and leaves out only the model of the missing one', () => {
    expect(config.strategies.map((s) => [s.name, s.error === null, s.workerSafe])).toEqual([
      ['cheapest-first', true, true],
      ['not-there', false, false],
      ['wrong-pick', true, false],
    ]);
    expect(config.models.models.map((m) => m.id)).toEqual(['cheap', 'plain', 'wrong']);
    expect(config.unavailableModels).toHaveLength(1);
    const [p] = config.unavailableModels;
    expect(p!.field).toBe('models.1.router');
    expect(p!.line).toBe(10);
    expect(p!.message).toContain(`model 'broken' is not loaded: router 'not-there' is unavailable: strategy module ${join(dir, 'not-there.mjs')}: cannot be imported`);
    expect(config.warnings.some((w) => w.includes(join(dir, 'not-there.mjs')))).toBe(true);
  });

  it('routes by the module: every request to the cheaper route, declared second', async () => {
    for (let i = 0; i < 4; i++) {
      const res = await fetch(`${gw.url}/v1/chat/completions`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ model: 'cheap', messages: [{ role: 'user', content: 'hi' }], max_tokens: 4 }),
      });
      expect(res.status).toBe(200);
      expect(await servedEndpoint(gw, res)).toContain(new URL(cheap.baseUrl).port);
      await res.arrayBuffer();
    }
    const plain = await fetch(`${gw.url}/v1/chat/completions`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ model: 'plain', messages: [{ role: 'user', content: 'hi' }], max_tokens: 4 }),
    });
    expect(plain.status).toBe(200);
    await plain.arrayBuffer();
    const broken = await fetch(`${gw.url}/v1/chat/completions`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ model: 'broken', messages: [{ role: 'user', content: 'hi' }] }),
    });
    expect(broken.status).toBe(404);
    await broken.arrayBuffer();
  });

  it('a planner whose pick names no candidate fails that request with one 500; the gateway keeps serving', async () => {
    const post = (model: string) =>
      fetch(`${gw.url}/v1/chat/completions`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ model, messages: [{ role: 'user', content: 'hi' }], max_tokens: 2 }),
      });
    const wrong = await post('wrong');
    expect(wrong.status).toBe(500);
    expect(((await wrong.json()) as { error: { code: string } }).error.code).toBe('internal_error');
    const after = await post('cheap');
    expect(after.status).toBe(200);
    await after.arrayBuffer();
  });

  it('a reload imports a module whose file changed: the new version routes', async () => {
    const file = join(dir, 'cheapest-first.mjs');
    const { readFileSync, utimesSync } = await import('node:fs');
    const original = readFileSync(file, 'utf8');
    // The same name and params, but the dearest route first.
    writeFileSync(file, original.replace('score(candidates[a]) - score(candidates[b])', 'score(candidates[b]) - score(candidates[a])'));
    utimesSync(file, new Date(), new Date(Date.now() + 60_000));
    try {
      gw.reload(await loadGatewayConfigAsync(dir, {}));
      const res = await fetch(`${gw.url}/v1/chat/completions`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ model: 'cheap', messages: [{ role: 'user', content: 'hi' }], max_tokens: 2 }),
      });
      expect(res.status).toBe(200);
      expect(await servedEndpoint(gw, res)).toContain(new URL(dear.baseUrl).port);
      await res.arrayBuffer();
    } finally {
      writeFileSync(file, original);
      utimesSync(file, new Date(), new Date(Date.now() + 120_000));
      gw.reload(await loadGatewayConfigAsync(dir, {}));
    }
  });

  it('switchyard validate reports the left-out model with the module path and exits 1', async () => {
    const err: string[] = [];
    const spy = vi.spyOn(process.stderr, 'write').mockImplementation((s) => (err.push(String(s)), true));
    try {
      expect(await validateCommand.run([dir])).toBe(1);
    } finally {
      spy.mockRestore();
    }
    const text = err.join('');
    expect(text).toContain('1 model(s) would not load (the gateway starts without them, serving the other 3)');
    expect(text).toContain(`${join(dir, 'models.yaml')}:10: models.1.router: model 'broken' is not loaded: router 'not-there' is unavailable: strategy module ${join(dir, 'not-there.mjs')}`);
  });
});

describe('strategy module checks at load', () => {
  const url = 'http://127.0.0.1:9/v1';

  it('an unknown router_params key of a module strategy is refused, naming the allowed keys', async () => {
    const dir = configDir({ 'models.yaml': modelsYaml(url, 'http://127.0.0.1:10/v1', '    router_params: { unpriced_frist: true }\n'), 'gateway.yaml': 'strategies: [./cheapest-first.mjs]\nauth: { mode: none }\n' });
    const msg = await problemsOf(dir);
    expect(msg).toContain(`models.0.router_params: router_params for 'cheapest-first' are invalid: unknown key(s) 'unpriced_frist' (did you mean 'unpriced_first'?); allowed keys: unpriced_first`);
  });

  it('a module that takes a built-in name is refused: only its models are left out', async () => {
    const dir = configDir({
      'models.yaml': `models:\n  - id: a\n    router: fixed-ish\n    route: [{ base_url: ${url} }]\n  - id: b\n    route: [{ base_url: ${url} }]\n`,
      'gateway.yaml': 'strategies: [./fixed-ish.mjs]\nauth: { mode: none }\n',
      'fixed-ish.mjs': `export const name = 'fixed';\nexport function create() { return { pick: () => ({ candidate: 0, reason: 'x' }) }; }\n`,
    });
    const c = await loadGatewayConfigAsync(dir, {});
    expect(c.models.models.map((m) => m.id)).toEqual(['b']);
    expect(c.unavailableModels[0]!.message).toContain(`strategy module ${join(dir, 'fixed-ish.mjs')}: export 'name' is 'fixed', which is already registered (a built-in or another module); choose another name`);
  });

  it('a module without create names the missing export', async () => {
    const dir = configDir({
      'models.yaml': `models:\n  - id: a\n    router: no-create\n    route: [{ base_url: ${url} }]\n`,
      'gateway.yaml': 'strategies: [./no-create.mjs]\nauth: { mode: none }\n',
      'no-create.mjs': `export const name = 'no-create';\n`,
    });
    const c = await loadGatewayConfigAsync(dir, {});
    expect(c.models.models).toEqual([]);
    expect(c.unavailableModels[0]!.message).toContain(`strategy module ${join(dir, 'no-create.mjs')}: export 'create' is missing or not a function`);
  });

  it('a worker-safe module may run under several workers; one that does not say so is refused', async () => {
    const ok = configDir({ 'models.yaml': `models:\n  - id: a\n    router: cheapest-first\n    route: [{ base_url: ${url} }]\n`, 'gateway.yaml': 'strategies: [./cheapest-first.mjs]\nauth: { mode: none }\nserver: { workers: 2, port: 18080 }\n' });
    expect((await loadGatewayConfigAsync(ok, {})).strategies[0]!.workerSafe).toBe(true);
    const bad = configDir({
      'models.yaml': `models:\n  - id: a\n    router: learner\n    route: [{ base_url: ${url} }]\n`,
      'gateway.yaml': 'strategies: [./learner.mjs]\nauth: { mode: none }\nserver: { workers: 2, port: 18080 }\n',
      'learner.mjs': `export const name = 'learner';\nexport function create() { return { pick: () => ({ candidate: 0, reason: 'x' }) }; }\n`,
    });
    const refused = await problemsOf(bad);
    expect(refused).toContain(`2 workers, but routing state would be split per worker for: model 'a' (router learner)`);
    // The fix names the module's own way out, not only the built-ins.
    expect(refused).toContain('a strategy module that exports workerSafe: true');
  });
});

describe('--workers 2: each worker thread imports the modules', () => {
  let child: ChildProcess | null = null;
  const emus: RunningEmulator[] = [];
  afterAll(async () => {
    if (child && child.exitCode === null) child.kill('SIGKILL');
    await Promise.all(emus.map((e) => e.close()));
  });

  it('the CLI gateway with two workers routes every request by the module', async () => {
    const dear = await startEmulator({ faults: { latency_scale: 0.01 } });
    const cheap = await startEmulator({ faults: { latency_scale: 0.01 } });
    emus.push(dear, cheap);
    const port = await freePort();
    const dir = configDir({
      'models.yaml': `models:\n  - id: cheap\n    router: cheapest-first\n    route:\n      - base_url: ${dear.baseUrl}\n        pricing: { input_usd_per_1m: 3 }\n      - base_url: ${cheap.baseUrl}\n        pricing: { input_usd_per_1m: 1 }\n`,
      'gateway.yaml': `strategies: [./cheapest-first.mjs]\nserver:\n  host: 127.0.0.1\n  port: ${port}\n  workers: 2\n  admin_port: null\nauth:\n  mode: none\n`,
    });
    child = spawn(process.execPath, [join(ROOT, 'bin/switchyard.mjs'), 'gateway', '--config', dir, '--admin-port', 'off'], { cwd: dir, stdio: ['ignore', 'pipe', 'pipe'] });
    let out = '';
    child.stdout!.on('data', (x: Buffer) => (out += x.toString()));
    child.stderr!.on('data', (x: Buffer) => (out += x.toString()));
    for (let i = 0; !/switchyard gateway on http:\/\/127\.0\.0\.1:\d+\/v1 \(seed \d+, 2 worker\(s\)/.test(out); i++) {
      if (i > 2400 || child.exitCode !== null) throw new Error(`gateway did not start:\n${out}`);
      await new Promise((r) => setTimeout(r, 25));
    }
    for (let i = 0; i < 12; i++) {
      // A fresh connection each time, so the kernel spreads requests over both workers.
      const res = await fetch(`http://127.0.0.1:${port}/v1/chat/completions`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', connection: 'close' },
        body: JSON.stringify({ model: 'cheap', messages: [{ role: 'user', content: 'hi' }], max_tokens: 2 }),
      });
      expect(res.status).toBe(200);
      await res.arrayBuffer();
    }
    // Two workers: which one served is not this process's to ask; the upstreams' own logs tell.
    expect(cheap.log.all().filter((r) => r.path.includes('chat')).length).toBe(12);
    expect(dear.log.all().filter((r) => r.path.includes("chat")).length).toBe(0);
  }, 120_000);
});

const ROOT = join(import.meta.dirname, '..', '..');

/** A port that was free a moment ago. */
