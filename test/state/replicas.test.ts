// Three gateways in one process, each with its own Redis clients (`state: {backend: redis}`),
// over one failing upstream (weight 1000, always 500) and a healthy fallback: the failing one is
// shut by all three once the failures counted across them reach the threshold, and after the
// cooldown exactly one half-open probe reaches it across the replicas. Then Redis is killed
// under load: no request fails, and the replicas reconnect and reconcile when it returns.
import { spawnSync } from 'node:child_process';
import { afterAll, describe, expect, inject, it, vi } from 'vitest';
import { hello, KEYS, rawJson, startRawStack, startRawUpstream, type RawStack, type RawUpstream } from '../gateway/harness.ts';
import { startEmulator, type RunningEmulator } from '../../simulator/emulator/emulator.ts';
import { startRedis } from './redis-server.ts';

const url = inject('redisUrl');
const skip = inject('redisSkip');
if (skip) console.warn(`replica tests skipped: ${skip}`);

const stacks: RawStack[] = [];
let bad: RawUpstream | null = null;
let good: RunningEmulator | null = null;

afterAll(async () => {
  for (const s of stacks) await s.close();
  await bad?.close();
  await good?.close();
});

const ask = (s: RawStack) => s.post('/v1/chat/completions', { model: 'demo', messages: hello, max_tokens: 3 });

describe.skipIf(!!skip)('three replicas sharing breakers through Redis', () => {
  it('count failures across replicas, shut the provider on all, and send one probe after the cooldown', async () => {
    let badHits = 0;
    bad = await startRawUpstream((sock) => {
      badHits++;
      sock.write(rawJson(500, { error: { message: 'down' } }));
    });
    good = await startEmulator({ faults: { latency_scale: 0.05 } });
    const state = { backend: 'redis', url, prefix: `rep${process.pid}:`, acquire_timeout_ms: 200, max_staleness_ms: 200 };
    for (let i = 0; i < 3; i++) {
      stacks.push(
        await startRawStack(
          [
            { base_url: bad.baseUrl, weight: 1000 },
            { base_url: good.baseUrl, weight: 1 },
          ],
          { health: { failure_threshold: 3, cooldown_sec: 3 }, state },
        ),
      );
    }
    const badId = stacks[0]!.ids[0]!;
    // One failure per replica: no replica reaches the threshold alone, together they do.
    for (const s of stacks) {
      const r = await ask(s);
      expect(r.status).toBe(200);
      await r.text();
    }
    expect(badHits).toBe(3);
    await vi.waitFor(() => expect(stacks.map((s) => s.gw.core.health.snapshotOf(badId, performance.now()).state)).toEqual(['open', 'open', 'open']));
    // While open, no replica sends to it.
    for (let round = 0; round < 3; round++) {
      for (const s of stacks) {
        const r = await ask(s);
        expect(r.status).toBe(200);
        await r.text();
      }
    }
    expect(badHits).toBe(3);
    // After the cooldown: keep traffic on every replica until the one probe has gone out …
    await vi.waitFor(
      async () => {
        for (const s of stacks) await (await ask(s)).text();
        expect(badHits).toBeGreaterThanOrEqual(4);
      },
      { timeout: 10_000, interval: 100 },
    );
    // … and for a while longer: still that one (the probe failed, so it is shut again everywhere).
    for (let round = 0; round < 5; round++) {
      for (const s of stacks) {
        const r = await ask(s);
        expect(r.status).toBe(200);
        await r.text();
      }
    }
    expect(badHits).toBe(4);
    const deep = await fetch(`${stacks[0]!.gw.url}/health/deep`, { headers: { authorization: `Bearer ${KEYS.admin}` } });
    expect(((await deep.json()) as { shared_state: { status: string } }).shared_state.status).toBe('up');
  });

  // Last: it stops and restarts the run's server.
  it('lose no request when Redis dies under load, report it, and reconnect when it returns', async () => {
    const deep = async (s: RawStack) => (await (await fetch(`${s.gw.url}/health/deep`, { headers: { authorization: `Bearer ${KEYS.admin}` } })).json()) as { status: string; shared_state: { status: string } };
    const statuses: number[] = [];
    const load = async (n: number) => {
      const rs = await Promise.all(Array.from({ length: n }, (_, i) => ask(stacks[i % 3]!).then(async (r) => (await r.text(), r.status))));
      statuses.push(...rs);
    };
    await load(30);
    const port = inject('redisPort');
    const during = load(60);
    spawnSync('redis-cli', ['-p', String(port), 'shutdown', 'nosave']);
    await during;
    await vi.waitFor(async () => expect((await Promise.all(stacks.map(deep))).map((d) => d.shared_state.status)).toEqual(['down', 'down', 'down']));
    expect((await deep(stacks[0]!)).status).not.toBe('ok');
    await load(30); // served on local state
    const server = await startRedis(inject('redisBin'), port, inject('redisDir'));
    server.unref();
    await vi.waitFor(async () => expect((await Promise.all(stacks.map(deep))).map((d) => d.shared_state.status)).toEqual(['up', 'up', 'up']), { timeout: 15_000, interval: 100 });
    await load(30);
    expect(statuses).toHaveLength(150);
    expect(statuses.filter((st) => st !== 200)).toEqual([]);
  });
});
