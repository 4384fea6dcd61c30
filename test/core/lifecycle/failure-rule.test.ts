import { describe, expect, it } from 'vitest';
import { failureClassOf, failureStep, routerFailureClass } from '../../../core/request/policy/failure-rule.ts';
import { routerPolicy, type RequestKindPolicy } from '../../../core/request/policy/kind-policy.ts';
import { DEFAULT_ROUTING_SETTINGS } from '../../../core/config/routing-settings.ts';
import type { Outcome } from '../../../core/lifecycle/outcome.ts';

const http = (status: number, errorClass: Extract<Outcome, { kind: 'http_status' }>['errorClass']): Outcome => ({ kind: 'http_status', status, errorClass, retryAfterMs: null });

describe('failure rule', () => {
  const router = routerPolicy(DEFAULT_ROUTING_SETTINGS);
  const alias: RequestKindPolicy = { ...router, kind: 'alias', failureRules: { retryOn429: false, fallbackOnStatuses: new Set() } };

  it('router family: request-scoped errors end, context refusals need a larger window, the rest fail over', () => {
    expect(routerFailureClass(http(400, 'client_error'))).toBe('final');
    expect(routerFailureClass(http(400, 'context_length'))).toBe('larger_window');
    expect(routerFailureClass(http(503, 'server_error'))).toBe('fail_over');
    expect(routerFailureClass({ kind: 'transport', cause: 'timeout' })).toBe('fail_over');
    expect(routerFailureClass({ kind: 'client_gone' })).toBe('terminal');
  });

  it('only the alias family retries the same target', () => {
    const o = http(500, 'server_error');
    expect(failureStep(router, failureClassOf(router, o))).toBe('fail_over');
    expect(failureStep(alias, failureClassOf(alias, o))).toBe('retry_same');
    expect(failureStep(alias, failureClassOf(alias, http(400, 'client_error')))).toBe('end');
    expect(failureStep(alias, failureClassOf(alias, { kind: 'cancelled' }))).toBe('end');
  });
});
