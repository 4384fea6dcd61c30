// The emulator speaks OpenAI's Responses API well enough for the official `openai` client: a
// whole response with usage, a stream in the Responses event grammar ending in
// response.completed (no [DONE]), incomplete when the asked max_output_tokens ran out, a forced function
// call, its key check, an in-band error event for the mid-stream fault, and a reasoning item with
// encrypted_content when the request includes it.
import OpenAI from 'openai';
import { afterEach, describe, expect, it } from 'vitest';
import { startEmulator, type RunningEmulator } from '../../simulator/emulator/emulator.ts';

let em: RunningEmulator | null = null;
afterEach(async () => {
  await em?.close();
  em = null;
});

const KEY = 'sk-emu-responses';
const client = (e: RunningEmulator, apiKey = KEY) => new OpenAI({ apiKey, baseURL: `http://${e.host}:${e.port}/v1`, maxRetries: 0 });

describe('POST /v1/responses', () => {
  it('answers a whole response, and streams the same grammar the client accumulates', async () => {
    em = await startEmulator({ apiKey: KEY, faults: { latency_scale: 0.02 }, defaultOutputTokens: 3 });
    const c = client(em);
    const r = await c.responses.create({ model: 'm', input: 'Hello' });
    expect(r).toMatchObject({ object: 'response', status: 'completed', model: 'm' });
    expect(r.usage?.output_tokens).toBe(3);
    expect(r.output_text.length).toBeGreaterThan(0);
    const res = await fetch(`http://${em.host}:${em.port}/v1/responses`, { method: 'POST', headers: { authorization: `Bearer ${KEY}`, 'content-type': 'application/json' }, body: JSON.stringify({ model: 'm', input: 'Hello', stream: true }) });
    const text = await res.text();
    expect(text).not.toContain('[DONE]');
    const names = [...text.matchAll(/^event: (.+)$/gm)].map((m) => m[1]);
    expect(names).toEqual(['response.created', 'response.in_progress', 'response.output_item.added', 'response.content_part.added', ...Array(3).fill('response.output_text.delta'), 'response.output_text.done', 'response.content_part.done', 'response.output_item.done', 'response.completed']);
    const final = await c.responses.stream({ model: 'm', input: 'Hello' }).finalResponse();
    expect(final.status).toBe('completed');
    expect(final.usage?.output_tokens).toBe(3);
  });

  it('a forced function call, the output limit as incomplete, a wrong key, and the mid-stream error', async () => {
    em = await startEmulator({ apiKey: KEY, faults: { latency_scale: 0.02 }, defaultOutputTokens: 4 });
    const c = client(em);
    const call = await c.responses.create({ model: 'm', input: 'x', tools: [{ type: 'function', name: 'f', parameters: null, strict: false }], tool_choice: 'required' });
    expect(call.output[0]).toMatchObject({ type: 'function_call', name: 'f' });
    const cut = await c.responses.create({ model: 'm', input: 'x', max_output_tokens: 2 });
    expect(cut).toMatchObject({ status: 'incomplete', incomplete_details: { reason: 'max_output_tokens' } });
    await expect(client(em, 'wrong').responses.create({ model: 'm', input: 'x' })).rejects.toBeInstanceOf(OpenAI.AuthenticationError);
    await em.close();
    em = await startEmulator({ faults: { latency_scale: 0.02, error_after_tokens: 1 } });
    const res = await fetch(`http://${em.host}:${em.port}/v1/responses`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ model: 'm', input: 'x', stream: true }) });
    const text = await res.text();
    expect(text).toContain('event: error');
    expect(text).not.toContain('response.completed');
  });

  it("include: ['reasoning.encrypted_content'] puts a reasoning item first, whole and streamed", async () => {
    em = await startEmulator({ faults: { latency_scale: 0.02 }, defaultOutputTokens: 2 });
    const c = client(em);
    const r = await c.responses.create({ model: 'm', input: 'x', include: ['reasoning.encrypted_content'] });
    expect(r.output.map((o) => o.type)).toEqual(['reasoning', 'message']);
    expect((r.output[0] as OpenAI.Responses.ResponseReasoningItem).encrypted_content).toMatch(/^enc_emu_\d+$/);
    expect(r.output_text.length).toBeGreaterThan(0);
    const final = await c.responses.stream({ model: 'm', input: 'x', include: ['reasoning.encrypted_content'] }).finalResponse();
    expect(final.output.map((o) => o.type)).toEqual(['reasoning', 'message']);
    expect(final.output_text.length).toBeGreaterThan(0);
  });
});
