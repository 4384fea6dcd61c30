// OpenTelemetry traces of a real gateway over emulators, into an in-memory exporter: one server
// span per request and one client span per upstream attempt, the client's traceparent as the
// parent, and each attempt's own traceparent at its upstream.
import { InMemorySpanExporter, type ReadableSpan } from '@opentelemetry/sdk-trace-base';
import pino from 'pino';
import { afterEach, describe, expect, it } from 'vitest';
import { buildGatewayConfig } from '../../gateway/config/load.ts';
import { startGateway } from '../../gateway/gateway.ts';
import { startEmulator } from '../../simulator/emulator/emulator.ts';
import { hello, startStack, type Stack } from './harness.ts';

let stack: Stack | null = null;
afterEach(async () => {
  await stack?.close();
  stack = null;
});

const TRACE_ID = '4bf92f3577b34da6a3ce929d0e0e4736';
const CLIENT_SPAN = '00f067aa0ba902b7';

/** The spans ended so far, once the request span of a request has ended. */
async function spansOf(s: Stack, exporter: InMemorySpanExporter): Promise<{ request: ReadableSpan; attempts: ReadableSpan[] }> {
  for (let i = 0; i < 200; i++) {
    await s.gw.flushTraces();
    const spans = exporter.getFinishedSpans();
    const request = spans.find((x) => x.kind === 1); // SERVER
    if (request) return { request, attempts: spans.filter((x) => x.kind === 2).sort((a, b) => Number(a.attributes['switchyard.attempt.index']) - Number(b.attributes['switchyard.attempt.index'])) };
    await new Promise((r) => setTimeout(r, 10));
  }
  throw new Error('no request span');
}

/** `[version, trace id, span id, flags]` of a traceparent. */
const parts = (tp: string | undefined) => (tp ?? '').split('-');

describe('tracing on', () => {
  it('a fallback: one request span under the client traceparent, one span per attempt with outcomes, traceparents upstream', async () => {
    const exporter = new InMemorySpanExporter();
    stack = await startStack([{ weight: 1000, faults: { error_rate: 1 } }, { weight: 1 }], { tracing: { enabled: true } }, { traceExporter: exporter });
    const res = await stack.post(
      '/v1/chat/completions',
      { model: 'demo', messages: hello, max_tokens: 5 },
      { traceparent: `00-${TRACE_ID}-${CLIENT_SPAN}-01`, tracestate: 'vendor=abc' },
    );
    expect(res.status).toBe(200);
    await res.text();
    const { request, attempts } = await spansOf(stack, exporter);

    expect(request.name).toBe('chat demo');
    expect(request.spanContext().traceId).toBe(TRACE_ID);
    expect(request.parentSpanContext?.spanId).toBe(CLIENT_SPAN);
    expect(request.attributes).toMatchObject({
      'gen_ai.operation.name': 'chat',
      'gen_ai.request.model': 'demo',
      'gen_ai.response.model': 'demo',
      'gen_ai.request.max_tokens': 5,
      'http.response.status_code': 200,
      'switchyard.status': 'ok',
      'switchyard.fallback': true,
      'switchyard.endpoint_id': stack.ids[1],
    });
    expect(request.attributes['gen_ai.usage.output_tokens']).toBeGreaterThan(0);
    expect(request.attributes['gen_ai.usage.input_tokens']).toBeGreaterThan(0);
    expect(request.attributes['switchyard.attempts']).toBe(attempts.length);
    expect(request.resource.attributes['service.name']).toBe('switchyard-gateway');

    // The failing primary (maybe retried), then the fallback that served.
    expect(attempts.length).toBeGreaterThanOrEqual(2);
    const served = attempts.at(-1)!;
    const failed = attempts.slice(0, -1);
    for (const a of failed) {
      expect(a.attributes['switchyard.endpoint_id']).toBe(stack.ids[0]);
      expect(String(a.attributes['switchyard.outcome'])).toMatch(/^http_5\d\d$/);
      expect(a.status.code).toBe(2); // ERROR
    }
    expect(failed[0]!.attributes['switchyard.attempt.reason']).toBe('primary');
    expect(served.attributes).toMatchObject({
      'switchyard.endpoint_id': stack.ids[1],
      'switchyard.outcome': 'ok',
      'switchyard.attempt.reason': 'fallback',
      'gen_ai.operation.name': 'chat',
      'gen_ai.request.model': 'demo',
      'server.address': '127.0.0.1',
      'server.port': Number(new URL(stack.emus[1]!.baseUrl).port),
    });
    expect(served.attributes['switchyard.ttft_ms']).toBeGreaterThanOrEqual(0);
    expect(served.attributes['gen_ai.usage.output_tokens']).toBeGreaterThan(0);
    for (const a of attempts) {
      expect(a.spanContext().traceId).toBe(TRACE_ID);
      expect(a.parentSpanContext?.spanId).toBe(request.spanContext().spanId);
      expect(a.startTime[0] * 1e3 + a.startTime[1] / 1e6).toBeGreaterThanOrEqual(request.startTime[0] * 1e3 + request.startTime[1] / 1e6 - 1);
    }

    // Each upstream request named its own attempt span as the parent, in the client's trace.
    const seen = [...stack.emus[0]!.log.all(), ...stack.emus[1]!.log.all()].map((r) => r.headers ?? {});
    expect(seen).toHaveLength(attempts.length);
    const sentSpans = seen.map((h) => {
      const [v, traceId, spanId, flags] = parts(h.traceparent);
      expect([v, traceId, flags]).toEqual(['00', TRACE_ID, '01']);
      expect(h.tracestate).toBe('vendor=abc');
      return spanId;
    });
    expect(sentSpans.sort()).toEqual(attempts.map((a) => a.spanContext().spanId).sort());
  });

  it('no client traceparent: a new trace, whose id reaches the upstream', async () => {
    const exporter = new InMemorySpanExporter();
    stack = await startStack([{}], { tracing: { enabled: true, service_name: 'gw-test' } }, { traceExporter: exporter });
    const out = await stack.client().chat.completions.create({ model: 'demo', messages: hello, stream: true });
    for await (const _ of out) void _;
    const { request, attempts } = await spansOf(stack, exporter);
    expect(request.parentSpanContext).toBeUndefined();
    expect(request.resource.attributes['service.name']).toBe('gw-test');
    expect(attempts).toHaveLength(1);
    expect(attempts[0]!.attributes['switchyard.attempt.reason']).toBe('primary');
    const [, traceId, spanId] = parts(stack.emus[0]!.log.all()[0]!.headers?.traceparent);
    expect(traceId).toBe(request.spanContext().traceId);
    expect(spanId).toBe(attempts[0]!.spanContext().spanId);
    expect(stack.emus[0]!.log.all()[0]!.headers?.tracestate).toBeUndefined();
  });

  it('a client trace that is not sampled records nothing, and the upstream still gets its trace id, unsampled', async () => {
    const exporter = new InMemorySpanExporter();
    stack = await startStack([{}], { tracing: { enabled: true } }, { traceExporter: exporter });
    const res = await stack.post('/v1/chat/completions', { model: 'demo', messages: hello }, { traceparent: `00-${TRACE_ID}-${CLIENT_SPAN}-00` });
    expect(res.status).toBe(200);
    await res.text();
    await stack.gw.flushTraces();
    expect(exporter.getFinishedSpans()).toHaveLength(0);
    const [v, traceId, , flags] = parts(stack.emus[0]!.log.all()[0]!.headers?.traceparent);
    expect([v, traceId, flags]).toEqual(['00', TRACE_ID, '00']);
  });

  it('an invalid client traceparent starts a new trace', async () => {
    const exporter = new InMemorySpanExporter();
    stack = await startStack([{}], { tracing: { enabled: true } }, { traceExporter: exporter });
    const res = await stack.post('/v1/chat/completions', { model: 'demo', messages: hello }, { traceparent: `00-${'0'.repeat(32)}-${CLIENT_SPAN}-01` });
    await res.text();
    const { request } = await spansOf(stack, exporter);
    expect(request.parentSpanContext).toBeUndefined();
    expect(request.spanContext().traceId).not.toBe('0'.repeat(32));
  });
});

describe('tracing on, Anthropic', () => {
  it('a Messages request over a native anthropic route: a chat span, and the traceparent at the upstream', async () => {
    const emu = await startEmulator({ faults: { latency_scale: 0.02 }, modelName: 'claude-upstream' });
    const exporter = new InMemorySpanExporter();
    const config = buildGatewayConfig({
      models: { models: [{ id: 'claude', route: [{ kind: 'anthropic', base_url: emu.baseUrl, provider_model_id: 'claude-upstream' }] }] },
      gateway: { auth: { mode: 'none' }, tracing: { enabled: true } },
    });
    const gw = await startGateway({ config, host: '127.0.0.1', port: 0, seed: 3, logger: pino({ level: 'silent' }), traceExporter: exporter });
    try {
      const res = await fetch(`${gw.url}/v1/messages`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', 'anthropic-version': '2023-06-01', traceparent: `00-${TRACE_ID}-${CLIENT_SPAN}-01` },
        body: JSON.stringify({ model: 'claude', max_tokens: 8, messages: hello }),
      });
      expect(res.status).toBe(200);
      await res.text();
      await gw.flushTraces();
      const spans = exporter.getFinishedSpans();
      const request = spans.find((x) => x.kind === 1)!;
      const attempt = spans.find((x) => x.kind === 2)!;
      expect(request.name).toBe('chat claude');
      expect(request.attributes['gen_ai.response.model']).toBe('claude-upstream');
      expect(attempt.attributes['gen_ai.request.model']).toBe('claude-upstream');
      const [, traceId, spanId] = parts(emu.log.all()[0]!.headers?.traceparent);
      expect([traceId, spanId]).toEqual([TRACE_ID, attempt.spanContext().spanId]);
    } finally {
      await gw.close();
      await emu.close();
    }
  });
});

describe('tracing off', () => {
  it('sends no trace-context header upstream, even when the client sent one', async () => {
    stack = await startStack([{}]);
    const res = await stack.post('/v1/chat/completions', { model: 'demo', messages: hello }, { traceparent: `00-${TRACE_ID}-${CLIENT_SPAN}-01` });
    await res.text();
    expect(stack.emus[0]!.log.all()[0]!.headers?.traceparent).toBeUndefined();
  });
});
