/**
 * The response header in which a translating adapter names the request fields its upstream has
 * no equivalent for (comma-separated dotted names, e.g. `cache_control, metadata.session`); the
 * exchange also writes them to the log. Fields are dropped with this notice or refused with a
 * 400, never lost silently.
 */
export const DROPPED_PARAMS_HEADER = 'x-switchyard-dropped-params';

/** The commit header pair for `dropped`, or null when nothing was dropped. */
export function droppedParamsHeader(dropped: readonly string[]): readonly [string, string] | null {
  return dropped.length > 0 ? [DROPPED_PARAMS_HEADER, dropped.join(', ')] : null;
}
