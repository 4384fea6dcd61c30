// Upstream key pools through a real gateway (seed 000 "为某个层级预留上游 key"), with the official
// `openai` client against engine emulators that record which key each request carried: a free
// caller never uses a pro key, a pro caller drains its reserved key first, a 429 storm on one key
// silences it and traffic moves to the next, and a role-restricted pool never opens the breaker.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import OpenAI from 'openai';
import pino from 'pino';
import { endpointId, keyFingerprint } from '../../core/index.ts';
import { Callers, hashKey, roleOf } from '../../gateway/callers.ts';
import { buildGatewayConfig } from '../../gateway/config/load.ts';
import { startGateway, type RunningGateway } from '../../gateway/gateway.ts';
import { startEmulator, type RunningEmulator } from '../../simulator/emulator/emulator.ts';
import { hello } from './harness.ts';

const CALLERS = { free: 'sk-caller-free', pro: 'sk-caller-pro', internal: 'sk-caller-internal' } as const;
const UP = { shared: 'sk-up-shared', pro: 'sk-up-pro', reserved: 'sk-up-reserved' } as const;

let pooled: RunningEmulator;
let spare: RunningEmulator;
let gw: RunningGateway;
const client = (key: string) => new OpenAI({ baseURL: `${gw.url}/v1`, apiKey: key, maxRetries: 0, timeout: 10_000 });
const keysSeen = (emu: RunningEmulator, from = 0) => emu.log.all().slice(from).map((r) => r.authorization.replace(/^Bearer /, ''));

beforeAll(async () => {
  pooled = await startEmulator({ mode: 'echo', faults: { latency_scale: 0.05, retry_after_sec: 60 } });
  spare = await startEmulator({ mode: 'echo', faults: { latency_scale: 0.05 } });
  const config = buildGatewayConfig({
    models: {
      models: [
        {
          id: 'tiered',
          route: [{ base_url: pooled.baseUrl, api_keys: [{ key: UP.shared, id: 'shared' }, { key: UP.pro, id: 'pro', min_role: 'pro' }] }],
        },
        {
          id: 'reserved',
          router: 'failover',
          route: [
            { base_url: pooled.baseUrl, api_keys: [{ key: UP.reserved, id: 'reserved', min_role: 'internal' }] },
            { base_url: spare.baseUrl },
          ],
        },
      ],
    },
    gateway: {
      routing_settings: { affinity_enabled: false, prefill_aware_enabled: false },
      health: { failure_threshold: 2 },
      auth: {
        mode: 'keys',
        keys: [
          { id: 'free-user', sha256: hashKey(CALLERS.free) },
          { id: 'pro-user', sha256: hashKey(CALLERS.pro), role: 'pro' },
          { id: 'staff', sha256: hashKey(CALLERS.internal), role: 'internal' },
        ],
      },
    },
  });
  gw = await startGateway({ config, host: '127.0.0.1', port: 0, seed: 7, logger: pino({ level: 'silent' }) });
});

afterAll(async () => {
  await gw?.close();
  await pooled?.close();
  await spare?.close();
});

describe('key pools through the gateway', () => {
  it('a free caller never uses a pro key; a pro caller drains its reserved key first', async () => {
    const from = pooled.log.all().length;
    for (let i = 0; i < 6; i++) await client(CALLERS.free).chat.completions.create({ model: 'tiered', messages: hello });
    expect(keysSeen(pooled, from)).toEqual(Array(6).fill(UP.shared));
    const mid = pooled.log.all().length;
    for (let i = 0; i < 6; i++) await client(CALLERS.pro).chat.completions.create({ model: 'tiered', messages: hello });
    expect(keysSeen(pooled, mid)).toEqual(Array(6).fill(UP.pro));
  });

  it('a 429 storm on one key silences it: the request goes on with the next key, later ones skip it, the endpoint stays healthy', async () => {
    pooled.setRateLimitedKeys([UP.pro]);
    try {
      const from = pooled.log.all().length;
      const r = await client(CALLERS.pro).chat.completions.create({ model: 'tiered', messages: hello });
      expect(r.choices[0]!.message.content).toBeTruthy();
      expect(keysSeen(pooled, from)).toEqual([UP.pro, UP.shared]);
      const mid = pooled.log.all().length;
      for (let i = 0; i < 5; i++) await client(CALLERS.pro).chat.completions.create({ model: 'tiered', messages: hello });
      expect(keysSeen(pooled, mid)).toEqual(Array(5).fill(UP.shared)); // silenced for the upstream's Retry-After
      const id = endpointId('tiered', 'openai_compat', pooled.baseUrl);
      expect(gw.core.health.snapshotOf(id, performance.now()).state).toBe('closed');
      expect(gw.core.keyPools.pool(id)!.isSilenced(keyFingerprint(UP.pro), performance.now())).toBe(true);
    } finally {
      pooled.setRateLimitedKeys([]);
    }
  });

  it('a role-restricted pool never opens the breaker: free callers fall back to the spare route, the internal tier keeps its key', async () => {
    const id = endpointId('reserved', 'openai_compat', pooled.baseUrl);
    const from = pooled.log.all().length;
    const spareFrom = spare.log.all().length;
    for (let i = 0; i < 8; i++) await client(CALLERS.free).chat.completions.create({ model: 'reserved', messages: hello });
    for (let i = 0; i < 4; i++) await client(CALLERS.pro).chat.completions.create({ model: 'reserved', messages: hello });
    expect(keysSeen(pooled, from)).toEqual([]); // the reserved key was never sent for them
    expect(spare.log.all().length - spareFrom).toBe(12);
    const h = gw.core.health.snapshotOf(id, performance.now());
    expect(h.state).toBe('closed');
    expect(h.consecutiveFailures).toBe(0);
    await client(CALLERS.internal).chat.completions.create({ model: 'reserved', messages: hello });
    expect(keysSeen(pooled, from)).toEqual([UP.reserved]);
  });

  it('caller keys: admin: true is role admin; a contradictory role is refused naming the field', () => {
    const bad = (keys: unknown[]) => () => buildGatewayConfig({ models: { models: [{ id: 'm', route: [{ base_url: 'http://127.0.0.1:9/v1' }] }] }, gateway: { auth: { mode: 'keys', keys } } });
    expect(bad([{ id: 'a', sha256: hashKey('x'), admin: true, role: 'pro' }])).toThrow(/admin: true means role: admin, but role is pro/);
    expect(bad([{ id: 'a', sha256: hashKey('x'), admin: false, role: 'admin' }])).toThrow(/role: admin makes the key an admin/);
    expect(bad([{ id: 'a', sha256: hashKey('x'), role: 'gold' }])).toThrow(/role/);
    expect(() => buildGatewayConfig({ models: { models: [{ id: 'm', route: [{ base_url: 'http://127.0.0.1:9/v1' }] }] }, gateway: { auth: { mode: 'keys', anonymous_role: 'pro' } } })).toThrow(/anonymous_role applies to auth.mode: none/);
  });

  it('callers carry their tier: role, admin: true as admin, grant_id, anonymous_role under auth: none', () => {
    const cfg = (auth: Record<string, unknown>) => buildGatewayConfig({ models: { models: [{ id: 'm', route: [{ base_url: 'http://127.0.0.1:9/v1' }] }] }, gateway: { auth } }).settings.auth;
    const keyed = new Callers(cfg({ mode: 'keys', keys: [{ id: 'a', sha256: hashKey('k-a'), admin: true }, { id: 'p', sha256: hashKey('k-p'), role: 'pro', grant_id: 'g1' }, { id: 'f', sha256: hashKey('k-f') }] }), gw.core);
    expect(keyed.authenticate('Bearer k-a')).toMatchObject({ admin: true, role: 'admin' });
    expect(keyed.authenticate('Bearer k-p')).toMatchObject({ admin: false, role: 'pro', grantId: 'g1' });
    expect(roleOf(keyed.authenticate('Bearer k-f')!)).toBe('free');
    expect(new Callers(cfg({ mode: 'none', anonymous_role: 'internal' }), gw.core).authenticate('')).toMatchObject({ role: 'internal', admin: false });
    expect(new Callers(cfg({ mode: 'none' }), gw.core).authenticate('')).toMatchObject({ role: 'free' });
    expect(new Callers(cfg({ mode: 'none', anonymous_admin: true }), gw.core).authenticate('')).toMatchObject({ role: 'admin', admin: true });
  });
});
