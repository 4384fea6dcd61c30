// The emulator's usage endpoint (GET /v1/usage, PUT /emulator/usage) and the example quota
// fetcher that reads it: deterministic counts of the requests it served, the key check, and
// clear failures.
import { afterEach, describe, expect, it } from 'vitest';
import { emulatorUsageFetcher } from '../../gateway/routewise/fetchers/emulator-usage.ts';
import { startEmulator, type RunningEmulator } from '../../simulator/emulator/emulator.ts';
import { EmulatorSpecSchema, emulatorOptions } from '../../simulator/emulator/emulator-spec.ts';

let emu: RunningEmulator | null = null;
afterEach(async () => {
  await emu?.close();
  emu = null;
});

const chat = (e: RunningEmulator, key?: string) =>
  fetch(`${e.baseUrl}/chat/completions`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', ...(key && { authorization: `Bearer ${key}` }) },
    body: JSON.stringify({ model: 'x', messages: [{ role: 'user', content: 'hi' }], max_tokens: 2 }),
  }).then(async (r) => (await r.text(), r.status));

describe('GET /v1/usage', () => {
  it('is 404 on an emulator started without usage', async () => {
    emu = await startEmulator({ mode: 'echo' });
    expect((await fetch(`${emu.baseUrl}/usage`)).status).toBe(404);
    await expect(emulatorUsageFetcher({ provider: 'p', baseUrl: emu.baseUrl }).fetch(new AbortController().signal)).rejects.toThrow(/\/v1\/usage: HTTP 404/);
  });

  it('counts the requests served past the key check; PUT sets the count; the fetcher maps the record', async () => {
    emu = await startEmulator({ mode: 'echo', apiKey: 'k', usage: { provider: 'emu', usageLabel: 'requests_daily', limit: 10, windowSec: 86_400 } });
    expect(await chat(emu, 'k')).toBe(200);
    expect(await chat(emu, 'wrong')).toBe(401); // refused: not counted
    expect(await chat(emu, 'k')).toBe(200);
    expect((await fetch(`${emu.baseUrl}/usage`)).status).toBe(401);
    const body = await (await fetch(`${emu.baseUrl}/usage`, { headers: { authorization: 'Bearer k' } })).json();
    expect(body).toEqual({ object: 'list', data: [{ provider: 'emu', usage_label: 'requests_daily', unit: 'requests', used: 2, limit: 10, window_sec: 86_400, resets_at: null }] });

    const put = (b: unknown) => fetch(`http://${emu!.host}:${emu!.port}/emulator/usage`, { method: 'PUT', body: JSON.stringify(b) });
    expect((await put({ used: 9 })).status).toBe(200);
    expect((await put({ used: -1 })).status).toBe(400);
    expect((await put({ used: 'many' })).status).toBe(400);
    expect(emu.usage()).toEqual({ used: 9, limit: 10 });

    const records = await emulatorUsageFetcher({ provider: 'emu', baseUrl: emu.baseUrl, apiKey: 'k' }).fetch(new AbortController().signal);
    expect(records).toEqual([{ provider: 'emu', usageLabel: 'requests_daily', unit: 'requests', used: 9, limit: 10, windowSec: 86_400, resetsAtUnixMs: null }]);
  });

  it('emulators.yaml takes the same report as usage:', () => {
    const spec = EmulatorSpecSchema.parse({ port: 9001, usage: { provider: 'emu', usage_label: 'requests_daily', limit: 10, window_sec: 86_400 } });
    expect(emulatorOptions(spec).usage).toEqual({ provider: 'emu', usageLabel: 'requests_daily', limit: 10, windowSec: 86_400 });
    expect(() => EmulatorSpecSchema.parse({ port: 9001, usage: { provider: 'emu', usage_label: 'x', limit: 10, unit: 'tokens' } })).toThrow();
  });

  it('refuses a limit that is not > 0', async () => {
    await expect(startEmulator({ usage: { provider: 'emu', usageLabel: 'x', limit: 0 } })).rejects.toThrow(/usage\.limit must be > 0/);
  });
});
