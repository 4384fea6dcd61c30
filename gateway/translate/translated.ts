/**
 * What the translators between Anthropic's Messages API and OpenAI's Chat Completions API
 * return: a translated request (or a refusal naming the field), and stream events ready to
 * write to the client.
 */

/**
 * One request translated into the other format, or refused.
 * - `ok: true`: `body` is the request in the target format; `dropped` lists the dotted field
 *   names the target format has no equivalent for (e.g. `cache_control`, `metadata.foo`,
 *   `thinking`, `frequency_penalty`), deduplicated and sorted, so the gateway can tell the
 *   client what was not carried.
 * - `ok: false`: a field that cannot be carried at all; the gateway answers 400 with `param`
 *   (the field's path, e.g. `messages.[2].content.[0]`) and `message` (what is wrong and what
 *   to do instead).
 */
export type RequestTranslation =
  | { ok: true; body: Record<string, unknown>; dropped: string[] }
  | { ok: false; param: string; message: string };

/**
 * One event to send to a client, already serialised. `name` is the SSE event name
 * (Anthropic's `message_start` …; null for OpenAI chunks); `data` is JSON text; `token` is true
 * when the event carries model output (non-empty text, thinking, tool-call name or arguments) —
 * the gateway's commit point.
 */
export interface TranslatedEvent {
  readonly name: string | null;
  readonly data: string;
  readonly token: boolean;
}
