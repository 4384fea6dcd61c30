// Every admin call is audited, refused ones included (who: `anonymous`, `key:<hash prefix>` or
// the non-admin caller; the remote address; what; the status), on both listeners; and a flood of
// refused calls costs at most `itemised` entries per window plus one summary, which names how
// many were suppressed and from where. (The store-backed audit log is exercised by
// test/store/control-plane.test.ts.)
import pino from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { hashKey } from '../../gateway/callers.ts';
import { refusedWho } from '../../gateway/admin/refused-audit.ts';
import { startGateway, type RunningGateway } from '../../gateway/gateway.ts';
import { startEmulator, type RunningEmulator } from '../../simulator/emulator/emulator.ts';
import { adminCall } from '../store/harness-http.ts';
import { KEYS, stackConfig } from './harness.ts';

const WINDOW_MS = 1_000;
const ITEMISED = 6;
let emu: RunningEmulator;
let gw: RunningGateway;

type Entry = { caller_id: string; remote_addr: string | null; method: string; path: string; status: number; after: any };
const audit = async (): Promise<Entry[]> => (await adminCall(gw.adminUrl!, 'GET', '/admin/audit?limit=1000')).body.entries;

beforeAll(async () => {
  emu = await startEmulator({ faults: { latency_scale: 0.02 } });
  gw = await startGateway({ config: stackConfig([{}], [emu]), host: '127.0.0.1', port: 0, adminPort: 0, seed: 1, logger: pino({ level: 'silent' }), refusedAudit: { windowMs: WINDOW_MS, itemised: ITEMISED } });
});
afterAll(async () => {
  await gw.close();
  await emu.close();
});

describe('admin audit', () => {
  it('refused calls are audited with who, where, what and the status, on both listeners', async () => {
    await new Promise((r) => setTimeout(r, WINDOW_MS)); // a fresh window
    expect((await adminCall(gw.url, 'GET', '/admin/routing', { key: null })).status).toBe(401);
    expect((await adminCall(gw.adminUrl!, 'PUT', '/admin/routing/providers/x', { key: 'sk-wrong', body: { disabled: true } })).status).toBe(401);
    expect((await adminCall(gw.url, 'GET', '/health/deep', { key: KEYS.user })).status).toBe(404);
    expect((await adminCall(gw.adminUrl!, 'GET', '/routing', { key: KEYS.user })).status).toBe(403);
    const entries = await audit();
    const refused = entries.filter((e) => e.status !== 200).slice(0, 4).reverse();
    expect(refused.map((e) => [e.caller_id, e.method, e.path, e.status])).toEqual([
      ['anonymous', 'GET', '/admin/routing', 401],
      [`key:${hashKey('sk-wrong').slice(0, 12)}`, 'PUT', '/admin/routing/providers/x', 401],
      ['user', 'GET', '/health/deep', 404],
      ['user', 'GET', '/routing', 403],
    ]);
    for (const e of refused) expect(e.remote_addr).toMatch(/127\.0\.0\.1|::1|7f00:1/);
    // The listing itself was audited, as an admin's call (after it answered, so the next one shows it).
    expect((await audit())[0]).toMatchObject({ caller_id: 'admin', method: 'GET', path: '/admin/audit', status: 200 });
    expect(refusedWho('Bearer  sk-x ')).toBe(`key:${hashKey('sk-x').slice(0, 12)}`);
    expect(refusedWho('Basic abc')).toBe('anonymous');
  });

  it('a flood of unauthenticated calls costs at most the itemised budget per window and one summary', async () => {
    await new Promise((r) => setTimeout(r, WINDOW_MS));
    const before = (await audit()).length;
    const FLOOD = 120;
    const statuses = await Promise.all(Array.from({ length: FLOOD }, (_, i) => adminCall(gw.url, 'GET', `/admin/routing/${'x'.repeat(i % 3 === 0 ? 1000 : 1)}${i}`, { key: i % 2 ? null : `sk-bad-${i}` }).then((r) => r.status)));
    expect(new Set(statuses)).toEqual(new Set([401]));
    await new Promise((r) => setTimeout(r, WINDOW_MS + 50));
    await audit(); // the first audited call after the window writes its summary
    const entries = await audit();
    const added = entries.slice(0, entries.length - before);
    const itemised = added.filter((e) => e.status === 401 && e.caller_id !== 'refused-calls');
    const summaries = added.filter((e) => e.caller_id === 'refused-calls');
    expect(itemised.length).toBeLessThanOrEqual(ITEMISED);
    expect(summaries).toHaveLength(1);
    expect(summaries[0]).toMatchObject({ method: '*', path: '*', status: 401, remote_addr: null });
    expect(summaries[0]!.after.suppressed + itemised.length).toBe(FLOOD);
    expect(Object.values(summaries[0]!.after.by_remote as Record<string, number>).reduce((a, b) => a + b, 0)).toBe(summaries[0]!.after.suppressed);
    expect(Math.max(...itemised.map((e) => e.path.length))).toBeLessThanOrEqual(257); // paths are cut
  });
});
