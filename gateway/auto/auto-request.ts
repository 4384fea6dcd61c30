/**
 * An auto-model request on the wire (seed 000 "Auto 模型"): what the core's `AutoRouter` reads
 * of a client body (tools, effort, the conversation's opening, whether it is in a tool loop),
 * the request routed as the chosen candidate (its `model`, the candidate's effort when the
 * client set none), and what keeps the serving model's name from the client — the public name
 * every body, stream chunk and error carries (`publicModelOf`), and the masking of upstream
 * error text (`maskServedNames`). Thinking blocks of other models are removed before an
 * Anthropic-native upstream by `stripThinkingBlocks` (the adapter calls it).
 */
import { openingMessagesHash, type AutoMetadata, type AutoRequest, type ThinkingStrip } from '../../core/index.ts';
import type { ClientRequest } from '../request-body.ts';

/** The auto part of a request served by a candidate model. */
export interface AutoServing {
  /** The name the client used and only ever sees (`auto-balance`, `auto`). */
  readonly publicModel: string;
  /** Names of the serving model that must not reach the client (id, aliases, upstream model names), longest first. */
  readonly hiddenNames: readonly string[];
  /** Thinking blocks to drop before an Anthropic-native upstream. */
  readonly stripThinking: ThinkingStrip;
  /** The decision, for the request log's `metadata.auto`. */
  readonly metadata: AutoMetadata;
}


/** The model name the client sees for `req`: the auto model's, else the one it named. */
export function publicModelOf(req: ClientRequest): string {
  return req.auto?.publicModel ?? req.model;
}

/** `text` with every name of the serving model replaced by the public name (unchanged for a plain request). */
export function maskServedNames(req: ClientRequest, text: string): string;
export function maskServedNames(req: ClientRequest, text: string | null): string | null;
export function maskServedNames(req: ClientRequest, text: string | null): string | null {
  const a = req.auto;
  if (a === undefined || text === null || a.hiddenNames.length === 0) return text;
  return text.replace(namePattern(a.hiddenNames), a.publicModel);
}

/** Characters that continue a model name: a hidden name only counts where none touches it. */
const NAME_CHAR = '[\\w.:/-]';

/** Patterns by their names' list (one per serving model and generation). */
const patterns = new WeakMap<readonly string[], RegExp>();

/** One pass over every name (longest first), so a replacement is never replaced again. */
function namePattern(names: readonly string[]): RegExp {
  let re = patterns.get(names);
  if (re === undefined) {
    const alt = names.map((n) => n.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')).join('|');
    re = new RegExp(`(?<!${NAME_CHAR})(?:${alt})(?!${NAME_CHAR})`, 'g');
    patterns.set(names, re);
  }
  return re;
}

function isRecord(v: unknown): v is Record<string, unknown> {
  return v !== null && typeof v === 'object' && !Array.isArray(v);
}

/** Whether a message is a tool result: a chat `tool` message, or a user turn of Anthropic `tool_result` blocks. */
function isToolResult(m: unknown): boolean {
  if (!isRecord(m)) return false;
  if (m.role === 'tool' || m.role === 'function') return true;
  return m.role === 'user' && Array.isArray(m.content) && m.content.length > 0 && m.content.every((b) => isRecord(b) && b.type === 'tool_result');
}

/**
 * The `AutoRequest` of `req` (chat, messages and completions bodies): caller and declared session
 * as the HTTP layer read them, the prompt estimate and `max_tokens`, tools, `reasoning_effort`
 * (chat only; the Messages API has none), the opening's hash and whether the last message is a
 * tool result. A prompt without `messages` (completions) is its own opening and never a tool loop.
 * `permissionCheckMarks` (`auto.permission_check.system_contains`): a request whose system prompt
 * contains one of them is a Claude Code permission check.
 */
export function autoRequestOf(req: ClientRequest, callerId: string, sessionId: string | null, permissionCheckMarks: readonly string[] = []): AutoRequest {
  const b = req.body;
  const messages = Array.isArray(b.messages) ? (b.messages as unknown[]) : null;
  return {
    permissionCheck: permissionCheckMarks.length > 0 && isPermissionCheck(systemText(b, messages), permissionCheckMarks),
    callerId,
    sessionId,
    openingHash: messages ? openingMessagesHash(messages, b.system) : openingMessagesHash([b.prompt ?? b.input ?? null]),
    toolLoop: messages !== null && messages.length > 0 && isToolResult(messages[messages.length - 1]),
    inputTokens: req.inputTokens,
    maxTokens: req.outputTokensHint,
    modalities: req.modalities,
    hasTools: Array.isArray(b.tools) && b.tools.length > 0,
    reasoningEffort: req.endpoint === 'chat' && typeof b.reasoning_effort === 'string' ? b.reasoning_effort : null,
  };
}

/**
 * `req` routed as `model`: the body's `model` set to it, `reasoning_effort` set to `applyEffort`
 * on a chat request when given, `max_tokens` / `max_completion_tokens` capped at the model's
 * output limit `maxOutputTokens` (null = none; the model cannot write more, and the candidate
 * check sized the window with the capped value), and `auto` attached. The body is copied, never
 * changed in place.
 */
export function servedAs(req: ClientRequest, model: string, applyEffort: string | null, maxOutputTokens: number | null, auto: AutoServing): ClientRequest {
  const body: Record<string, unknown> = { ...req.body, model };
  if (applyEffort !== null && req.endpoint === 'chat') body.reasoning_effort = applyEffort;
  let hint = req.outputTokensHint;
  if (maxOutputTokens !== null && hint !== null && hint > maxOutputTokens) {
    hint = maxOutputTokens;
    for (const k of ['max_tokens', 'max_completion_tokens']) if (typeof body[k] === 'number') body[k] = maxOutputTokens;
  }
  return { ...req, model, body, outputTokensHint: hint, auto };
}

/**
 * `messages` without the thinking blocks `strip` names (`thinking` and `redacted_thinking`
 * content blocks of assistant turns): none, all, or all but the last assistant turn's (the
 * current model's own step of its tool loop). A turn left with no blocks keeps an empty text
 * block, so the conversation's turns stay as they were. Returns `messages` itself when nothing goes.
 */
export function stripThinkingBlocks(messages: unknown, strip: ThinkingStrip): unknown {
  if (strip === 'none' || !Array.isArray(messages)) return messages;
  let keep = -1;
  if (strip === 'all_but_last_step') for (let i = messages.length - 1; i >= 0 && keep < 0; i--) if (isRecord(messages[i]) && messages[i].role === 'assistant') keep = i;
  let changed = false;
  const out = messages.map((m, i) => {
    if (i === keep || !isRecord(m) || m.role !== 'assistant' || !Array.isArray(m.content)) return m;
    const content = m.content.filter((b) => !(isRecord(b) && (b.type === 'thinking' || b.type === 'redacted_thinking')));
    if (content.length === m.content.length) return m;
    changed = true;
    return { ...m, content: content.length > 0 ? content : [{ type: 'text', text: '' }] };
  });
  return changed ? out : messages;
}

/** Whether `system` contains one of `marks` (case-sensitive substrings). */
function isPermissionCheck(system: string, marks: readonly string[]): boolean {
  for (const m of marks) if (system.includes(m)) return true;
  return false;
}

/**
 * The system prompt's text: the Messages API's `system` (a string or text blocks) and the
 * chat API's `system` / `developer` messages, joined by newlines.
 */
function systemText(body: Record<string, unknown>, messages: readonly unknown[] | null): string {
  const parts: string[] = [];
  const add = (c: unknown): void => {
    if (typeof c === 'string') parts.push(c);
    else if (Array.isArray(c)) for (const b of c) if (isRecord(b) && typeof b.text === 'string') parts.push(b.text);
  };
  add(body.system);
  for (const m of messages ?? []) if (isRecord(m) && (m.role === 'system' || m.role === 'developer')) add(m.content);
  return parts.join('\n');
}
