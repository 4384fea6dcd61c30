import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { readableIssue } from '../../../core/index.ts';
import { GatewaySettingsSchema } from '../../../gateway/config/gateway-settings.ts';

const first = (schema: z.ZodType, v: unknown) => {
  const r = schema.safeParse(v, { reportInput: true });
  if (r.success) throw new Error('expected a problem');
  return readableIssue(r.error.issues[0]!, schema);
};

describe('readableIssue', () => {
  it('words a bad discriminator (store.kind, state.backend) as the allowed values', () => {
    expect(first(GatewaySettingsSchema, { store: { kind: 'mysql' } })).toEqual({ message: 'missing or not one of "pglite", "postgres"', fix: 'write one of: "pglite", "postgres"' });
    expect(first(GatewaySettingsSchema, { state: { backend: 'memcached' } }).fix).toBe('write one of: "local", "redis"');
  });
  it('quotes a wrong value, tells a missing field from it, and spells out ranges', () => {
    const S = z.object({ n: z.number().int().min(1), b: z.boolean() }).strict();
    expect(first(S, { n: 'x', b: true })).toEqual({ message: 'expected number, got the string "x"', fix: 'write a number' });
    expect(first(S, { n: 1 })).toEqual({ message: 'required field is missing (expected boolean)', fix: 'add it' });
    expect(first(S, { n: 0, b: true })).toEqual({ message: 'too small: must be ≥ 1', fix: 'use a value ≥ 1' });
    expect(first(S, { n: 1, b: true, c: 1 })).toEqual({ message: "unknown field 'c'", fix: 'remove it or fix the spelling; allowed here: n, b' });
  });
  it('lists the fields of every branch for an unknown field in a union (state:)', () => {
    expect(first(GatewaySettingsSchema, { state: { backend: 'redis', url: 'redis://127.0.0.1:1', colour: 1 } }).fix).toMatch(/allowed here: backend, url, prefix/);
  });
  it("keeps a schema's own message", () => {
    expect(first(z.boolean({ message: 'expected true or false' }), 'yes')).toEqual({ message: 'expected true or false', fix: null });
  });
  it("accepts server.admin_port: off as none, like --admin-port off", () => {
    expect(GatewaySettingsSchema.parse({ server: { admin_port: 'off' } }).server.admin_port).toBeNull();
  });
});
