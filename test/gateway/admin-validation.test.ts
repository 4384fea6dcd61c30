// Every admin body, query and precondition is checked before anything changes: 400 naming the
// field (`param`) and the fix, 404 for unknown models, endpoints, labels and URLs; one case per
// rule, on a gateway without a store (the same checks with PGlite and PostgreSQL behind them are
// in test/store/control-plane.test.ts).
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pino from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { endpointId } from '../../core/index.ts';
import { startGateway, type RunningGateway } from '../../gateway/gateway.ts';
import { startEmulator, type RunningEmulator } from '../../simulator/emulator/emulator.ts';
import { adminCall, weightPath } from '../store/harness-http.ts';
import { stackConfig } from './harness.ts';

let emu: RunningEmulator;
let gw: RunningGateway;
let id: string;

beforeAll(async () => {
  emu = await startEmulator({ faults: { latency_scale: 0.02 } });
  const log = join(mkdtempSync(join(tmpdir(), 'switchyard-admin-validation-')), 'log.duckdb');
  gw = await startGateway({ config: stackConfig([{}], [emu], { request_log: { path: log } }), host: '127.0.0.1', port: 0, seed: 1, logger: pino({ level: 'silent' }) });
  id = endpointId('demo', 'openai_compat', emu.baseUrl);
});
afterAll(async () => {
  await gw.close();
  await emu.close();
});

describe('admin validation', () => {
  it('each bad body, query or precondition gets 400 naming the field and the fix, and changes nothing', async () => {
    const label = (await adminCall(gw.url, 'GET', '/admin/routing/providers')).body.providers[0].provider as string;
    const cases: Array<[string, string, { body?: unknown; raw?: string; ifMatch?: string }, string | null, RegExp]> = [
      ['PUT', weightPath('demo', id), { body: { weight: -1 } }, 'weight', /'weight' is invalid.*(>= ?|≥ )0/],
      ['PUT', weightPath('demo', id), { body: { weight: 'heavy' } }, 'weight', /'weight' is invalid/],
      ['PUT', weightPath('demo', id), { body: {} }, 'weight', /'weight' is required/],
      ['PUT', weightPath('demo', id), { body: { weight: 1, colour: 'red' } }, 'colour', /Unknown field 'colour'/],
      ['PUT', weightPath('demo', id), { body: { wieght: 1 } }, 'wieght', /Unknown field 'wieght' \(did you mean 'weight'\?\)/],
      ['PUT', weightPath('demo', id), { body: { weight: 1, version: -2 } }, 'version', /'version' is invalid/],
      ['PUT', weightPath('demo', id), { raw: '[1, 2' }, null, /not valid JSON/],
      ['PUT', weightPath('demo', id), { body: { weight: 1 }, ifMatch: 'W/"x"' }, 'If-Match', /not a record version/],
      ['DELETE', weightPath('demo', id), { body: { version: 'one' } }, 'version', /'version' is invalid/],
      ['PUT', `/admin/routing/providers/${encodeURIComponent(label)}`, { body: { disabled: 'yes' } }, 'disabled', /'disabled' is invalid.*true or false/],
      ['PUT', `/admin/routing/providers/${encodeURIComponent(label)}`, { body: {} }, 'disabled', /'disabled' is required/],
      ['GET', '/admin/audit?limit=5000', {}, 'limit', /'limit' is invalid.*1 to 1000/],
      ['POST', '/admin/provider-keys/min-role-env', { body: { api_key: 'sk-x' } }, 'min_role', /^'min_role' is required; use one of: "free", "pro", "internal", "admin"\.$/],
      ['POST', '/admin/provider-keys/some-key/min-role', { body: {} }, 'min_role', /^'min_role' is required; use one of/],
      ['POST', '/admin/provider-keys', { body: { provider: 'openai', api_key: 'sk-x', min_role: 'boss' } }, 'min_role', /'min_role' is invalid: the string "boss" is not allowed/],
      ['GET', '/admin/recent-requests?limit=0', {}, 'limit', /'limit'/],
      ['GET', '/admin/recent-requests?since_ms=yesterday', {}, 'since_ms', /'since_ms'/],
      ['GET', '/admin/recent-requests?type=image', {}, 'type', /'type'/],
      ['GET', '/admin/recent-requests?model=', {}, 'model', /'model'/],
      ['GET', '/admin/recent-requests/offloads?days=0', {}, 'days', /'days'/],
      ['GET', '/admin/recent-requests/offloads?colour=red', {}, 'colour', /colour/],
    ];
    for (const [method, path, opts, param, message] of cases) {
      const r = await adminCall(gw.url, method, path, opts);
      const what = `${method} ${path} ${JSON.stringify(opts)}`;
      expect(r.status, what).toBe(400);
      expect(r.body.error.param, what).toBe(param);
      expect(r.body.error.message, what).toMatch(message);
    }
    const view = (await adminCall(gw.url, 'GET', '/admin/routing')).body;
    expect(view.generation).toBe(1); // nothing was applied
    expect(view.providers.every((p: { disabled: boolean }) => !p.disabled)).toBe(true);
  });

  it('unknown models, endpoints, labels, overrides and URLs get 404 with a code', async () => {
    const cases: Array<[string, string, unknown, string]> = [
      ['PUT', weightPath('nope', id), { weight: 1 }, 'model_not_found'],
      ['PUT', weightPath('demo', 'demo:nowhere'), { weight: 1 }, 'endpoint_not_found'],
      ['DELETE', weightPath('demo', id), undefined, 'override_not_found'],
      ['PUT', '/admin/routing/providers/no-such-label', { disabled: true }, 'provider_not_found'],
      ['GET', '/admin/nothing-here', undefined, 'not_found'],
    ];
    for (const [method, path, body, code] of cases) {
      const r = await adminCall(gw.url, method, path, { body });
      expect([r.status, r.body.error.code], `${method} ${path}`).toEqual([404, code]);
    }
  });
});
