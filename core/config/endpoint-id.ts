/**
 * Endpoint ids: the one key shared by health, latency statistics, logs and pins.
 * Form `{modelId}:{location}` (seed 000, "endpoint ids"):
 * - a loopback base URL (localhost, 127.0.0.0/8, ::1) ⇒ `local-{port}`;
 * - `sim://NAME` (a simulated replica or provider) ⇒ `NAME`;
 * - the generic `openai_compat` kind ⇒ a name from the host: the label before the public
 *   suffix plus `-api` (`api.minimax.io` ⇒ `minimax-api`);
 * - any other kind ⇒ `{kind}-api`.
 * Changing the derived part (port, vendor host) renames the endpoint; its history starts over.
 */

const LOOPBACK = /^(localhost|127(\.\d{1,3}){3}|\[::1\]|::1)$/i;

/**
 * Derives the location part of an endpoint id.
 * @param kind route kind from models.yaml (e.g. `openai_compat`).
 * @param baseUrl absolute URL of the upstream.
 * @throws Error when `baseUrl` is not an absolute http(s):// or sim:// URL (names the value and the fix).
 */
export function endpointLocation(kind: string, baseUrl: string): string {
  let url: URL;
  try {
    url = new URL(baseUrl);
  } catch {
    url = null as unknown as URL;
  }
  // `new URL('localhost:8000')` parses with scheme `localhost:`, so check the scheme too.
  if (!url || !['http:', 'https:', 'sim:'].includes(url.protocol)) {
    throw new Error(`route.base_url: '${baseUrl}' is not an absolute http(s) URL; write e.g. http://127.0.0.1:8000/v1`);
  }
  if (url.protocol === 'sim:') return url.host || url.pathname.replace(/^\/+/, '');
  if (LOOPBACK.test(url.hostname)) {
    const port = url.port || (url.protocol === 'https:' ? '443' : '80');
    return `local-${port}`;
  }
  if (kind !== 'openai_compat') return `${kind}-api`;
  const labels = url.hostname.split('.').filter((l) => l.length > 0);
  // The label before the last one is the vendor's name in nearly every API host
  // (api.openai.com, api.minimax.io); two-level suffixes such as .co.uk are rare for APIs.
  const vendor = labels.length >= 2 ? labels[labels.length - 2]! : labels[0] ?? 'remote';
  return `${vendor}-api`;
}

/** `{modelId}:{location}` for a route; see `endpointLocation` for the rules and errors. */
export function endpointId(modelId: string, kind: string, baseUrl: string): string {
  return `${modelId}:${endpointLocation(kind, baseUrl)}`;
}
