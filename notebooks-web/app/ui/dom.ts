/**
 * A tiny element builder, so pages read as structure rather than as `createElement` calls.
 */

/** Attributes of {@link h}: strings/numbers become attributes; `on*` functions become listeners. */
export type Attrs = Record<string, string | number | boolean | null | undefined | ((ev: Event) => void)>;

/** A child: a node, text, or nothing. */
export type Child = Node | string | number | null | undefined | false;

/**
 * Creates an HTML element. `class` sets the class, `onclick: fn` adds a listener, `true` sets a
 * boolean attribute, `false`/null/undefined omits it.
 */
export function h<K extends keyof HTMLElementTagNameMap>(tag: K, attrs: Attrs = {}, ...children: (Child | Child[])[]): HTMLElementTagNameMap[K] {
  const el = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs)) {
    if (v === null || v === undefined || v === false) continue;
    if (typeof v === 'function') el.addEventListener(k.replace(/^on/, ''), v);
    else if (v === true) el.setAttribute(k, '');
    else el.setAttribute(k, String(v));
  }
  for (const c of children.flat()) {
    if (c === null || c === undefined || c === false) continue;
    el.append(typeof c === 'object' ? c : String(c));
  }
  return el;
}

/** A `<select>` of `options` ([value, label]) with `value` selected, calling `onChange`. */
export function selectInput(
  label: string,
  options: readonly (readonly [string, string])[],
  value: string,
  onChange: (v: string) => void,
  name?: string,
): HTMLLabelElement {
  const sel = h('select', { name: name ?? label, onchange: (e) => onChange((e.target as HTMLSelectElement).value) });
  for (const [v, l] of options) {
    const o = h('option', { value: v }, l);
    if (v === value) o.selected = true;
    sel.append(o);
  }
  return h('label', { class: 'control' }, h('span', {}, label), sel);
}

/** A number `<input>` committing on change (Enter or blur), not on every keystroke. */
export function numberInput(
  label: string,
  value: number | undefined,
  onChange: (v: number | undefined) => void,
  opts: { min?: number; step?: number; name?: string; placeholder?: string } = {},
): HTMLLabelElement {
  const input = h('input', {
    type: 'number',
    name: opts.name ?? label,
    value: value === undefined ? '' : String(value),
    min: opts.min,
    step: opts.step ?? 'any',
    placeholder: opts.placeholder,
    onchange: (e) => {
      const raw = (e.target as HTMLInputElement).value;
      const n = Number(raw);
      onChange(raw === '' || !Number.isFinite(n) ? undefined : n);
    },
  });
  return h('label', { class: 'control' }, h('span', {}, label), input);
}

/** A note shown instead of a chart or table (empty data, missing tables). */
export function note(text: string | Node, kind: 'info' | 'warn' | 'error' = 'info'): HTMLElement {
  return h('p', { class: `note note-${kind}`, role: kind === 'error' ? 'alert' : null }, text);
}
