/**
 * Console · Recent requests (seed 000, "Recent Requests"): the newest rows of the gateway's
 * request log, filtered by caller, session, model and type (endpoint family); choosing one shows
 * its attempts on a time line and in a table — endpoint, outcome, why it was tried (primary,
 * fallback, offload, hedge…), when it started and how long it took — with the request's TTFT,
 * E2E, fallback and offload reason.
 *
 * View parameters: `caller`, `session`, `model`, `type`, `limit`, `req` (the selected request).
 * Reads `GET /admin/recent-requests`.
 */
import { fmtMs } from '../format.ts';
import type { PageContext } from '../pages/page-kit.ts';
import { h, note } from '../ui/dom.ts';
import { gatewayGet, GatewayError } from './console-client.ts';
import { button, consolePage, field, simpleTable, stateBadge } from './console-kit.ts';

/** One attempt as the log holds it. */
export interface LoggedAttempt {
  attempt_index: number;
  endpoint_id: string;
  target: string | null;
  outcome: string;
  reason: string;
  start_unix_ms: number;
  end_unix_ms: number | null;
  input_tokens: number | null;
  output_tokens: number | null;
}
/** One request as the log holds it. */
export interface LoggedRequest {
  arrival_unix_ms: number;
  request_id: string;
  session_id: string | null;
  caller_id: string | null;
  model: string;
  api: string;
  stream: boolean;
  endpoint_id: string | null;
  attempts: number;
  http_status: number;
  status: string;
  fallback: boolean;
  offload_reason: string | null;
  strategy: string | null;
  ttft_ms: number | null;
  e2e_ms: number | null;
  attempt_list: LoggedAttempt[];
}

const FILTERS = ['caller', 'session', 'model', 'type'] as const;

/** Renders the page. */
export function renderConsoleRequestsPage(ctx: PageContext): Promise<HTMLElement> {
  const p = ctx.route.params;
  return consolePage({
    name: 'requests',
    title: 'Gateway · Recent requests',
    intro: 'The newest requests of the request log, each with its attempts.',
    load: async () => {
      const q = new URLSearchParams();
      for (const f of FILTERS) if (p[f]) q.set(f, p[f]!);
      q.set('limit', String(Math.min(1000, Math.max(1, Number(p.limit) || 50))));
      let rows: LoggedRequest[];
      try {
        rows = (await gatewayGet<{ requests: LoggedRequest[] }>(`/admin/recent-requests?${q}`)).requests;
      } catch (err) {
        if (err instanceof GatewayError && (err.status === 404 || err.status === 400)) return [filterForm(ctx), note(err.message, err.status === 400 ? 'error' : 'warn')];
        throw err;
      }
      const selected = rows.find((r) => r.request_id === p.req) ?? null;
      return [
        filterForm(ctx),
        simpleTable(
          'recent-requests',
          `${rows.length} newest request(s)${FILTERS.some((f) => p[f]) ? ' matching the filters' : ''}`,
          ['arrived', 'request', 'caller', 'session', 'model', 'type', 'served by', 'status', 'attempts', 'fallback', 'offload', 'TTFT', 'E2E'],
          rows.map((r) => [
            new Date(Number(r.arrival_unix_ms)).toISOString().slice(11, 23),
            h('button', { type: 'button', class: 'link', 'data-request': r.request_id, 'aria-pressed': r.request_id === p.req ? 'true' : 'false', onclick: () => ctx.update({ req: r.request_id }) }, r.request_id),
            r.caller_id ?? '–',
            r.session_id ?? '–',
            r.model,
            r.api,
            h('code', { 'data-served-by': r.endpoint_id ?? '' }, r.endpoint_id ?? '–'),
            r.status === 'ok' ? stateBadge(`ok ${r.http_status}`, 'ok') : stateBadge(`${r.status} ${r.http_status}`, 'bad'),
            String(r.attempts),
            r.fallback ? 'yes' : 'no',
            r.offload_reason ?? '–',
            fmtMs(r.ttft_ms),
            fmtMs(r.e2e_ms),
          ]),
          'no request in the log matches',
        ),
        selected ? requestDetail(selected) : rows.length ? h('p', { class: 'hint' }, 'Choose a request id to see its attempts.') : null,
      ];
    },
  });
}

function filterForm(ctx: PageContext): HTMLElement {
  const p = ctx.route.params;
  const fields = {
    caller: field('caller', 'caller', { value: p.caller ?? '', size: 12 }),
    session: field('session', 'session', { value: p.session ?? '', size: 12 }),
    model: field('model', 'model', { value: p.model ?? '', size: 14 }),
    type: field('type (chat, completion, embedding…)', 'type', { value: p.type ?? '', size: 12 }),
    limit: field('rows', 'limit', { type: 'number', min: '1', step: '1', value: p.limit ?? '50', size: 5 }),
  };
  return h(
    'form',
    {
      class: 'controls',
      'data-request-filters': '',
      onsubmit: (e) => {
        e.preventDefault();
        ctx.update({ caller: fields.caller.input.value.trim(), session: fields.session.input.value.trim(), model: fields.model.input.value.trim(), type: fields.type.input.value.trim(), limit: fields.limit.input.value, req: null });
      },
    },
    ...Object.values(fields).map((f) => f.label),
    h('button', { type: 'submit', class: 'action' }, 'Filter'),
    button('Clear filters', () => ctx.update({ caller: null, session: null, model: null, type: null, req: null })),
  );
}

/** The selected request: its facts, its attempts on a time line and in a table. */
function requestDetail(r: LoggedRequest): HTMLElement {
  const t0 = Number(r.arrival_unix_ms);
  const ends = r.attempt_list.map((a) => Number(a.end_unix_ms ?? a.start_unix_ms) - t0);
  const spanMs = Math.max(1, r.e2e_ms ?? 0, ...ends);
  return h(
    'section',
    { class: 'card wide', 'data-request-detail': r.request_id, 'aria-labelledby': 'req-title' },
    h('h2', { id: 'req-title' }, `Request ${r.request_id}`),
    h(
      'dl',
      { class: 'facts' },
      ...[
        ['model', r.model],
        ['strategy', r.strategy ?? '–'],
        ['served by', r.endpoint_id ?? '–'],
        ['status', `${r.status} (HTTP ${r.http_status})`],
        ['TTFT', fmtMs(r.ttft_ms)],
        ['E2E', fmtMs(r.e2e_ms)],
        ['fallback', r.fallback ? 'yes' : 'no'],
        ['offload reason', r.offload_reason ?? 'not offloaded'],
      ].flatMap(([k, v]) => [h('dt', {}, k!), h('dd', {}, v!)]),
    ),
    attemptsTimeline(r, t0, spanMs),
    simpleTable(
      'request-attempts',
      'Attempts, in start order',
      ['#', 'endpoint', 'why', 'outcome', 'started after', 'took', 'tokens in / out'],
      r.attempt_list.map((a) => [
        String(a.attempt_index),
        h('code', {}, a.endpoint_id),
        a.reason,
        a.outcome === 'ok' ? stateBadge('ok', 'ok') : stateBadge(a.outcome, 'bad'),
        fmtMs(Number(a.start_unix_ms) - t0),
        a.end_unix_ms === null ? 'unfinished' : fmtMs(Number(a.end_unix_ms) - Number(a.start_unix_ms)),
        `${a.input_tokens ?? '–'} / ${a.output_tokens ?? '–'}`,
      ]),
      'no attempt was made',
    ),
  );
}

/** One bar per attempt over the request's life (SVG with a text alternative). */
function attemptsTimeline(r: LoggedRequest, t0: number, spanMs: number): SVGSVGElement {
  const ns = 'http://www.w3.org/2000/svg';
  const width = 900;
  const rowH = 22;
  const left = 260;
  const height = 20 + rowH * Math.max(1, r.attempt_list.length);
  const svg = document.createElementNS(ns, 'svg');
  svg.setAttribute('viewBox', `0 0 ${width} ${height}`);
  svg.setAttribute('class', 'chart attempts-timeline');
  svg.setAttribute('role', 'img');
  svg.setAttribute('aria-label', `Attempts of ${r.request_id}: ${r.attempt_list.map((a) => `${a.attempt_index}. ${a.endpoint_id} ${a.reason} ${a.outcome}`).join('; ') || 'none'}`);
  const x = (ms: number) => left + (Math.max(0, ms) / spanMs) * (width - left - 10);
  const text = (tx: number, ty: number, s: string, cls = 'tick') => {
    const t = document.createElementNS(ns, 'text');
    t.setAttribute('x', String(tx));
    t.setAttribute('y', String(ty));
    t.setAttribute('class', cls);
    t.textContent = s;
    svg.append(t);
  };
  r.attempt_list.forEach((a, i) => {
    const y = 6 + i * rowH;
    const s = Number(a.start_unix_ms) - t0;
    const e = Number(a.end_unix_ms ?? a.start_unix_ms) - t0;
    const rect = document.createElementNS(ns, 'rect');
    rect.setAttribute('x', String(x(s)));
    rect.setAttribute('y', String(y));
    rect.setAttribute('width', String(Math.max(2, x(e) - x(s))));
    rect.setAttribute('height', String(rowH - 8));
    rect.setAttribute('class', `attempt-bar outcome-${a.outcome === 'ok' ? 'ok' : 'failed'}`);
    rect.dataset.endpoint = a.endpoint_id;
    svg.append(rect);
    text(4, y + rowH - 10, `${a.attempt_index}. ${a.endpoint_id} · ${a.reason} · ${a.outcome}`);
  });
  if (r.ttft_ms !== null) {
    const line = document.createElementNS(ns, 'line');
    line.setAttribute('x1', String(x(r.ttft_ms)));
    line.setAttribute('x2', String(x(r.ttft_ms)));
    line.setAttribute('y1', '0');
    line.setAttribute('y2', String(height - 14));
    line.setAttribute('class', 'ttft-mark');
    svg.append(line);
  }
  text(left, height - 2, '0');
  text(left + 30, height - 2, 'span ' + `${fmtMs(spanMs)}${r.ttft_ms !== null ? ` · TTFT ${fmtMs(r.ttft_ms)} (dashed)` : ''}`);
  return svg;
}
