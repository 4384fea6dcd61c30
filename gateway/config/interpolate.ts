/**
 * `${VAR}` interpolation of parsed YAML: every string scalar may name environment variables.
 * `${VAR}` must be set (else an error names the field and the variable); `${VAR:-default}`
 * falls back to `default` when VAR is unset or empty; `$${` writes a literal `${`.
 * Interpolation runs on parsed values, never on the YAML text, so a variable's value cannot
 * change the document's structure. A scalar that is exactly one `${…}` is re-read as a YAML
 * scalar, so `port: ${PORT:-8080}` gives the number 8080 and `local: ${LOCAL:-false}` a boolean.
 */
import { parse as parseYamlScalar } from 'yaml';

const REF = /\$\$\{|\$\{([A-Za-z_][A-Za-z0-9_]*)(?::-([^}]*))?\}/g;
const WHOLE = /^\$\{([A-Za-z_][A-Za-z0-9_]*)(?::-([^}]*))?\}$/;

/** A variable that is referenced without a default and not set. */
export interface MissingVariable {
  /** Path of the field, e.g. `['models', 0, 'route', 1, 'api_key']`. */
  path: (string | number)[];
  variable: string;
}

/**
 * Returns a copy of `value` with every reference resolved from `env`, and the references that
 * could not be resolved (their fields keep the text as written).
 */
export function interpolateEnv(
  value: unknown,
  env: Readonly<Record<string, string | undefined>>,
): { value: unknown; missing: MissingVariable[] } {
  const missing: MissingVariable[] = [];
  const walk = (v: unknown, path: (string | number)[]): unknown => {
    if (typeof v === 'string') return resolveString(v, path);
    if (Array.isArray(v)) return v.map((x, i) => walk(x, [...path, i]));
    if (v !== null && typeof v === 'object') {
      const out: Record<string, unknown> = {};
      for (const [k, x] of Object.entries(v)) out[k] = walk(x, [...path, k]);
      return out;
    }
    return v;
  };
  const lookup = (name: string, fallback: string | undefined, path: (string | number)[]): string | null => {
    const got = env[name];
    if (got !== undefined && got !== '') return got;
    if (fallback !== undefined) return fallback;
    missing.push({ path, variable: name });
    return null;
  };
  const resolveString = (s: string, path: (string | number)[]): unknown => {
    if (!s.includes('$')) return s;
    const whole = WHOLE.exec(s);
    if (whole) {
      const got = lookup(whole[1]!, whole[2], path);
      if (got === null) return s;
      try {
        const scalar: unknown = parseYamlScalar(got);
        return typeof scalar === 'number' || typeof scalar === 'boolean' ? scalar : got;
      } catch {
        return got;
      }
    }
    let unresolved = false;
    const out = s.replace(REF, (m, name: string | undefined, fallback: string | undefined) => {
      if (name === undefined) return '${';
      const got = lookup(name, fallback, path);
      if (got === null) {
        unresolved = true;
        return m;
      }
      return got;
    });
    return unresolved ? s : out;
  };
  return { value: walk(value, []), missing };
}
