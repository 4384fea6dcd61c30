// Stored /v1/responses responses on the control plane's store (PGlite here; the same SQL runs on
// PostgreSQL): get and put with the TTL, and a gateway whose stored conversation outlives a
// restart — a follow-up turn and responses.retrieve after it, with the official openai client.
import OpenAI from 'openai';
import pino from 'pino';
import { afterEach, describe, expect, it } from 'vitest';
import { startGateway } from '../../gateway/gateway.ts';
import { openStore } from '../../gateway/store/sql-store.ts';
import { SqlResponseStore } from '../../gateway/store/response-records.ts';
import { startEmulator } from '../../simulator/emulator/emulator.ts';
import { KEYS, stackConfig } from '../gateway/harness.ts';
import { freshPgliteDir } from './harness.ts';

const opened: Array<{ close(): Promise<void> }> = [];
afterEach(async () => {
  for (const x of opened.splice(0).reverse()) await x.close();
});

describe('SqlResponseStore', () => {
  it('stores, replaces and forgets responses past their TTL', async () => {
    const store = await openStore({ kind: 'pglite', dir: freshPgliteDir() });
    opened.push(store);
    let now = 1_000_000;
    const s = new SqlResponseStore(store, 5_000, () => now);
    expect(await s.get('resp_x')).toBeNull();
    await s.put({ id: 'resp_x', endpointId: 'e1', response: { id: 'resp_x', output: [{ type: 'message' }] }, input: [{ role: 'user', content: 'hi' }] });
    await s.put({ id: 'resp_x', endpointId: 'e2', response: { id: 'resp_x', output: [] }, input: [] });
    expect(await s.get('resp_x')).toEqual({ id: 'resp_x', endpointId: 'e2', response: { id: 'resp_x', output: [] }, input: [] });
    now += 5_001;
    expect(await s.get('resp_x')).toBeNull();
  });
});

describe('a gateway with a store', () => {
  it('keeps a conversation across a restart: previous_response_id and retrieve still work', async () => {
    const emu = await startEmulator({ faults: { latency_scale: 0.02 }, defaultOutputTokens: 3 });
    opened.push(emu);
    const dir = freshPgliteDir();
    const config = () => stackConfig([{}], [emu], { store: { kind: 'pglite', dir } });
    const start = () => startGateway({ config: config(), host: '127.0.0.1', port: 0, seed: 1, logger: pino({ level: 'silent' }) });
    const first = await start();
    const c1 = new OpenAI({ apiKey: KEYS.user, baseURL: `${first.url}/v1`, maxRetries: 0 });
    const r = await c1.responses.create({ model: 'demo', input: 'Remember the word teal.' });
    await first.close();
    const second = await start();
    opened.push(second);
    const c2 = new OpenAI({ apiKey: KEYS.user, baseURL: `${second.url}/v1`, maxRetries: 0 });
    expect((await c2.responses.retrieve(r.id)).output_text).toBe(r.output_text);
    const next = await c2.responses.create({ model: 'demo', input: 'Which word?', previous_response_id: r.id });
    expect(next.previous_response_id).toBe(r.id);
    expect(JSON.stringify(emu.log.all().at(-1)!.body)).toContain('Remember the word teal.');
  });
});
