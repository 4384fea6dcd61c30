/**
 * What every console page shares: the page shell (heading, the admin-key form, the answer of
 * the last action, the data), the confirmation dialog every change goes through, state shown as
 * text, and the sparkline of the health history.
 *
 * Accessibility: every control is a real `<button>`, `<input>` or `<select>` with a label; the
 * confirmation is a modal `<dialog>` (focus moves into it, Escape cancels, focus returns to the
 * button that opened it); the answer of an action is announced (`role="status"`, or `alert` for
 * a refusal); states are words (`closed`, `open`, `disabled`), colour only repeats them.
 */
import { h, note, type Child } from '../ui/dom.ts';
import { adminKey, forgetAdminKey, gatewayCall, GatewayError, setAdminKey, type CallOptions } from './console-client.ts';

/** A change the operator may confirm: what it does in words, and the call that does it. */
export interface ActionSpec {
  /** Dialog title and button label, e.g. "Drain demo:local-8001". */
  title: string;
  /** One or two sentences of what will happen. */
  description: string;
  method: 'PUT' | 'PATCH' | 'DELETE' | 'POST';
  path: string;
  body?: unknown;
  ifMatch?: string;
  /** `data-action` of the confirm button's dialog, for tests. */
  name: string;
}

/** What a page's loader gets: run a confirmed action, reload the data. */
export interface ConsoleHandle {
  act(spec: ActionSpec): void;
  refresh(): Promise<void>;
  /** The element the page lives in (connected once shown). */
  readonly root: HTMLElement;
}

/** Options of {@link consolePage}. */
export interface ConsolePageOptions {
  /** `data-console` of the page, e.g. `routes`. */
  name: string;
  title: string;
  intro: string;
  /** Builds the page's data part (fetching it); thrown errors are shown in its place. */
  load(c: ConsoleHandle): Promise<Child[]>;
}

/**
 * The page: without a key, the key form; with one, the data (or the gateway's refusal with the
 * form again). Marks `data-state` = `need-key` | `loaded` | `refused` | `failed` for tests.
 */
export async function consolePage(o: ConsolePageOptions): Promise<HTMLElement> {
  const result = h('div', { class: 'console-result', 'data-result': '', 'aria-live': 'polite' });
  const body = h('div', { class: 'console-body' });
  const keyLine = h('p', { class: 'meta console-key' });
  const root = h('div', { class: 'page console', 'data-console': o.name }, h('header', { class: 'page-head' }, h('h1', {}, o.title), h('p', { class: 'meta' }, o.intro), keyLine), result, body);
  const handle: ConsoleHandle = {
    root,
    act: (spec) => confirmAction(spec, result, () => handle.refresh()),
    refresh: () => fill(),
  };
  const fill = async (): Promise<void> => {
    const key = adminKey();
    keyLine.replaceChildren(
      ...(key
        ? ['Admin key: entered for this tab (kept in session storage only). ', h('button', { type: 'button', class: 'action', 'data-forget-key': '', onclick: () => { forgetAdminKey(); void fill(); } }, 'Forget the key')]
        : ['No admin key yet.']),
    );
    if (!key) {
      root.dataset.state = 'need-key';
      body.replaceChildren(keyForm(() => void fill()));
      return;
    }
    try {
      const parts = await o.load(handle);
      body.replaceChildren(...parts.filter((p): p is Node | string => p !== null && p !== undefined && p !== false).map((p) => (typeof p === 'object' ? p : String(p))));
      root.dataset.state = 'loaded';
    } catch (err) {
      const refused = err instanceof GatewayError && (err.status === 401 || err.status === 403);
      root.dataset.state = refused ? 'refused' : 'failed';
      if (refused) {
        // A key the gateway refuses is not kept: the next page would only be refused again.
        forgetAdminKey();
        keyLine.replaceChildren('No admin key: the one entered was refused and has been forgotten.');
      }
      const what = err instanceof GatewayError ? `${err.status === 0 ? '' : `HTTP ${err.status} ${err.code}: `}${err.message}` : (err as Error).message;
      body.replaceChildren(
        note(refused ? `The gateway refused the admin key — ${what}` : `Could not read the gateway — ${what}`, 'error'),
        ...(refused ? [keyForm(() => void fill())] : [h('button', { type: 'button', class: 'action', onclick: () => void fill() }, 'Try again')]),
      );
    }
  };
  await fill();
  return root;
}

/** The admin-key form (a password field; the key goes to session storage only). */
export function keyForm(onKey: () => void): HTMLElement {
  const input = h('input', { type: 'password', id: 'admin-key', name: 'admin-key', autocomplete: 'off', spellcheck: 'false', required: true, size: 40 });
  const form = h(
    'form',
    {
      class: 'key-form controls',
      'data-key-form': '',
      onsubmit: (e) => {
        e.preventDefault();
        setAdminKey(input.value);
        input.value = '';
        onKey();
      },
    },
    h('label', { class: 'control', for: 'admin-key' }, h('span', {}, 'Admin key (a caller key with admin: true)'), input),
    h('button', { type: 'submit', class: 'action' }, 'Use this key'),
  );
  return form;
}

/**
 * Opens the confirmation dialog for `spec`; on Confirm sends the call and shows the server's
 * answer in `result` (status and body), then calls `after` (reload the data).
 */
export function confirmAction(spec: ActionSpec, result: HTMLElement, after: () => Promise<void>): void {
  const opener = document.activeElement as HTMLElement | null;
  const request = `${spec.method} ${spec.path}${spec.body !== undefined ? `\n${JSON.stringify(spec.body, null, 2)}` : ''}${spec.ifMatch ? `\nIf-Match: ${spec.ifMatch}` : ''}`;
  const confirm = h('button', { type: 'submit', class: 'action primary', value: 'confirm', 'data-confirm': spec.name }, 'Confirm');
  const cancel = h('button', { type: 'submit', class: 'action', value: 'cancel', formnovalidate: true }, 'Cancel');
  const dialog = h(
    'dialog',
    { class: 'confirm-dialog', 'aria-labelledby': 'confirm-title', 'data-dialog': spec.name },
    h('form', { method: 'dialog' }, h('h2', { id: 'confirm-title' }, spec.title), h('p', {}, spec.description), h('p', { class: 'caption' }, 'The call that will be sent:'), h('pre', { class: 'request' }, request), h('div', { class: 'dialog-buttons' }, confirm, cancel)),
  );
  dialog.addEventListener('close', () => {
    dialog.remove();
    opener?.focus?.();
    if (dialog.returnValue !== 'confirm') {
      result.replaceChildren(h('p', { class: 'note', role: 'status' }, `Cancelled: ${spec.title}. Nothing was sent.`));
      return;
    }
    void send(spec, result, after);
  });
  document.body.append(dialog);
  dialog.showModal();
  cancel.focus(); // the safe choice has the focus
}

async function send(spec: ActionSpec, result: HTMLElement, after: () => Promise<void>): Promise<void> {
  result.replaceChildren(h('p', { class: 'note', role: 'status' }, `Sending: ${spec.title}…`));
  const opts: CallOptions = { ...(spec.body !== undefined && { body: spec.body }), ...(spec.ifMatch && { ifMatch: spec.ifMatch }) };
  let status: number;
  let body: unknown;
  let ok: boolean;
  try {
    const a = await gatewayCall<unknown>(spec.method, spec.path, opts);
    [status, body, ok] = [a.status, a.body, true];
  } catch (err) {
    if (!(err instanceof GatewayError)) throw err;
    [status, body, ok] = [err.status, err.body ?? err.message, false];
  }
  // A verification answers 200 either way; its verdict is in the body.
  const verified = ok && typeof (body as { verified?: unknown })?.verified === 'boolean' ? (body as { verified: boolean }).verified : null;
  const verdict = verified === null ? '' : verified ? ' Verified: the upstream answered. Nothing was saved.' : ' NOT verified: the upstream did not answer as expected (see the results). Nothing was saved.';
  const message = ok ? `Done: ${spec.title} — the gateway answered HTTP ${status}.${verdict}` : `Refused: ${spec.title} — the gateway answered HTTP ${status}: ${(body as { error?: { message?: string } })?.error?.message ?? ''}`;
  result.replaceChildren(
    h(
      'div',
      { class: `note ${ok && verified !== false ? '' : ok ? 'note-warn' : 'note-error'}`, role: ok ? 'status' : 'alert', 'data-answer-status': status, 'data-verified': verified === null ? null : String(verified) },
      h('p', {}, message),
      h('details', {}, h('summary', {}, 'The server’s answer'), h('pre', { class: 'answer' }, typeof body === 'string' ? body : JSON.stringify(body, null, 2))),
    ),
  );
  await after();
}

/** A state as a word with a class for colour (the word alone carries it). */
export function stateBadge(text: string, kind: 'ok' | 'warn' | 'bad' | 'off'): HTMLElement {
  return h('span', { class: `state state-${kind}`, 'data-state-text': text }, text);
}

/**
 * A sparkline of `values` (oldest first) on [`min`, `max`] as an inline SVG with a text
 * equivalent (`aria-label`: the label, the last value and the range seen).
 */
export function sparkline(values: readonly number[], opts: { min: number; max: number; label: string; format: (v: number) => string; width?: number; height?: number }): SVGSVGElement {
  const w = opts.width ?? 120;
  const hgt = opts.height ?? 24;
  const ns = 'http://www.w3.org/2000/svg';
  const svg = document.createElementNS(ns, 'svg');
  svg.setAttribute('class', 'sparkline');
  svg.setAttribute('width', String(w));
  svg.setAttribute('height', String(hgt));
  svg.setAttribute('viewBox', `0 0 ${w} ${hgt}`);
  svg.setAttribute('role', 'img');
  const last = values.at(-1);
  const lo = values.length ? Math.min(...values) : NaN;
  const hi = values.length ? Math.max(...values) : NaN;
  svg.setAttribute('aria-label', values.length === 0 ? `${opts.label}: no samples yet` : `${opts.label}: now ${opts.format(last!)}, ${values.length} samples between ${opts.format(lo)} and ${opts.format(hi)}`);
  svg.dataset.samples = String(values.length);
  const span = opts.max - opts.min || 1;
  const step = values.length > 1 ? (w - 2) / (values.length - 1) : 0;
  const pts = values.map((v, i) => `${(1 + i * step).toFixed(1)},${(hgt - 2 - ((Math.min(opts.max, Math.max(opts.min, v)) - opts.min) / span) * (hgt - 4)).toFixed(1)}`);
  const base = document.createElementNS(ns, 'line');
  base.setAttribute('x1', '0');
  base.setAttribute('x2', String(w));
  base.setAttribute('y1', String(hgt - 1));
  base.setAttribute('y2', String(hgt - 1));
  base.setAttribute('class', 'spark-base');
  svg.append(base);
  if (pts.length > 0) {
    const line = document.createElementNS(ns, 'polyline');
    line.setAttribute('points', pts.length === 1 ? `${pts[0]} ${w - 1},${pts[0]!.split(',')[1]}` : pts.join(' '));
    line.setAttribute('class', 'spark-line');
    svg.append(line);
  }
  return svg;
}

/** A plain table: `headers` and rows of cells; `name` is its `data-table`. */
export function simpleTable(name: string, caption: string, headers: readonly string[], rows: ReadonlyArray<ReadonlyArray<Child>>, empty = 'nothing to show'): HTMLElement {
  return h(
    'div',
    { class: 'table-card' },
    h(
      'div',
      { class: 'table-scroll' },
      h(
        'table',
        { 'data-table': name },
        h('caption', { class: 'caption' }, caption),
        h('thead', {}, h('tr', {}, headers.map((x) => h('th', { scope: 'col' }, x)))),
        h('tbody', {}, rows.length === 0 ? h('tr', {}, h('td', { class: 'empty', colspan: headers.length }, empty)) : rows.map((r) => h('tr', {}, r.map((c) => h('td', {}, c))))),
      ),
    ),
  );
}

/** A labelled text or number input (no listener: read `.value` when a button is pressed). */
export function field(label: string, name: string, opts: { type?: 'text' | 'number'; value?: string; placeholder?: string; step?: string; min?: string; size?: number } = {}): { label: HTMLLabelElement; input: HTMLInputElement } {
  const id = `f-${name}-${Math.random().toString(36).slice(2, 8)}`;
  const input = h('input', { id, name, type: opts.type ?? 'text', value: opts.value ?? '', placeholder: opts.placeholder, step: opts.step, min: opts.min, size: opts.size });
  return { label: h('label', { class: 'control', for: id }, h('span', {}, label), input), input };
}

/** A labelled select (no listener: read `.value`). */
export function choice(label: string, name: string, options: ReadonlyArray<readonly [string, string]>, value = ''): { label: HTMLLabelElement; select: HTMLSelectElement } {
  const id = `s-${name}-${Math.random().toString(36).slice(2, 8)}`;
  const select = h('select', { id, name });
  for (const [v, l] of options) {
    const o = h('option', { value: v }, l);
    if (v === value) o.selected = true;
    select.append(o);
  }
  return { label: h('label', { class: 'control', for: id }, h('span', {}, label), select), select };
}

/** A button. */
export function button(label: string, onclick: () => void, attrs: Record<string, string> = {}): HTMLButtonElement {
  return h('button', { type: 'button', class: 'action', onclick, ...attrs }, label);
}
