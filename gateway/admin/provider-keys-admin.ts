/**
 * Upstream key reservations through the admin API (seed 000 "为某个层级预留上游 key"). Keys
 * reach key pools from two sources, each with its own endpoint:
 *
 * - keys added here (`provider_api_keys`): `POST /admin/provider-keys` `{provider, api_key,
 *   key_id?, min_role?}` adds one to every route whose `provider:` is `provider`;
 *   `POST /admin/provider-keys/{key_id}/min-role` `{min_role}` changes its reservation;
 *   `DELETE /admin/provider-keys/{key_id}` removes it.
 * - keys from the environment or models.yaml (`provider_env_key_min_roles`):
 *   `POST /admin/provider-keys/min-role-env` `{api_key | key_sha256, min_role}` reserves the key
 *   by its SHA-256; the reservation stays when the key leaves the rotation (it comes back
 *   reserved) and is listed, with whether a configured key matches it, so it can be removed with
 *   `DELETE /admin/provider-keys/min-role-env/{key_sha256}`.
 *
 * `GET /admin/provider-keys` lists both, each with `in_effect`: whether some route of the
 * configuration in force applies it. Routes of a kind that holds its own credential (the native
 * `anthropic` kind, `core/keys/route-keys.ts`) take neither reservations nor added keys (seed
 * 000: such adapters never join the key registry), so a record that only they could use is kept
 * and listed with `in_effect: false`, and the write that makes it answers the same, with a note
 * to restrict those models with the caller keys' `allowed_models` instead.
 * Every change applies to the running pools at once
 * (`KeyPools.setProviderKeys` / `setReservations`), no restart; other replicas read the records
 * again at the store's poll interval (`store_poll_ms`). A key is never returned or logged in clear: answers
 * and the audit name it by id and a SHA-256 prefix.
 */
import { createHash } from 'node:crypto';
import { z } from 'zod';
import { CALLER_ROLES, keyFingerprint, kindTakesReservations, poolKeyId, type CallerRole, type PoolKeyDeclaration, type RouteConfig, type RoutingCore } from '../../core/index.ts';
import type { ProviderKeyRepo, ProviderKeySnapshot } from '../store/provider-key-repo.ts';
import type { KeySecrets } from '../upstream/key-secrets.ts';
import type { AdminCall, AdminAnswer } from './admin-api.ts';
import { parseBody } from './admin-bodies.ts';

const BASE = '/admin/provider-keys';
const ENV = `${BASE}/min-role-env`;
const ROLE_PATH = /^\/admin\/provider-keys\/([^/]+)\/min-role$/;
const KEY_PATH = /^\/admin\/provider-keys\/([^/]+)$/;
const ENV_PATH = /^\/admin\/provider-keys\/min-role-env\/([0-9a-f]{64})$/;
const SHA256 = /^[0-9a-f]{64}$/;

const Role = z.enum(CALLER_ROLES);
const AddBody = z
  .object({
    provider: z.string().min(1),
    api_key: z.string().min(1),
    key_id: z.string().regex(/^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$/, 'a key id is 1-64 letters, digits, . _ -').optional(),
    min_role: Role.default('free'),
  })
  .strict();
const RoleBody = z.object({ min_role: Role }).strict();
const EnvBody = z
  .object({ api_key: z.string().min(1).optional(), key_sha256: z.string().regex(SHA256, 'the 64-hex-digit SHA-256 of the key (printf %s "$KEY" | sha256sum)').optional(), min_role: Role })
  .strict()
  .refine((b) => (b.api_key === undefined) !== (b.key_sha256 === undefined), { message: 'send api_key or key_sha256 (exactly one)', path: ['api_key'] });

/** SHA-256 of a key, lowercase hex. */
function sha256(s: string): string {
  return createHash('sha256').update(s, 'utf8').digest('hex');
}

/** What the module needs from the gateway. */
export interface ProviderKeysDeps {
  readonly repo: ProviderKeyRepo;
  /** The current generation's core (its `keyPools` are shared by every generation). */
  core(): RoutingCore;
  /** The routes of the configuration in force: their keys (which reservations match), kinds and labels (where records take effect). */
  routes(): Iterable<Pick<RouteConfig, 'api_key' | 'api_keys' | 'kind' | 'provider'>>;
  readonly secrets: KeySecrets;
  /** Why changes are refused here (several workers without a store), or null. */
  readonly writesRefused: string | null;
}

type Result = { answer: AdminAnswer; change?: { before: unknown; after: unknown } };
const err = (status: number, code: string, message: string, param: string | null): Result => ({ answer: { status, body: { error: { message, type: 'invalid_request_error', param, code } } } });

/** The provider-key routes; `route` answers null for a call that is not one. */
export class ProviderKeysAdmin {
  private snapshot: ProviderKeySnapshot = { keys: [], envRoles: [] };

  constructor(private readonly d: ProviderKeysDeps) {}

  /** Reads the records and applies them to the pools (at start, and after each change or reload). */
  async load(): Promise<void> {
    this.snapshot = await this.d.repo.load();
    this.apply();
  }

  /**
   * Applies the last records read to the core's pools: provider keys by provider, and the
   * reservations by SHA-256 translated to the fingerprints of the configured keys they match.
   */
  apply(): void {
    const byProvider = new Map<string, PoolKeyDeclaration[]>();
    for (const k of this.snapshot.keys) {
      const list = byProvider.get(k.provider) ?? [];
      list.push({ keyId: k.keyId, fingerprint: keyFingerprint(k.apiKey), minRole: k.minRole });
      byProvider.set(k.provider, list);
    }
    const bySha = new Map(this.snapshot.envRoles.map((e) => [e.keySha256, e.minRole]));
    const reservations = new Map<string, CallerRole>();
    for (const secret of this.configuredSecrets()) {
      const role = bySha.get(sha256(secret));
      if (role !== undefined) reservations.set(keyFingerprint(secret), role);
    }
    const pools = this.d.core().keyPools;
    pools.setProviderKeys(byProvider);
    pools.setReservations(reservations);
    this.d.secrets.setAdded(this.snapshot.keys.map((k) => k.apiKey));
  }

  private configuredSecrets(): string[] {
    return this.configuredKeys().map((k) => k.secret);
  }

  /** Every key the routes declare, with the id the pools show it by (its configured `id`, else `key-<fingerprint>`). */
  private configuredKeys(): Array<{ secret: string; keyId: string }> {
    const out: Array<{ secret: string; keyId: string }> = [];
    for (const r of this.d.routes()) {
      if (r.api_key) out.push({ secret: r.api_key, keyId: poolKeyId(r.api_key) });
      for (const k of r.api_keys ?? []) out.push({ secret: k.key, keyId: poolKeyId(k.key, k.id) });
    }
    return out;
  }

  /** Answers the call when it is one of these routes, else null. */
  route(call: AdminCall): Promise<Result> | null {
    const { method, path } = call;
    if (path === BASE && method === 'GET') return Promise.resolve({ answer: { status: 200, body: this.view() } });
    if (!path.startsWith(BASE)) return null;
    if ((method === 'POST' || method === 'DELETE') && this.d.writesRefused !== null) return Promise.resolve(err(409, 'writes_refused', this.d.writesRefused, null));
    if (path === BASE && method === 'POST') return this.add(call);
    if (path === ENV && method === 'POST') return this.reserveEnv(call);
    const env = ENV_PATH.exec(path);
    if (env && method === 'DELETE') return this.unreserveEnv(env[1]!);
    const role = ROLE_PATH.exec(path);
    if (role && method === 'POST') return this.setRole(call, decodeURIComponent(role[1]!));
    const key = KEY_PATH.exec(path);
    if (key && method === 'DELETE' && key[1] !== 'min-role-env') return this.remove(decodeURIComponent(key[1]!));
    return null;
  }

  /** SHA-256s of the secrets on routes that take reservations, and the labels of those routes. */
  private reservable(): { secrets: Set<string>; providers: Set<string> } {
    const secrets = new Set<string>();
    const providers = new Set<string>();
    for (const r of this.d.routes()) {
      if (!kindTakesReservations(r.kind)) continue;
      if (r.provider) providers.add(r.provider);
      if (r.api_key) secrets.add(sha256(r.api_key));
      for (const k of r.api_keys ?? []) secrets.add(sha256(k.key));
    }
    return { secrets, providers };
  }

  private view(): Record<string, unknown> {
    const configured = new Map<string, string>();
    // The first declaration with a configured id names the key (a secret may be declared on several routes).
    for (const k of this.configuredKeys()) {
      const digest = sha256(k.secret);
      const cur = configured.get(digest);
      if (cur === undefined || (cur === poolKeyId(k.secret) && k.keyId !== cur)) configured.set(digest, k.keyId);
    }
    const on = this.reservable();
    return {
      keys: this.snapshot.keys.map((k) => ({ key_id: k.keyId, provider: k.provider, min_role: k.minRole, key_sha256_prefix: k.keySha256.slice(0, 12), in_effect: on.providers.has(k.provider), updated_by: k.updatedBy, updated_at: k.updatedAt })),
      env_reservations: this.snapshot.envRoles.map((e) => ({
        key_sha256: e.keySha256,
        min_role: e.minRole,
        // A reservation whose key is configured nowhere is listed so it can be removed.
        configured: configured.has(e.keySha256),
        // Configured only on routes that hold their own credential: kept, never applied.
        in_effect: on.secrets.has(e.keySha256),
        key_id: configured.get(e.keySha256) ?? null,
        updated_by: e.updatedBy,
        updated_at: e.updatedAt,
      })),
    };
  }

  /** `in_effect`, and when false the note saying why and what to do instead. */
  private effect(inEffect: boolean): { in_effect: boolean; note?: string } {
    if (inEffect) return { in_effect: true };
    return {
      in_effect: false,
      note: 'Saved, but no route of the configuration in force applies it: the key is configured nowhere, or only on routes of a kind that holds its own credential (anthropic), where reservations never take effect. Restrict such models with the caller keys\' allowed_models instead.',
    };
  }

  /** Reads the records back, applies them to the pools, and returns the list as answered. */
  private async changed(): Promise<Record<string, unknown>> {
    await this.load();
    return this.view();
  }

  private async add(call: AdminCall): Promise<Result> {
    const b = parseBody(AddBody, call.body);
    if (!b.ok) return err(400, 'invalid_request', b.problem.message, b.problem.param);
    const v = b.value;
    const keyId = v.key_id ?? poolKeyId(v.api_key);
    const added = await this.d.repo.addKey({ keyId, provider: v.provider, apiKey: v.api_key, keySha256: sha256(v.api_key), minRole: v.min_role, updatedBy: call.caller.id });
    if (!added) return err(409, 'conflict', `A provider key with id '${keyId}' or with this secret exists already; change its min_role with POST ${BASE}/{key_id}/min-role, or DELETE it first.`, 'key_id');
    await this.changed();
    const body = { key_id: keyId, provider: v.provider, min_role: v.min_role, key_sha256_prefix: sha256(v.api_key).slice(0, 12) };
    return { answer: { status: 201, body: { ...body, ...this.effect(this.reservable().providers.has(v.provider)) } }, change: { before: null, after: body } };
  }

  private async setRole(call: AdminCall, keyId: string): Promise<Result> {
    const b = parseBody(RoleBody, call.body);
    if (!b.ok) return err(400, 'invalid_request', b.problem.message, b.problem.param);
    const old = this.snapshot.keys.find((k) => k.keyId === keyId);
    if (!(await this.d.repo.setKeyRole(keyId, b.value.min_role, call.caller.id))) return err(404, 'not_found', `No provider key '${keyId}' (GET ${BASE} lists them; a key from the environment is reserved with POST ${ENV}).`, 'key_id');
    await this.changed();
    const inEffect = this.reservable().providers.has(old?.provider ?? '');
    return { answer: { status: 200, body: { key_id: keyId, min_role: b.value.min_role, ...this.effect(inEffect) } }, change: { before: { key_id: keyId, min_role: old?.minRole ?? null }, after: { key_id: keyId, min_role: b.value.min_role } } };
  }

  private async remove(keyId: string): Promise<Result> {
    if (!(await this.d.repo.deleteKey(keyId))) return err(404, 'not_found', `No provider key '${keyId}' (GET ${BASE} lists them).`, 'key_id');
    await this.changed();
    return { answer: { status: 200, body: { key_id: keyId, deleted: true } }, change: { before: { key_id: keyId }, after: null } };
  }

  private async reserveEnv(call: AdminCall): Promise<Result> {
    const b = parseBody(EnvBody, call.body);
    if (!b.ok) return err(400, 'invalid_request', b.problem.message, b.problem.param);
    const digest = b.value.key_sha256 ?? sha256(b.value.api_key!);
    const old = this.snapshot.envRoles.find((e) => e.keySha256 === digest);
    await this.d.repo.setEnvRole(digest, b.value.min_role, call.caller.id);
    const after = await this.changed();
    const row = (after.env_reservations as Array<{ key_sha256: string; in_effect: boolean }>).find((e) => e.key_sha256 === digest)!;
    return { answer: { status: 200, body: { ...row, ...this.effect(row.in_effect) } }, change: { before: old ? { key_sha256: digest, min_role: old.minRole } : null, after: { key_sha256: digest, min_role: b.value.min_role } } };
  }

  private async unreserveEnv(digest: string): Promise<Result> {
    if (!(await this.d.repo.deleteEnvRole(digest))) return err(404, 'not_found', `No reservation for key_sha256 ${digest} (GET ${BASE} lists them).`, 'key_sha256');
    await this.changed();
    return { answer: { status: 200, body: { key_sha256: digest, deleted: true } }, change: { before: { key_sha256: digest }, after: null } };
  }
}
