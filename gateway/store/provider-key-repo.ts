/**
 * Where the key pools' run-time declarations live (seed 000 "为某个层级预留上游 key"): provider
 * keys added through the admin API (`provider_api_keys`, each with its `min_role`) and the
 * reservations of keys that come from the environment or models.yaml
 * (`provider_env_key_min_roles`, keyed by the key's SHA-256, kept when the key leaves the
 * rotation). Without a store the same records live in this process (`MemoryProviderKeyRepo`).
 */
import type { CallerRole } from '../../core/index.ts';
import type { SqlStore } from './sql-store.ts';

/** A key added at run time. `apiKey` is the secret: it goes upstream, never into an answer or a log. */
export interface ProviderKeyRecord {
  readonly keyId: string;
  readonly provider: string;
  readonly apiKey: string;
  /** SHA-256 of the key, lowercase hex. */
  readonly keySha256: string;
  readonly minRole: CallerRole;
  readonly updatedBy: string;
  readonly updatedAt: string;
}

/** A reservation of a key the gateway gets from elsewhere, by the key's SHA-256. */
export interface EnvKeyRoleRecord {
  readonly keySha256: string;
  readonly minRole: CallerRole;
  readonly updatedBy: string;
  readonly updatedAt: string;
}

/** Both lists, as one read. */
export interface ProviderKeySnapshot {
  readonly keys: readonly ProviderKeyRecord[];
  readonly envRoles: readonly EnvKeyRoleRecord[];
}

/** The records' store. Every write resolves to whether it changed something. */
export interface ProviderKeyRepo {
  load(): Promise<ProviderKeySnapshot>;
  /** Adds a key; false when its id or its secret is there already. */
  addKey(r: Omit<ProviderKeyRecord, 'updatedAt'>): Promise<boolean>;
  setKeyRole(keyId: string, minRole: CallerRole, by: string): Promise<boolean>;
  deleteKey(keyId: string): Promise<boolean>;
  /** Sets (inserts or replaces) the reservation of `keySha256`. */
  setEnvRole(keySha256: string, minRole: CallerRole, by: string): Promise<void>;
  deleteEnvRole(keySha256: string): Promise<boolean>;
}

/** The records of a gateway without a store: this process only, lost at exit. */
export class MemoryProviderKeyRepo implements ProviderKeyRepo {
  private readonly keys = new Map<string, ProviderKeyRecord>();
  private readonly envRoles = new Map<string, EnvKeyRoleRecord>();

  async load(): Promise<ProviderKeySnapshot> {
    return { keys: [...this.keys.values()], envRoles: [...this.envRoles.values()] };
  }

  async addKey(r: Omit<ProviderKeyRecord, 'updatedAt'>): Promise<boolean> {
    if (this.keys.has(r.keyId) || [...this.keys.values()].some((k) => k.keySha256 === r.keySha256)) return false;
    this.keys.set(r.keyId, { ...r, updatedAt: new Date().toISOString() });
    return true;
  }

  async setKeyRole(keyId: string, minRole: CallerRole, by: string): Promise<boolean> {
    const k = this.keys.get(keyId);
    if (!k) return false;
    this.keys.set(keyId, { ...k, minRole, updatedBy: by, updatedAt: new Date().toISOString() });
    return true;
  }

  async deleteKey(keyId: string): Promise<boolean> {
    return this.keys.delete(keyId);
  }

  async setEnvRole(keySha256: string, minRole: CallerRole, by: string): Promise<void> {
    this.envRoles.set(keySha256, { keySha256, minRole, updatedBy: by, updatedAt: new Date().toISOString() });
  }

  async deleteEnvRole(keySha256: string): Promise<boolean> {
    return this.envRoles.delete(keySha256);
  }
}

interface KeyRow {
  key_id: string;
  provider: string;
  api_key: string;
  key_sha256: string;
  min_role: CallerRole;
  updated_by: string;
  updated_at: Date | string;
}
interface EnvRow {
  key_sha256: string;
  min_role: CallerRole;
  updated_by: string;
  updated_at: Date | string;
}
const iso = (t: Date | string): string => (t instanceof Date ? t.toISOString() : new Date(t).toISOString());

/** The records in the store's tables (migration 5). */
export class SqlProviderKeyRepo implements ProviderKeyRepo {
  constructor(private readonly store: SqlStore) {}

  async load(): Promise<ProviderKeySnapshot> {
    const k = await this.store.query<KeyRow>('SELECT * FROM provider_api_keys ORDER BY key_id COLLATE "C"');
    const e = await this.store.query<EnvRow>('SELECT * FROM provider_env_key_min_roles ORDER BY key_sha256');
    return {
      keys: k.rows.map((r) => ({ keyId: r.key_id, provider: r.provider, apiKey: r.api_key, keySha256: r.key_sha256, minRole: r.min_role, updatedBy: r.updated_by, updatedAt: iso(r.updated_at) })),
      envRoles: e.rows.map((r) => ({ keySha256: r.key_sha256, minRole: r.min_role, updatedBy: r.updated_by, updatedAt: iso(r.updated_at) })),
    };
  }

  async addKey(r: Omit<ProviderKeyRecord, 'updatedAt'>): Promise<boolean> {
    const res = await this.store.transaction((q) =>
      q.query('INSERT INTO provider_api_keys (key_id, provider, api_key, key_sha256, min_role, updated_by) VALUES ($1, $2, $3, $4, $5, $6) ON CONFLICT DO NOTHING', [r.keyId, r.provider, r.apiKey, r.keySha256, r.minRole, r.updatedBy]),
    );
    return res.rowCount > 0;
  }

  async setKeyRole(keyId: string, minRole: CallerRole, by: string): Promise<boolean> {
    const res = await this.store.transaction((q) => q.query('UPDATE provider_api_keys SET min_role = $2, updated_by = $3, updated_at = now() WHERE key_id = $1', [keyId, minRole, by]));
    return res.rowCount > 0;
  }

  async deleteKey(keyId: string): Promise<boolean> {
    const res = await this.store.transaction((q) => q.query('DELETE FROM provider_api_keys WHERE key_id = $1', [keyId]));
    return res.rowCount > 0;
  }

  async setEnvRole(keySha256: string, minRole: CallerRole, by: string): Promise<void> {
    await this.store.transaction((q) =>
      q.query('INSERT INTO provider_env_key_min_roles (key_sha256, min_role, updated_by) VALUES ($1, $2, $3) ON CONFLICT (key_sha256) DO UPDATE SET min_role = $2, updated_by = $3, updated_at = now()', [keySha256, minRole, by]),
    );
  }

  async deleteEnvRole(keySha256: string): Promise<boolean> {
    const res = await this.store.transaction((q) => q.query('DELETE FROM provider_env_key_min_roles WHERE key_sha256 = $1', [keySha256]));
    return res.rowCount > 0;
  }
}
