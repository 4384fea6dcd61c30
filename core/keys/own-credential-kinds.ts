/**
 * Which route kinds a key pool's `min_role` reservations can apply to. Kept apart from
 * `route-keys.ts` so the registry schema (`config/models-config.ts`) can check it without an
 * import cycle.
 */
/**
 * Route kinds whose upstream holds its own credential instead of drawing one from a key pool:
 * the native Anthropic kind. Seed 000 says of such adapters that they never join the run-time
 * key registry, so a reservation recorded for their keys is kept but never takes effect, and a
 * model behind them is restricted by who may call it (here: the caller keys' `allowed_models`)
 * rather than by `min_role`. On these routes `api_keys:` may not reserve (`min_role` above
 * `free` is refused when the registry is read), reservations by hash and keys added for their
 * provider label do not apply, and only an `api_keys:` list pools (rotation and silencing).
 */
export const OWN_CREDENTIAL_KINDS: ReadonlySet<string> = new Set(['anthropic']);

/** Whether `min_role` reservations can apply to a route of `kind` (not one of `OWN_CREDENTIAL_KINDS`). */
export function kindTakesReservations(kind: string): boolean {
  return !OWN_CREDENTIAL_KINDS.has(kind);
}
