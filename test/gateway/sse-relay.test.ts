// The SSE relay's output depends only on the upstream bytes, never on how TCP cut them: checked
// on the pure relay at every split position and random multi-splits (fast-check), and through
// the running gateway against a raw TCP upstream that splits its writes at every byte position.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import fc from 'fast-check';
import pino from 'pino';
import { buildGatewayConfig } from '../../gateway/config/load.ts';
import { startGateway, type RunningGateway } from '../../gateway/gateway.ts';
import { SseRelay, type RelayEvent } from '../../gateway/sse-relay.ts';
import { startRawUpstream, type RawUpstream } from './harness.ts';

const chunk = (delta: Record<string, unknown>, extra: Record<string, unknown> = {}) =>
  JSON.stringify({ id: 'c1', object: 'chat.completion.chunk', created: 1, model: 'upstream-name', choices: [{ index: 0, delta, finish_reason: null }], ...extra });

/** An upstream stream with the awkward parts: CRLF and LF, comments, multi-byte UTF-8, tool calls, usage. */
const UPSTREAM = Buffer.from(
  [
    ': keep-alive\n\n',
    `data: ${chunk({ role: 'assistant', content: '' })}\r\n\r\n`,
    `data: ${chunk({ content: 'héllo wörld 日本語 🚀' })}\n\n`,
    `data: ${chunk({ tool_calls: [{ index: 0, id: 'call_1', type: 'function', function: { name: 'f', arguments: '{"q": "ü' } }] })}\n\n`,
    `data: ${chunk({ tool_calls: [{ index: 0, function: { arguments: '"}' } }] })}\n\n`,
    `data: ${JSON.stringify({ id: 'c1', object: 'chat.completion.chunk', created: 1, model: 'upstream-name', choices: [{ index: 0, delta: {}, finish_reason: 'tool_calls' }] })}\n\n`,
    `data: ${JSON.stringify({ id: 'c1', object: 'chat.completion.chunk', created: 1, model: 'upstream-name', choices: [], usage: { prompt_tokens: 5, completion_tokens: 4, total_tokens: 9 } })}\n\n`,
    'data: [DONE]\n\n',
  ].join(''),
  'utf8',
);

/** A shorter stream for the sweep through real sockets (one request per cut). */
const SHORT = Buffer.from(
  [': ping\n\n', `data: ${chunk({ role: 'assistant', content: '' })}\r\n\r\n`, `data: ${chunk({ content: 'ü日🚀' })}\n\n`, 'data: [DONE]\n\n'].join(''),
  'utf8',
);

function relayAll(parts: Uint8Array[], includeUsage = false): { events: RelayEvent[]; usage: unknown } {
  const relay = new SseRelay({ endpoint: 'chat', includeUsage, model: 'demo' });
  const out: RelayEvent[] = [];
  for (const p of parts) relay.push(p, out);
  relay.end(out);
  return { events: out, usage: relay.usage };
}

describe('SseRelay (pure)', () => {
  const whole = relayAll([UPSTREAM]);

  it('relays frames with token flags, drops comments and the usage chunk, rewrites the model', () => {
    const frames = whole.events.filter((e): e is Extract<RelayEvent, { kind: 'frame' }> => e.kind === 'frame');
    expect(frames.map((f) => f.token)).toEqual([false, true, true, true, false]);
    expect(frames.every((f) => f.text.startsWith('data: {') && f.text.endsWith('}\n\n'))).toBe(true);
    expect(frames.every((f) => JSON.parse(f.text.slice(6)).model === 'demo')).toBe(true);
    expect(frames[1]!.text).toContain('héllo wörld 日本語 🚀');
    expect(whole.events.at(-1)).toEqual({ kind: 'done', usage: { inputTokens: 5, outputTokens: 4, cachedTokens: 0 } });
    const withUsage = relayAll([UPSTREAM], true).events.filter((e) => e.kind === 'frame');
    expect(withUsage).toHaveLength(6);
    expect((withUsage[5] as { text: string }).text).toContain('"usage"');
  });

  it('is identical for a split at every byte position', () => {
    for (let i = 0; i <= UPSTREAM.length; i++) {
      expect(relayAll([UPSTREAM.subarray(0, i), UPSTREAM.subarray(i)])).toEqual(whole);
    }
  });

  it('is identical for any number of splits (fast-check)', () => {
    fc.assert(
      fc.property(fc.uniqueArray(fc.integer({ min: 1, max: UPSTREAM.length - 1 }), { maxLength: 40 }), (cuts) => {
        const at = [0, ...cuts.sort((a, b) => a - b), UPSTREAM.length];
        const parts = at.slice(1).map((end, k) => UPSTREAM.subarray(at[k]!, end));
        expect(relayAll(parts)).toEqual(whole);
      }),
      { numRuns: 300 },
    );
  });

  it('reports in-band errors and malformed data, and ignores bytes after them', () => {
    const err = relayAll([Buffer.from(`data: ${chunk({ role: 'assistant' })}\n\ndata: {"error":{"message":"boom","code":503}}\n\ndata: ${chunk({ content: 'late' })}\n\n`)]);
    expect(err.events.map((e) => e.kind)).toEqual(['frame', 'upstream_error']);
    expect(err.events[1]).toMatchObject({ status: 503, message: 'boom' });
    const bad = relayAll([Buffer.from('data: {not json\n\n')]);
    expect(bad.events).toEqual([{ kind: 'malformed', reason: expect.any(String) }]);
    // An unterminated last event is discarded (SSE rules): no done.
    expect(relayAll([Buffer.from('data: [DONE]')]).events).toEqual([]);
  });

  it('counts content, refusal, reasoning and tool calls as tokens; role-only and empty deltas not', () => {
    const token = (delta: Record<string, unknown>) => (relayAll([Buffer.from(`data: ${chunk(delta)}\n\n`)]).events[0] as { token: boolean }).token;
    expect(token({ role: 'assistant', content: '' })).toBe(false);
    expect(token({})).toBe(false);
    expect(token({ content: 'x' })).toBe(true);
    expect(token({ reasoning_content: 'hm' })).toBe(true);
    expect(token({ refusal: 'no' })).toBe(true);
    expect(token({ tool_calls: [{ index: 0 }] })).toBe(true);
  });
});

describe('SSE relay through the gateway, upstream writes split at every byte position', () => {
  let upstream: RawUpstream;
  let gw: RunningGateway;

  beforeAll(async () => {
    // Headers, then the stream in two writes cut at the request body's `split_at` (the gateway
    // passes unknown fields through), 2 ms apart.
    upstream = await startRawUpstream((sock, body) => {
      const split = (JSON.parse(body) as { split_at: number }).split_at;
      sock.write('HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\nconnection: close\r\n\r\n');
      sock.write(SHORT.subarray(0, split));
      setTimeout(() => sock.end(SHORT.subarray(split)), 2);
    });
    const config = buildGatewayConfig({
      models: { models: [{ id: 'demo', route: [{ base_url: upstream.baseUrl }] }] },
      gateway: { auth: { mode: 'none' } },
    });
    gw = await startGateway({ config, port: 0, seed: 1, logger: pino({ level: 'silent' }) });
  });

  afterAll(async () => {
    await gw.close();
    await upstream.close();
  });

  it('gives the client the same bytes for every cut', async () => {
    expect(SHORT.length).toBeGreaterThan(300);
    const expected =
      relayAll([SHORT])
        .events.filter((e): e is Extract<RelayEvent, { kind: 'frame' }> => e.kind === 'frame')
        .map((f) => f.text)
        .join('') + 'data: [DONE]\n\n';
    const one = async (split: number): Promise<void> => {
      const res = await fetch(`${gw.url}/v1/chat/completions`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ model: 'demo', stream: true, messages: [{ role: 'user', content: 'hi' }], split_at: split }),
      });
      expect(res.status).toBe(200);
      const got = await res.text();
      if (got !== expected) expect({ split, got }).toEqual({ split, got: expected });
    };
    const positions = Array.from({ length: SHORT.length + 1 }, (_, i) => i);
    const lanes = 8;
    await Promise.all(
      Array.from({ length: lanes }, async (_, lane) => {
        for (let k = lane; k < positions.length; k += lanes) await one(positions[k]!);
      }),
    );
  });
});
