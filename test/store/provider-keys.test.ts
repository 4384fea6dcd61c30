// Key reservations through the admin API against a real gateway on 127.0.0.1 (seed 000
// "为某个层级预留上游 key"), without a store and with an embedded PGlite store: provider keys added
// with a min_role join the running pool at once, a key's min_role changes at once, keys from the
// configuration are reserved by their SHA-256 (listed, even when no configured key matches, so
// they can be removed), keys never come back in clear, and the PGlite records survive a restart.
import { createHash } from 'node:crypto';
import pino from 'pino';
import OpenAI from 'openai';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { hashKey } from '../../gateway/callers.ts';
import { buildGatewayConfig } from '../../gateway/config/load.ts';
import { startGateway, type RunningGateway } from '../../gateway/gateway.ts';
import { startEmulator, type RunningEmulator } from '../../simulator/emulator/emulator.ts';
import { KEYS, hello } from '../gateway/harness.ts';
import { adminCall, freshPgliteDir } from './harness.ts';

const FREE = 'sk-caller-free';
const PRO = 'sk-caller-pro';
const UP = { shared: 'sk-up-shared', solo: 'sk-up-solo', added: 'sk-up-added', native: 'sk-up-native', nativeAdded: 'sk-up-native-added' } as const;
const sha = (s: string) => createHash('sha256').update(s, 'utf8').digest('hex');

function scenario(kind: 'memory' | 'pglite'): void {
  let emu: RunningEmulator;
  let gw: RunningGateway;
  let store: Record<string, unknown> | undefined;
  const start = () =>
    startGateway({
      config: buildGatewayConfig({
        models: {
          models: [
            { id: 'tiered', route: [{ base_url: emu.baseUrl, provider: 'acme', api_keys: [{ key: UP.shared, id: 'shared' }] }] },
            { id: 'solo', route: [{ base_url: emu.baseUrl, provider: 'solo-provider', api_key: UP.solo }] },
            { id: 'native', route: [{ kind: 'anthropic', base_url: emu.baseUrl, provider: 'anthro', api_key: UP.native }] },
          ],
        },
        gateway: {
          routing_settings: { affinity_enabled: false, prefill_aware_enabled: false },
          ...(store && { store }),
          store_poll_ms: 60_000,
          auth: {
            mode: 'keys',
            keys: [
              { id: 'free-user', sha256: hashKey(FREE) },
              { id: 'pro-user', sha256: hashKey(PRO), role: 'pro' },
              { id: 'admin', sha256: hashKey(KEYS.admin), admin: true },
            ],
          },
        },
      }),
      host: '127.0.0.1',
      port: 0,
      adminPort: 0,
      seed: 5,
      logger: pino({ level: 'silent' }),
    });
  const call = (method: string, path: string, body?: unknown) => adminCall(gw.url, method, path, body === undefined ? {} : { body });
  const chat = (key: string, model: string) => new OpenAI({ baseURL: `${gw.url}/v1`, apiKey: key, maxRetries: 0, timeout: 10_000 }).chat.completions.create({ model, messages: hello });
  const lastKey = () => emu.log.all().at(-1)!.authorization.replace(/^Bearer /, '');

  beforeAll(async () => {
    emu = await startEmulator({ mode: 'echo', faults: { latency_scale: 0.05 } });
    store = kind === 'pglite' ? { kind: 'pglite', dir: freshPgliteDir() } : undefined;
    gw = await start();
  });
  afterAll(async () => {
    await gw?.close();
    await emu?.close();
  });

  it(`${kind}: a provider key added with min_role joins the running pool at once, and is never returned in clear`, async () => {
    await chat(PRO, 'tiered');
    expect(lastKey()).toBe(UP.shared);
    const r = await call('POST', '/admin/provider-keys', { provider: 'acme', api_key: UP.added, key_id: 'added', min_role: 'pro' });
    expect(r.status).toBe(201);
    expect(r.body).toEqual({ key_id: 'added', provider: 'acme', min_role: 'pro', key_sha256_prefix: sha(UP.added).slice(0, 12), in_effect: true });
    await chat(PRO, 'tiered');
    expect(lastKey()).toBe(UP.added); // the pro caller drains its reserved key first
    await chat(FREE, 'tiered');
    expect(lastKey()).toBe(UP.shared);
    const list = await call('GET', '/admin/provider-keys');
    expect(list.body.keys).toMatchObject([{ key_id: 'added', provider: 'acme', min_role: 'pro' }]);
    expect(JSON.stringify(list.body)).not.toContain(UP.added);
    expect((await call('POST', '/admin/provider-keys', { provider: 'acme', api_key: UP.added })).status).toBe(409);
    expect((await call('POST', '/admin/provider-keys', { provider: 'acme', api_key: 'x', min_role: 'gold' })).body.error.param).toBe('min_role');
  });

  it(`${kind}: a key's min_role changes at once`, async () => {
    expect((await call('POST', '/admin/provider-keys/added/min-role', { min_role: 'internal' })).status).toBe(200);
    await chat(PRO, 'tiered');
    expect(lastKey()).toBe(UP.shared);
    expect((await call('POST', '/admin/provider-keys/nope/min-role', { min_role: 'pro' })).status).toBe(404);
  });

  it(`${kind}: a configured single api_key reserved by its hash takes the pool path: free callers are refused, pro callers served`, async () => {
    const r = await call('POST', '/admin/provider-keys/min-role-env', { api_key: UP.solo, min_role: 'pro' });
    expect(r.status).toBe(200);
    expect(r.body).toMatchObject({ key_sha256: sha(UP.solo), min_role: 'pro', configured: true, key_id: `key-${r.body.key_id.slice(4)}` });
    // A key models.yaml names by an id is answered by that id.
    const named = await call('POST', '/admin/provider-keys/min-role-env', { api_key: UP.shared, min_role: 'free' });
    expect(named.body).toMatchObject({ key_id: 'shared', configured: true });
    expect((await call('DELETE', `/admin/provider-keys/min-role-env/${sha(UP.shared)}`)).status).toBe(200);
    await expect(chat(FREE, 'solo')).rejects.toMatchObject({ status: 503 });
    await chat(PRO, 'solo');
    expect(lastKey()).toBe(UP.solo);
  });

  it(`${kind}: a reservation for a key configured nowhere is listed so it can be removed`, async () => {
    const ghost = sha('sk-not-configured');
    await call('POST', '/admin/provider-keys/min-role-env', { key_sha256: ghost, min_role: 'admin' });
    const list = await call('GET', '/admin/provider-keys');
    expect(list.body.env_reservations).toContainEqual(expect.objectContaining({ key_sha256: ghost, configured: false, key_id: null }));
    expect((await call('DELETE', `/admin/provider-keys/min-role-env/${ghost}`)).status).toBe(200);
    expect((await call('GET', '/admin/provider-keys')).body.env_reservations.map((e: { key_sha256: string }) => e.key_sha256)).not.toContain(ghost);
    expect((await call('POST', '/admin/provider-keys/min-role-env', { min_role: 'pro' })).status).toBe(400);
  });

  it(`${kind}: on an anthropic route a reservation and an added key are kept with in_effect false, and free callers keep being served`, async () => {
    const r = await call('POST', '/admin/provider-keys/min-role-env', { api_key: UP.native, min_role: 'pro' });
    expect(r.status).toBe(200);
    expect(r.body).toMatchObject({ key_sha256: sha(UP.native), min_role: 'pro', configured: true, in_effect: false });
    expect(r.body.note).toContain('allowed_models');
    const added = await call('POST', '/admin/provider-keys', { provider: 'anthro', api_key: UP.nativeAdded, key_id: 'native-added', min_role: 'admin' });
    expect(added.status).toBe(201);
    expect(added.body).toMatchObject({ key_id: 'native-added', in_effect: false });
    expect(gw.core.keyPools.pool(gw.core.model('native')!.routes[0]!.endpointId)).toBeNull();
    const res = await chat(FREE, 'native');
    expect(res.choices[0]!.message.role).toBe('assistant');
    const list = (await call('GET', '/admin/provider-keys')).body;
    expect(list.env_reservations).toContainEqual(expect.objectContaining({ key_sha256: sha(UP.native), in_effect: false }));
    expect(list.env_reservations).toContainEqual(expect.objectContaining({ key_sha256: sha(UP.solo), in_effect: true }));
    expect(list.keys).toContainEqual(expect.objectContaining({ key_id: 'native-added', in_effect: false }));
    expect(list.keys).toContainEqual(expect.objectContaining({ key_id: 'added', in_effect: true }));
    expect((await call('DELETE', '/admin/provider-keys/native-added')).status).toBe(200);
    expect((await call('DELETE', `/admin/provider-keys/min-role-env/${sha(UP.native)}`)).status).toBe(200);
  });

  if (kind === 'pglite') {
    it('pglite: keys and reservations survive a restart', async () => {
      await gw.close();
      gw = await start();
      await expect(chat(FREE, 'solo')).rejects.toMatchObject({ status: 503 });
      await chat(PRO, 'tiered');
      expect(lastKey()).toBe(UP.shared); // `added` is internal now
      expect((await call('GET', '/admin/provider-keys')).body.keys).toMatchObject([{ key_id: 'added', min_role: 'internal' }]);
    });
  }

  it(`${kind}: deleting a provider key removes it from the pool at once`, async () => {
    await call('POST', '/admin/provider-keys/added/min-role', { min_role: 'pro' });
    await chat(PRO, 'tiered');
    expect(lastKey()).toBe(UP.added);
    expect((await call('DELETE', '/admin/provider-keys/added')).status).toBe(200);
    await chat(PRO, 'tiered');
    expect(lastKey()).toBe(UP.shared);
  });
}

describe('provider keys without a store', () => scenario('memory'));
describe('provider keys in PGlite', () => scenario('pglite'));
