/**
 * The gateway's runtime settings (seed 000: auto models exist only while the runtime setting
 * `auto_mode_enabled` is on), kept in the overlay's `runtime_settings` over their gateway.yaml
 * values:
 *
 * - `GET /admin/settings`: every setting with its effective value and where it comes from;
 * - `GET /admin/settings/{key}`: one of them, with its record's version as the ETag;
 * - `PUT /admin/settings/{key}` `{"value": …, "version"?: n}`: sets it (a value of the setting's
 *   type; `If-Match` or `version` for optimistic concurrency, as for every overlay record);
 * - `DELETE /admin/settings/{key}` (optional `{"version": n}`): removes the runtime value, so
 *   the gateway.yaml value applies again; 404 when there is none to remove.
 *
 * A write goes to the store and is applied as a new generation at once (auto models appear in
 * or vanish from `/v1/models`, and requests naming them are served or get 404); replicas on the
 * same store pick it up through the store's change propagation like every overlay change. A
 * reload of gateway.yaml changes the value only while no runtime value is set.
 */
import { z } from 'zod';
import { closestName, readableIssue } from '../../core/index.ts';
import type { GatewaySettings } from '../config/gateway-settings.ts';
import type { OverlaySnapshot, RuntimeSettingRecord } from '../store/overlay-repo.ts';
import type { AdminCall, AdminKit, AdminRouteGroup, Routed } from './admin-api.ts';
import { badRequest, decode, error, precondition } from './admin-api.ts';
import { parseBody } from './admin-bodies.ts';

const BASE = '/admin/settings';
const KEY_PATH = /^\/admin\/settings\/([^/]+)$/;

/** One runtime setting: its value's schema and what it does (shown by `GET /admin/settings`). */
interface SettingSpec {
  readonly schema: z.ZodType;
  readonly description: string;
}

/** The settings that may be changed at run time, by gateway.yaml key. */
const SETTINGS = {
  auto_mode_enabled: {
    schema: z.boolean({ message: 'expected true or false' }),
    description: 'whether the auto: profiles of the model registry are served (auto, auto-<name>); off: 404 and absent from /v1/models',
  },
} as const satisfies Record<string, SettingSpec>;

/** A runtime setting's key. */
export type RuntimeSettingKey = keyof typeof SETTINGS;

/** Every runtime setting's key, in a fixed order. */
export const RUNTIME_SETTING_KEYS: readonly RuntimeSettingKey[] = Object.keys(SETTINGS) as RuntimeSettingKey[];

/** The gateway.yaml values of the runtime settings. */
export type YamlRuntimeSettings = Pick<GatewaySettings, RuntimeSettingKey>;

/** `PUT /admin/settings/{key}` body. */
const PutBody = z.object({ value: z.unknown(), version: z.number().int().min(0).optional() }).strict();
/** `DELETE /admin/settings/{key}`: optional body. */
const DeleteBody = z.object({ version: z.number().int().min(0).optional() }).strict();

/** The runtime record of `key` in `o` that is set (value not null), or undefined. */
function setRecord(o: OverlaySnapshot, key: string): RuntimeSettingRecord | undefined {
  return o.settings.find((r) => r.key === key && r.value !== null);
}

/**
 * The value of `auto_mode_enabled` a generation runs with: the runtime value in `o` when one is
 * set, else `yaml`'s (gateway.yaml). A stored value of another type (written by a newer gateway,
 * or by hand) is ignored.
 */
export function effectiveAutoModeEnabled(o: OverlaySnapshot, yaml: boolean): boolean {
  const v = setRecord(o, 'auto_mode_enabled')?.value;
  return typeof v === 'boolean' ? v : yaml;
}

/** The route group; `yaml()` gives the gateway.yaml values in force (they change on a reload). */
export function runtimeSettingsRoutes(kit: AdminKit, yaml: () => YamlRuntimeSettings): AdminRouteGroup {
  const d = kit.d;

  const view = (o: OverlaySnapshot, key: RuntimeSettingKey) => {
    const rec = o.settings.find((r) => r.key === key);
    const set = rec !== undefined && rec.value !== null;
    return {
      key,
      value: set ? rec.value : yaml()[key],
      source: set ? 'runtime' : 'gateway.yaml',
      gateway_yaml_value: yaml()[key],
      override: set ? { value: rec.value, version: rec.version, updated_by: rec.updatedBy, updated_at: rec.updatedAt } : null,
      version: rec?.version ?? 0,
      description: SETTINGS[key].description,
    };
  };

  const keyOf = (raw: string): { ok: true; key: RuntimeSettingKey } | { ok: false; r: Routed } => {
    if (raw in SETTINGS) return { ok: true, key: raw as RuntimeSettingKey };
    const near = closestName(raw, [...RUNTIME_SETTING_KEYS]);
    return { ok: false, r: { answer: { status: 404, body: error('setting_not_found', `No runtime setting '${raw}'${near ? ` (did you mean '${near}'?)` : ''}; the settings are: ${RUNTIME_SETTING_KEYS.join(', ')}.`, 'key') } } };
  };

  const write = async (call: AdminCall, key: RuntimeSettingKey): Promise<Routed> => {
    const del = call.method === 'DELETE';
    const body = del ? parseBody(DeleteBody, call.body) : parseBody(PutBody, call.body);
    if (!body.ok) return { answer: badRequest(body.problem) };
    const pre = precondition(call.ifMatch, body.value.version);
    if (!pre.ok) return { answer: badRequest(pre.problem) };
    let value: unknown = null;
    if (del) {
      if (setRecord(await d.repo.load(), key) === undefined) {
        return { answer: { status: 404, body: error('override_not_found', `'${key}' has no runtime value to remove; it already uses its gateway.yaml value (${JSON.stringify(yaml()[key])}).`, 'key') } };
      }
    } else {
      const raw = (body.value as { value?: unknown }).value;
      if (raw === undefined || raw === null) return { answer: badRequest({ message: `'value' is required: send {"value": …} with the new value of '${key}' (DELETE removes the runtime value).`, param: 'value' }) };
      const parsed = SETTINGS[key].schema.safeParse(raw, { reportInput: true });
      if (!parsed.success) {
        const { message, fix } = readableIssue(parsed.error.issues[0]!, SETTINGS[key].schema);
        return { answer: badRequest({ message: `'value' is invalid for '${key}': ${message}${fix ? `; ${fix}` : ''}.`, param: 'value' }) };
      }
      value = parsed.data;
    }
    const r = await d.repo.writeSetting(key, value, pre.version, call.caller.id);
    const done = await kit.finish(r, pre.from, () => ({ key }));
    if (done.answer.status === 200) done.answer.body = { ...(done.answer.body as object), ...view(d.overlay(), key) };
    return done;
  };

  const refused = (): Routed | null => (d.writesRefused ? { answer: { status: 409, body: error('store_required', d.writesRefused, null) } } : null);

  return {
    route(call) {
      const { method, path } = call;
      if (path === BASE) {
        if (method !== 'GET') return null;
        const o = d.overlay();
        return Promise.resolve({ answer: { status: 200, body: { settings: Object.fromEntries(RUNTIME_SETTING_KEYS.map((k) => { const { key: _, ...v } = view(o, k); return [k, v]; })), generation: d.generation() } } });
      }
      const m = KEY_PATH.exec(path);
      if (!m) return null;
      if (method !== 'GET' && method !== 'PUT' && method !== 'DELETE') return null;
      const k = keyOf(decode(m[1]!));
      if (!k.ok) return Promise.resolve(k.r);
      if (method === 'GET') {
        const v = view(d.overlay(), k.key);
        return Promise.resolve({ answer: { status: 200, etag: `"${v.version}"`, body: { ...v, generation: d.generation() } } });
      }
      return Promise.resolve(refused() ?? write(call, k.key));
    },
  };
}
