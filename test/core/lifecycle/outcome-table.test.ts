// The outcome table: one test per row, and the wordings that mark a context-length refusal.
import { describe, expect, it } from 'vitest';
import { CONTEXT_LENGTH_WORDING, OUTCOME_RULES, classifyStatus, classifyUpstreamError, errorForOutcome, isHealthFailure, type HttpErrorClass, type Outcome } from '../../../core/index.ts';

const http = (status: number, errorClass: HttpErrorClass, retryAfterMs: number | null = null): Outcome => ({ kind: 'http_status', status, errorClass, retryAfterMs });

describe('classifyUpstreamError: one row per class', () => {
  const rows: Array<[string, Parameters<typeof classifyUpstreamError>[0], HttpErrorClass, { health: boolean; action: string; client: number }]> = [
    ['429 is rate limited', { status: 429 }, 'rate_limited', { health: true, action: 'fail_over', client: 429 }],
    ['503 with Retry-After is busy', { status: 503, retryAfterMs: 2_000 }, 'overloaded', { health: false, action: 'fail_over', client: 503 }],
    ['529 is busy (Anthropic overloaded)', { status: 529 }, 'overloaded', { health: false, action: 'fail_over', client: 503 }],
    ['500 with an overloaded_error type is busy', { status: 500, type: 'overloaded_error' }, 'overloaded', { health: false, action: 'fail_over', client: 503 }],
    ['a bare 503 is a failure', { status: 503 }, 'server_error', { health: true, action: 'fail_over', client: 502 }],
    ['408 is a timeout', { status: 408 }, 'request_timeout', { health: true, action: 'fail_over', client: 504 }],
    ['404 is a route configuration error', { status: 404, message: 'The model `x` does not exist.' }, 'route_not_found', { health: true, action: 'fail_over', client: 502 }],
    ['401 is our key refused', { status: 401 }, 'auth_rejected', { health: true, action: 'fail_over', client: 502 }],
    ['403 is our key refused', { status: 403 }, 'auth_rejected', { health: true, action: 'fail_over', client: 502 }],
    ['400 context_length_exceeded code', { status: 400, code: 'context_length_exceeded' }, 'context_length', { health: false, action: 'larger_window', client: 400 }],
    ['400 content_filter is content policy', { status: 400, code: 'content_filter' }, 'content_policy', { health: false, action: 'return', client: 400 }],
    ['malformed 400 is the caller’s', { status: 400, message: "'messages' is a required property" }, 'client_error', { health: false, action: 'return', client: 400 }],
    ['413 is the caller’s', { status: 413 }, 'client_error', { health: false, action: 'return', client: 413 }],
    ['422 is the caller’s', { status: 422, message: 'temperature must be <= 2' }, 'client_error', { health: false, action: 'return', client: 422 }],
  ];
  for (const [name, report, cls, want] of rows) {
    it(name, () => {
      expect(classifyUpstreamError(report)).toBe(cls);
      const o = http(report.status, cls, report.retryAfterMs ?? null);
      expect(isHealthFailure(o)).toBe(want.health);
      expect(OUTCOME_RULES[cls].action).toBe(want.action);
      expect(errorForOutcome(o).status).toBe(want.client);
    });
  }
  it('every class has a row', () => {
    expect(Object.keys(OUTCOME_RULES).sort()).toEqual(
      ['auth_rejected', 'client_error', 'content_policy', 'context_length', 'overloaded', 'rate_limited', 'request_timeout', 'route_not_found', 'server_error'],
    );
  });
  it('a busy answer passes its Retry-After to the caller', () => {
    expect(errorForOutcome(http(503, 'overloaded', 4_500))).toEqual({ status: 503, code: 'upstream_overloaded', retryAfterSec: 5 });
  });
  it('rejects statuses outside 400-599; classifyStatus is the short form', () => {
    expect(() => classifyUpstreamError({ status: 200 })).toThrow(RangeError);
    expect(classifyStatus(400, 'context_length_exceeded')).toBe('context_length');
    expect(classifyStatus(503)).toBe('server_error');
  });
});

describe('context-length wordings', () => {
  const wordings: Array<[string, string]> = [
    ['OpenAI', "This model's maximum context length is 8192 tokens. However, your messages resulted in 9000 tokens."],
    ['vLLM (older)', "This model's maximum context length is 4096 tokens. However, you requested 5000 tokens (4000 in the messages, 1000 in the completion)."],
    ['vLLM (newer)', 'The decoder prompt (length 5000) is longer than the maximum model length of 4096.'],
    ['vLLM (input too long)', 'Input prompt (5000 tokens) is too long and exceeds limit of 4096'],
    ['SGLang', "The input (5000 tokens) is longer than the model's context length (4096 tokens)."],
    ['Anthropic', 'prompt is too long: 210000 tokens > 200000 maximum'],
    ['Anthropic (max_tokens)', 'input length and `max_tokens` exceed context limit: 198000 + 8192 > 200000'],
  ];
  for (const [who, message] of wordings) {
    it(`recognises ${who}`, () => {
      expect(classifyUpstreamError({ status: 400, message })).toBe('context_length');
      expect(CONTEXT_LENGTH_WORDING.some((w) => message.toLowerCase().includes(w))).toBe(true);
    });
  }
  it('a 400 about something else stays the caller’s error', () => {
    expect(classifyUpstreamError({ status: 400, message: 'Invalid value for temperature' })).toBe('client_error');
  });
});
