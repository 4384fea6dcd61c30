// Configuration: the bundled example loads; `${VAR}` interpolation; every problem named by file,
// line, field and fix; `switchyard validate` exits non-zero on a broken directory.
import { execFile } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { afterAll, describe, expect, it, vi } from 'vitest';
import { validateCommand } from '../../gateway/gateway-command.ts';
import { buildGatewayConfig, ConfigError, loadGatewayConfig, type ConfigProblem } from '../../gateway/config/load.ts';
import { interpolateEnv } from '../../gateway/config/interpolate.ts';
import { hashKey } from '../../gateway/callers.ts';
import { requestLogMemoryLimitMb } from '../../gateway/config/gateway-settings.ts';

const root = join(import.meta.dirname, '..', '..');
const dirs: string[] = [];
afterAll(() => dirs.forEach((d) => rmSync(d, { recursive: true, force: true })));

function configDir(files: Record<string, string>): string {
  const dir = mkdtempSync(join(tmpdir(), 'switchyard-config-'));
  dirs.push(dir);
  for (const [name, text] of Object.entries(files)) writeFileSync(join(dir, name), text);
  return dir;
}

function problems(f: () => unknown): ConfigProblem[] {
  try {
    f();
  } catch (e) {
    if (e instanceof ConfigError) return e.problems;
    throw e;
  }
  throw new Error('expected a ConfigError');
}

const MODELS = `models:
  - id: demo
    route:
      - base_url: http://127.0.0.1:9001/v1
`;
const OPEN = `auth:\n  mode: none\n`;

describe('the bundled example', () => {
  it('loads from the directory or from models.yaml, with its keys', () => {
    const c = loadGatewayConfig(join(root, 'gateway/example/models.yaml'), {});
    expect(c.models.models[0]!.route).toHaveLength(3);
    expect(c.models.routing).toEqual({ default_router: 'fixed', local_weight_share: 0.8 });
    expect(c.settings.server.port).toBe(8080);
    expect(c.settings).not.toHaveProperty('emulators');
    expect(c.models.models[0]!.route[2]!.api_key).toBe('demo-hosted-key');
    // Every demo route declares its window, so an oversized request is refused at once.
    expect(c.models.models[0]!.route.map((r) => r.context_length)).toEqual([4096, 4096, 32768]);
    expect(loadGatewayConfig(join(root, 'gateway/example'), { DEMO_HOSTED_API_KEY: 'k2', SWITCHYARD_PORT: '9090' }).settings.server.port).toBe(9090);
  });
});

describe('${VAR} interpolation', () => {
  it('replaces, defaults, escapes and types whole references', () => {
    const { value, missing } = interpolateEnv(
      { a: 'x-${A}-y', b: '${B:-fallback}', port: '${PORT}', on: '${ON:-false}', lit: '$${A}', list: ['${A}'] },
      { A: 'aa', PORT: '8081' },
    );
    expect(value).toEqual({ a: 'x-aa-y', b: 'fallback', port: 8081, on: false, lit: '${A}', list: ['aa'] });
    expect(missing).toEqual([]);
    expect(interpolateEnv({ k: { deep: '${NOPE}' } }, {}).missing).toEqual([{ path: ['k', 'deep'], variable: 'NOPE' }]);
  });

  it('names the file, field and variable of an unset reference', () => {
    const dir = configDir({ 'models.yaml': MODELS.replace('http://127.0.0.1:9001/v1', '${UPSTREAM_URL}'), 'gateway.yaml': OPEN });
    const [p] = problems(() => loadGatewayConfig(dir, {}));
    expect(p).toMatchObject({ file: join(dir, 'models.yaml'), line: 4, field: 'models.0.route.0.base_url', message: 'environment variable UPSTREAM_URL is not set' });
    expect(p!.fix).toContain('UPSTREAM_URL');
  });
});

describe('problems name file, line, field and fix', () => {
  it('a misspelt field lists what is allowed there', () => {
    const dir = configDir({ 'models.yaml': MODELS + '        wieght: 2\n', 'gateway.yaml': OPEN });
    const [p] = problems(() => loadGatewayConfig(dir, {}));
    expect(p).toMatchObject({ file: join(dir, 'models.yaml'), field: 'models.0.route.0', message: "unknown field 'wieght'" });
    expect(p!.line).toBe(5); // the misspelt key's own line, not the line of the mapping around it
    expect(p!.fix).toMatch(/allowed here: .*weight/);
  });

  it('an unknown key in gateway.yaml is reported on its own line', () => {
    const dir = configDir({ 'models.yaml': MODELS, 'gateway.yaml': 'server:\n  port: 8080\n  wrokers: 2\nauth:\n  mode: none\n' });
    const [p] = problems(() => loadGatewayConfig(dir, {}));
    expect(p).toMatchObject({ file: join(dir, 'gateway.yaml'), line: 3, field: 'server', message: "unknown field 'wrokers'" });
  });

  it('an unknown router_params key: its own line, the allowed keys, the nearest one and the fix', () => {
    const models = 'models:\n  - id: demo\n    router: fixed\n    router_params:\n      affinity: true\n      prefill_awar: true\n    route:\n      - base_url: http://127.0.0.1:9001/v1\n';
    const [p] = problems(() => loadGatewayConfig(configDir({ 'models.yaml': models, 'gateway.yaml': OPEN }), {}));
    expect(p).toMatchObject({ line: 6, field: 'models.0.router_params' });
    expect(p!.message).toContain("unknown key(s) 'prefill_awar' (did you mean 'prefill_aware'?); allowed keys: hybrid_composition, prefill_aware, affinity — remove it or fix the spelling");
  });

  it('router_params.hybrid_composition: true is refused at load, saying the seeds do not specify it; false loads', () => {
    const models = (v: boolean) => `models:\n  - id: demo\n    router: fixed\n    router_params:\n      hybrid_composition: ${v}\n    route:\n      - base_url: http://127.0.0.1:9001/v1\n`;
    const [p] = problems(() => loadGatewayConfig(configDir({ 'models.yaml': models(true), 'gateway.yaml': OPEN }), {}));
    expect(p).toMatchObject({ field: 'models.0.router_params' });
    expect(p!.message).toContain('hybrid_composition: true is refused: the seeds do not specify what hybrid composition does');
    expect(p!.message).toContain('remove hybrid_composition from router_params');
    expect(p!.message).not.toContain('hybrid_composition: hybrid_composition');
    expect(() => loadGatewayConfig(configDir({ 'models.yaml': models(false), 'gateway.yaml': OPEN }), {})).not.toThrow();
  });

  it('quota fields on a non-RouteWise model are a warning; a quota_source without a registered fetcher too', () => {
    const route = `      - base_url: http://127.0.0.1:9001/v1\n        provider_type: quota\n        quota: { limit: 100, window_sec: 3600 }\n        quota_source: { provider: nobody-fetches, usage_label: x, unit: requests }\n`;
    const fixed = loadGatewayConfig(configDir({ 'models.yaml': `models:\n  - id: q\n    router: fixed\n    route:\n${route}`, 'gateway.yaml': OPEN }), {});
    expect(fixed.warnings).toContain("models.0 (id 'q').route.0: provider_type, quota, quota_source are read by router routewise only; this model's router is fixed, which ignores them — set router: routewise or remove them");
    const rw = loadGatewayConfig(configDir({ 'models.yaml': `models:\n  - id: q\n    router: routewise\n    route:\n${route}      - base_url: http://127.0.0.1:9002/v1\n        pricing: { input_usd_per_1m: 1, output_usd_per_1m: 2 }\n`, 'gateway.yaml': OPEN }), {});
    expect(rw.warnings.join('\n')).toContain("quota_source.provider 'nobody-fetches' has no registered quota fetcher");
  });

  it('wrong types, ranges and enums; several problems at once; routing.yaml is its own file', () => {
    const dir = configDir({
      'models.yaml': MODELS + '        weight: -1\n        input_modalities: [text, video]\n',
      'routing.yaml': 'default_router: fixed\nlocal_weight_share: 2\n',
      'gateway.yaml': 'server:\n  port: eighty\n  body_limit_mb: 0\nauth:\n  mode: none\n',
    });
    const ps = problems(() => loadGatewayConfig(dir, {}));
    const by = (field: string) => ps.find((p) => p.field === field);
    expect(by('models.0.route.0.weight')).toMatchObject({ line: 5, fix: 'use a value ≥ 0' });
    expect(by('models.0.route.0.input_modalities.1')!.fix).toMatch(/"text", "image", "audio"/);
    expect(by('local_weight_share')).toMatchObject({ file: join(dir, 'routing.yaml'), line: 2, fix: 'use a value ≤ 1' });
    // An exclusive bound (positive()) says so: 0 itself is out.
    expect(by('server.body_limit_mb')).toMatchObject({ file: join(dir, 'gateway.yaml'), line: 3, fix: 'use a value > 0' });
    expect(by('server.port')).toMatchObject({ file: join(dir, 'gateway.yaml'), line: 2, message: 'expected number, got the string "eighty"', fix: 'write a number' });
    // Range messages read as English, with the bound spaced.
    expect(by('server.body_limit_mb')!.message).toBe('too small: must be > 0');
    expect(by('local_weight_share')!.message).toBe('too big: must be ≤ 1');
  });

  it('an integer field names the type as a word and the fix takes its article', () => {
    const [p] = problems(() => loadGatewayConfig(configDir({ 'models.yaml': MODELS + '        context_length: 40.5\n', 'gateway.yaml': OPEN }), {}));
    expect(p).toMatchObject({ message: 'expected integer, got number 40.5', fix: 'write an integer' });
  });

  it("an unknown default_router is reported on the routing file's line, not on a model", () => {
    const dir = configDir({ 'models.yaml': MODELS, 'routing.yaml': 'local_weight_share: 0.5\ndefault_router: fxed\n', 'gateway.yaml': OPEN });
    const [p] = problems(() => loadGatewayConfig(dir, {}));
    expect(p).toMatchObject({ file: join(dir, 'routing.yaml'), line: 2, field: 'default_router', fix: 'set default_router to one of the known routers' });
    expect(p!.message).toContain("unknown router 'fxed'; known routers:");
    // A model's own misspelt router is still that model's line.
    const [q] = problems(() => loadGatewayConfig(configDir({ 'models.yaml': MODELS.replace('  - id: demo\n', '  - id: demo\n    router: fxed\n'), 'gateway.yaml': OPEN }), {}));
    expect(q).toMatchObject({ field: 'models.0.router' });
  });

  it('YAML syntax errors carry file, line, column and the offending line', () => {
    const dir = configDir({ 'models.yaml': 'models:\n  - id: demo\n    route: [{ base_url: "http://x" }\n  bad: : y\n' });
    const file = join(dir, 'models.yaml');
    let err: ConfigError | null = null;
    try {
      loadGatewayConfig(dir, {});
    } catch (e) {
      err = e as ConfigError;
    }
    const p = err!.problems[0]!;
    expect(p).toMatchObject({ file, field: '(yaml)', line: 4, column: 3 });
    expect(p.snippet).toContain('4 |   bad: : y');
    expect(err!.message).toContain(`${file}:4:3: (yaml): `);
    expect(err!.message).toMatch(/4 \|   bad: : y\n\s+\|   \^/);
  });

  it("the core's checks: unknown router, duplicate endpoint", () => {
    const bad = problems(() => buildGatewayConfig({ models: { models: [{ id: 'm', router: 'fastest', route: [{ base_url: 'http://127.0.0.1:1/v1' }] }] }, gateway: { auth: { mode: 'none' } } }));
    expect(bad[0]).toMatchObject({ field: 'models.0.router' });
    expect(bad[0]!.message).toMatch(/unknown router 'fastest'; known routers: .*fixed/);
    const dup = problems(() =>
      buildGatewayConfig({ models: { models: [{ id: 'm', route: [{ base_url: 'http://127.0.0.1:1/v1' }, { base_url: 'http://localhost:1/v2' }] }] }, gateway: { auth: { mode: 'none' } } }),
    );
    expect(dup[0]).toMatchObject({ field: 'models.0.route.1' });
  });

  it("the gateway's checks: route kinds, schemes, keys, allowed models, workers", () => {
    const ps = problems(() =>
      buildGatewayConfig({
        models: {
          models: [
            { id: 'm', route: [{ kind: 'gemini', base_url: 'https://generativelanguage.googleapis.com/v1' }] },
            { id: 'n', route: [{ base_url: 'sim://replica-0' }] },
          ],
        },
        gateway: { auth: { mode: 'keys', keys: [{ id: 'a', sha256: hashKey('k'), allowed_models: ['nope'] }] } },
      }),
    );
    expect(ps.map((p) => p.field)).toEqual(['models.0.route.0.kind', 'models.1.route.0.base_url']);
    const keyProblems = problems(() => buildGatewayConfig({ models: { models: [{ id: 'm', route: [{ base_url: 'http://127.0.0.1:1/v1' }] }] }, gateway: { auth: { keys: [{ id: 'a', sha256: hashKey('k'), allowed_models: ['nope'] }, { id: 'a', sha256: 'abc' }] } } }));
    expect(keyProblems.map((p) => p.field)).toEqual(['auth.keys.1.sha256']);
    expect(keyProblems[0]!.message).toMatch(/sha256sum/);
    const more = problems(() => buildGatewayConfig({ models: { models: [{ id: 'm', route: [{ base_url: 'http://127.0.0.1:1/v1' }] }] }, gateway: { auth: { keys: [{ id: 'a', sha256: hashKey('k'), allowed_models: ['nope'] }, { id: 'a', sha256: hashKey('j') }] } } }));
    expect(more.map((p) => p.field).sort()).toEqual(['auth.keys.0.allowed_models.0', 'auth.keys.1.id']);
    const empty = problems(() => buildGatewayConfig({ models: { models: [{ id: 'm', route: [{ base_url: 'http://127.0.0.1:1/v1' }] }] } }));
    expect(empty[0]).toMatchObject({ field: 'auth.keys', fix: expect.stringMatching(/auth\.mode: none/) });
  });

  it('routing settings: gateway.yaml, else ROUTING_* variables, checked at load', () => {
    const models = { models: [{ id: 'm', route: [{ base_url: 'http://127.0.0.1:1/v1' }] }] };
    expect(buildGatewayConfig({ models, gateway: { auth: { mode: 'none' } } }, { ROUTING_AFFINITY_ENABLED: '0' }).routingSettings).toMatchObject({ affinityEnabled: false });
    const [p] = problems(() => buildGatewayConfig({ models, gateway: { auth: { mode: 'none' } } }, { ROUTING_AFFINITY_ENABLED: 'maybe' }));
    expect(p).toMatchObject({ file: '(environment)', field: 'ROUTING_*' });
    expect(p!.message).toMatch(/ROUTING_AFFINITY_ENABLED='maybe'/);
    const both = buildGatewayConfig({ models, gateway: { auth: { mode: 'none' }, routing_settings: { affinity_enabled: true } } }, { ROUTING_AFFINITY_ENABLED: '0' });
    expect(both.routingSettings).toEqual({ affinity_enabled: true });
    expect(both.warnings.join()).toMatch(/ROUTING_AFFINITY_ENABLED is ignored/);
    const bad = problems(() => buildGatewayConfig({ models, gateway: { auth: { mode: 'none' }, routing_settings: { affinity_enabled: 'yes' } } }));
    expect(bad[0]!.message).toMatch(/affinity_enabled/);
  });

  it('a misspelt ROUTING_* / UPSTREAM_CONCURRENCY_* variable is a warning naming the nearest setting', () => {
    const models = { models: [{ id: 'm', route: [{ base_url: 'http://127.0.0.1:1/v1' }] }] };
    const c = buildGatewayConfig({ models, gateway: { auth: { mode: 'none' } } }, { ROUTING_AFFINITY_TTL_SECS: '5', UPSTREAM_CONCURRENCY_MAX_LIMT: '9', ROUTING_AFFINITY_TTL_SEC: '60' });
    expect(c.routingSettings).toMatchObject({ affinityTtlSec: 60 });
    expect(c.warnings).toContain('ROUTING_AFFINITY_TTL_SECS is not a Switchyard setting and is ignored; did you mean ROUTING_AFFINITY_TTL_SEC?');
    expect(c.warnings).toContain('UPSTREAM_CONCURRENCY_MAX_LIMT is not a Switchyard setting and is ignored; did you mean UPSTREAM_CONCURRENCY_MAX_LIMIT?');
    expect(buildGatewayConfig({ models, gateway: { auth: { mode: 'none' } } }, { ROUTING_AFFINITY_TTL_SEC: '60' }).warnings.join()).not.toMatch(/not a Switchyard setting/);
  });

  it('several workers: refused for stateful routing, a warning otherwise', () => {
    const models = { models: [{ id: 'm', router: 'least_busy', route: [{ base_url: 'http://127.0.0.1:1/v1' }] }] };
    const [p] = problems(() => buildGatewayConfig({ models, gateway: { auth: { mode: 'none' }, server: { workers: 4 } } }));
    expect(p).toMatchObject({ field: 'server.workers' });
    expect(p!.message).toMatch(/model 'm' \(router least_busy\)/);
    const ok = buildGatewayConfig({ models: { models: [{ id: 'm', route: [{ base_url: 'http://127.0.0.1:1/v1' }] }] }, gateway: { auth: { mode: 'none' }, server: { workers: 4 } } });
    expect(ok.warnings.join('\n')).toMatch(/per worker/);
    expect(p!.fix).toContain('state: {backend: redis');
    // Workers sharing their state through Redis take stateful routing, with a warning saying what is shared.
    const shared = buildGatewayConfig({ models, gateway: { auth: { mode: 'none' }, server: { workers: 4 }, state: { backend: 'redis', url: 'redis://127.0.0.1:6379' } } });
    expect(shared.warnings.join('\n')).toMatch(/state.backend redis: breakers .* shared through Redis/);
  });
});

describe('switchyard validate', () => {
  const run = (args: string[]) =>
    promisify(execFile)('node', [join(root, 'bin/switchyard.mjs'), 'validate', ...args], { cwd: root, env: { ...process.env, DEMO_HOSTED_API_KEY: '' } }).then(
      (r) => ({ code: 0, ...r }),
      (e: { code: number; stdout: string; stderr: string }) => e,
    );

  it('returns 0 on the example', async () => {
    const out: string[] = [];
    const spy = vi.spyOn(process.stdout, 'write').mockImplementation((s) => (out.push(String(s)), true));
    try {
      expect(await validateCommand.run([join(root, 'gateway/example')])).toBe(0);
    } finally {
      spy.mockRestore();
    }
    expect(out.join('')).toMatch(/^ok: 1 model\(s\), 3 route\(s\); auth keys \(2 key\(s\)\)/);
  });

  it('exits 1 on a broken directory, naming file, line, field and fix', async () => {
    const dir = configDir({ 'models.yaml': MODELS + '        wieght: 2\n', 'gateway.yaml': 'auth:\n  mode: nobody\n' });
    const bad = await run([dir]);
    expect(bad.code).toBe(1);
    expect(bad.stderr).toContain(`${join(dir, 'models.yaml')}:5: models.0.route.0: unknown field 'wieght' — fix: remove it or fix the spelling; allowed here:`);
    expect(bad.stderr).toContain(`${join(dir, 'gateway.yaml')}:2: auth.mode: the string "nobody" is not allowed — fix: use one of: "keys", "none"`);
  });

  it('a directory without models.yaml: the fix fits validate as well as gateway --config', () => {
    const empty = mkdtempSync(join(tmpdir(), 'switchyard-noconfig-'));
    let problem: ConfigProblem | undefined;
    try {
      loadGatewayConfig(empty);
    } catch (e) {
      problem = (e as ConfigError).problems[0];
    }
    expect(problem).toMatchObject({ file: join(empty, 'models.yaml'), field: '(root)', message: 'file not found' });
    expect(problem!.fix).toBe('give a models.yaml or a directory that holds one (switchyard gateway --config PATH, switchyard validate PATH)');
  });
});

describe('request log memory limit', () => {
  it('defaults to 32 MB, 128 MB when prompts are logged, and keeps a value that is set', () => {
    const rl = (more: object) =>
      buildGatewayConfig({
        models: { models: [{ id: 'm', route: [{ base_url: 'http://127.0.0.1:1/v1' }] }] },
        gateway: { auth: { mode: 'none' }, request_log: { path: 'x.duckdb', ...more } },
      }).settings.request_log!;
    expect(requestLogMemoryLimitMb(rl({}))).toBe(32);
    expect(requestLogMemoryLimitMb(rl({ log_prompts: true }))).toBe(128);
    expect(requestLogMemoryLimitMb(rl({ log_prompts: true, memory_limit_mb: 64 }))).toBe(64);
    expect(requestLogMemoryLimitMb(rl({ memory_limit_mb: 16 }))).toBe(16);
  });
});

describe('tracing settings', () => {
  const models = { models: [{ id: 'demo', route: [{ base_url: 'http://127.0.0.1:9001/v1' }] }] };
  it('are off by default, with the OTLP/HTTP default endpoint, every trace sampled and the service name', () => {
    const c = buildGatewayConfig({ models, gateway: { auth: { mode: 'none' } } });
    expect(c.settings.tracing).toEqual({ enabled: false, endpoint: 'http://127.0.0.1:4318/v1/traces', sample_ratio: 1, service_name: 'switchyard-gateway' });
    const on = buildGatewayConfig({ models, gateway: { auth: { mode: 'none' }, tracing: { enabled: true, endpoint: 'https://otel.example:4318/v1/traces', sample_ratio: 0.25, service_name: 'gw-a' } } });
    expect(on.settings.tracing).toEqual({ enabled: true, endpoint: 'https://otel.example:4318/v1/traces', sample_ratio: 0.25, service_name: 'gw-a' });
  });
  it.each([
    ['sample_ratio', { sample_ratio: 1.5 }],
    ['sample_ratio', { sample_ratio: -0.1 }],
    ['endpoint', { endpoint: 'otel:4318' }],
    ['service_name', { service_name: '' }],
    ['enabled', { enabled: 'yes' }],
  ])('refuse a bad %s, naming the field', (field, tracing) => {
    const p = problems(() => buildGatewayConfig({ models, gateway: { auth: { mode: 'none' }, tracing } }));
    expect(p.map((x) => x.field)).toEqual([`tracing.${field}`]);
  });
  it('refuse an unknown key', () => {
    const p = problems(() => buildGatewayConfig({ models, gateway: { auth: { mode: 'none' }, tracing: { enable: true } } }));
    expect(p[0]!.field).toMatch(/^tracing/);
  });
});
