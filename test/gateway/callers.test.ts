// Caller keys: SHA-256 digests only, Bearer parsing, per-key model access (an id admits its
// aliases, an alias only itself), admin flag, and the explicit `none` mode.
import { describe, expect, it } from 'vitest';
import { parseModelsConfig, RoutingCore } from '../../core/index.ts';
import { Callers, hashKey } from '../../gateway/callers.ts';
import { AuthSchema } from '../../gateway/config/gateway-settings.ts';

const core = new RoutingCore(
  parseModelsConfig({
    models: [
      { id: 'big', aliases: ['big-latest'], route: [{ base_url: 'http://127.0.0.1:1/v1' }] },
      { id: 'small', aliases: ['small-latest'], route: [{ base_url: 'http://127.0.0.1:2/v1' }] },
    ],
  }),
);

describe('Callers', () => {
  const callers = new Callers(
    AuthSchema.parse({
      keys: [
        { id: 'alice', sha256: hashKey('sk-alice'), allowed_models: ['big', 'small-latest'] },
        { id: 'root', sha256: hashKey('sk-root').toUpperCase(), admin: true },
      ],
    }),
    core,
  );

  it('hashes keys as lowercase hex SHA-256', () => {
    expect(hashKey('sk-switchyard-demo')).toBe('37cbfc183c342e976476530bb738059047143238dbbee2003f91b27a3d546483');
  });

  it('authenticates Bearer keys (any case of the scheme, any case of the stored hex)', () => {
    expect(callers.authenticate('Bearer sk-alice')?.id).toBe('alice');
    expect(callers.authenticate('bearer sk-root')).toMatchObject({ id: 'root', admin: true, allowed: null });
    for (const bad of ['', 'sk-alice', 'Bearer ', 'Bearer sk-alicex', 'Basic c2stYWxpY2U=']) expect(callers.authenticate(bad)).toBeNull();
  });

  it('limits models: an id admits its aliases, an alias only itself', () => {
    const alice = callers.authenticate('Bearer sk-alice')!;
    expect(['big', 'big-latest', 'small-latest'].map((m) => Callers.mayUse(alice, m))).toEqual([true, true, true]);
    expect(Callers.mayUse(alice, 'small')).toBe(false);
    expect(Callers.mayUse(callers.authenticate('Bearer sk-root')!, 'anything')).toBe(true);
  });

  it("none mode lets everyone in as one caller, admin only when configured", () => {
    const open = new Callers(AuthSchema.parse({ mode: 'none' }), core);
    expect(open.authenticate('')).toMatchObject({ id: 'anonymous', admin: false });
    expect(new Callers(AuthSchema.parse({ mode: 'none', anonymous_admin: true }), core).authenticate('Bearer x')!.admin).toBe(true);
  });
});
