// The gateway's keeping of /v1/responses state: ids (and reasoning encrypted_content) that name the
// target that served them, and the in-memory store's bound (oldest out first) and age limit.
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { endpointOfReasoning, endpointOfResponseId, newResponseId, tagEncryptedContent, untagEncryptedContent } from '../../gateway/endpoints/responses/response-ids.ts';
import { MemoryResponseStore, type StoredResponse } from '../../gateway/endpoints/responses/response-store.ts';

const stored = (id: string): StoredResponse => ({ id, response: { id, model: 'm', output: [] }, input: [], endpointId: 'e' });

describe('response ids', () => {
  it('name the endpoint that served them, whatever its id', () => {
    fc.assert(fc.property(fc.string({ minLength: 1, maxLength: 60 }), (endpointId) => {
      const id = newResponseId(endpointId);
      expect(id).toMatch(/^resp_[A-Za-z0-9_-]+_[0-9a-f]{24}$/);
      expect(endpointOfResponseId(id)).toBe(endpointId);
    }));
    expect(endpointOfResponseId('resp_abc')).toBeNull();
    expect(endpointOfResponseId('chatcmpl-1')).toBeNull();
  });

  it("reasoning encrypted_content names its endpoint and keeps the upstream's content, whatever both are", () => {
    fc.assert(fc.property(fc.string({ minLength: 1, maxLength: 60 }), fc.string({ maxLength: 200 }), (endpointId, content) => {
      expect(untagEncryptedContent(tagEncryptedContent(content, endpointId))).toEqual({ endpointId, content });
    }));
    expect(untagEncryptedContent('gAAAAB-provider-own')).toBeNull();
  });

  it('a request input names the endpoint of its last tagged reasoning item', () => {
    const r = (endpointId: string) => ({ type: 'reasoning', summary: [], encrypted_content: tagEncryptedContent('x', endpointId) });
    expect(endpointOfReasoning([{ role: 'user', content: 'q' }, r('a'), { type: 'message' }, r('b'), { type: 'reasoning', encrypted_content: 'own' }])).toBe('b');
    expect(endpointOfReasoning([{ role: 'user', content: 'q' }, { type: 'reasoning', encrypted_content: 'own' }])).toBeNull();
    expect(endpointOfReasoning([])).toBeNull();
  });
});

describe('MemoryResponseStore', () => {
  it('keeps at most maxEntries, dropping the oldest, and forgets entries past their TTL', async () => {
    let now = 0;
    const store = new MemoryResponseStore({ maxEntries: 2, ttlMs: 1_000 }, () => now);
    await store.put(stored('a'));
    await store.put(stored('b'));
    await store.put(stored('c'));
    expect(store.size).toBe(2);
    expect(await store.get('a')).toBeNull();
    expect((await store.get('b'))?.id).toBe('b');
    now = 1_001;
    expect(await store.get('c')).toBeNull();
    expect(() => new MemoryResponseStore({ maxEntries: 0, ttlMs: 1 })).toThrow(/positive/);
  });
});
