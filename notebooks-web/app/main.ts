/**
 * The dashboard app: reads the view from the URL hash, renders the page it names, and renders
 * again whenever the hash changes. A page is built off-screen and swapped in whole, so the
 * old view stays readable while the new one loads and the scroll position survives. `#app`
 * carries `data-view` and `data-ready` so tests (and people) can tell when a view is done.
 * The navigation has two groups: the results pages, and the gateway console's pages (console/),
 * shown when the server forwards to a gateway (`switchyard dashboard --gateway URL`).
 */
import { formatRoute, GATEWAY_PAGES, parseRoute, RESULT_PAGES, type PageName, type Route } from './route.ts';
import { renderConsoleAuditPage } from './console/audit-page.ts';
import { renderConsoleHealthPage } from './console/health-page.ts';
import { renderConsoleOffloadPage } from './console/offload-page.ts';
import { renderConsoleRequestsPage } from './console/requests-page.ts';
import { renderConsoleRoutesPage } from './console/routes-page.ts';
import { renderConsoleRouteWisePage } from './console/routewise-page.ts';
import { h, note } from './ui/dom.ts';
import { renderComparePage } from './pages/compare-page.ts';
import { renderExperimentsPage } from './pages/experiments-page.ts';
import type { PageContext, PageRenderer, ParamPatch } from './pages/page-kit.ts';
import { renderPlansPage } from './pages/plans-page.ts';
import { renderRequestsPage } from './pages/requests-page.ts';
import { renderSweepPage } from './pages/sweep-page.ts';
import { renderTimelinePage } from './pages/timeline-page.ts';

const RENDERERS: Readonly<Record<PageName, PageRenderer>> = {
  experiments: renderExperimentsPage,
  compare: renderComparePage,
  timeline: renderTimelinePage,
  sweep: renderSweepPage,
  requests: renderRequestsPage,
  plans: renderPlansPage,
  'gateway/routes': renderConsoleRoutesPage,
  'gateway/health': renderConsoleHealthPage,
  'gateway/offload': renderConsoleOffloadPage,
  'gateway/requests': renderConsoleRequestsPage,
  'gateway/routewise': renderConsoleRouteWisePage,
  'gateway/audit': renderConsoleAuditPage,
};

const TITLES: Readonly<Record<PageName, string>> = {
  experiments: 'Experiments',
  compare: 'Compare',
  timeline: 'Timeline',
  sweep: 'Sweep',
  requests: 'Requests',
  plans: 'Plans',
  'gateway/routes': 'Models and routes',
  'gateway/health': 'Health',
  'gateway/offload': 'Offload',
  'gateway/requests': 'Recent requests',
  'gateway/routewise': 'RouteWise',
  'gateway/audit': 'Audit',
};

/** Whether the server forwards to a gateway (`/api/health` says so); asked once. */
const hasGateway: Promise<boolean> = fetch('/api/health')
  .then((r) => r.json())
  .then((b: { gateway?: boolean }) => b.gateway === true)
  .catch(() => false);
let gatewayShown = false;
void hasGateway.then((g) => {
  gatewayShown = g;
  renderNav(parseRoute(location.hash));
});

/** Parameters that follow the reader from page to page (which experiment, which run). */
const CARRIED = ['db', 'exp', 'run'] as const;

const app = document.getElementById('app')!;
const nav = document.getElementById('nav')!;
let renderToken = 0;

function navigate(page: PageName, params: ParamPatch, replace: boolean, route: Route): void {
  const hash = formatRoute(page, params);
  if (replace) {
    history.replaceState(null, '', hash);
    // The page goes on with the defaults it just wrote; keep its route in step.
    route.params = parseRoute(hash).params;
    renderNav(route);
  } else if (hash !== location.hash) {
    // The hashchange event (and so render) comes a task later; until then the page on
    // screen is stale, so say so now rather than let a reader act on the old view.
    app.dataset.ready = 'false';
    location.hash = hash;
  }
}

function context(route: Route): PageContext {
  return {
    route,
    go: (page, params, opts) => navigate(page, params, opts?.replace === true, route),
    update: (patch, opts) => {
      const merged: Record<string, string | number | undefined | null> = { ...route.params };
      for (const [k, v] of Object.entries(patch)) merged[k] = v;
      navigate(route.page ?? 'experiments', merged, opts?.replace === true, route);
    },
  };
}

function renderNav(route: Route): void {
  const carried: Record<string, string> = {};
  for (const k of CARRIED) if (route.params[k] !== undefined) carried[k] = route.params[k]!;
  const link = (page: PageName, params: Record<string, string>) => h('a', { href: formatRoute(page, params), class: page === route.page ? 'active' : null, 'aria-current': page === route.page ? 'page' : null, 'data-nav': page }, TITLES[page]);
  const onGateway = route.page !== null && (GATEWAY_PAGES as readonly string[]).includes(route.page);
  nav.replaceChildren(
    h('span', { class: 'nav-group' }, h('span', { class: 'nav-label' }, 'Results'), ...RESULT_PAGES.map((page) => link(page, page === 'experiments' ? {} : carried))),
    ...(gatewayShown || onGateway ? [h('span', { class: 'nav-group', 'data-nav-group': 'gateway' }, h('span', { class: 'nav-label' }, 'Gateway'), ...GATEWAY_PAGES.map((page) => link(page, {})))] : []),
  );
}

async function render(): Promise<void> {
  const route = parseRoute(location.hash);
  const token = ++renderToken;
  app.dataset.ready = 'false';
  app.dataset.view = route.page ?? 'unknown';
  app.setAttribute('aria-busy', 'true');
  renderNav(route);
  let view: HTMLElement;
  try {
    view = route.page === null ? h('div', { class: 'page' }, h('h1', {}, 'No such page'), note(h('span', {}, 'Go back to the ', h('a', { href: '#/experiments' }, 'experiments'), '.'))) : await RENDERERS[route.page](context(route));
  } catch (err) {
    view = h('div', { class: 'page' }, h('h1', {}, 'Could not load this view'), note((err as Error).message, 'error'), h('p', {}, h('a', { href: '#/experiments' }, '← experiments')));
  }
  if (token !== renderToken) return; // a newer view started meanwhile
  app.replaceChildren(view);
  document.title = `${route.page ? TITLES[route.page] : 'Not found'} · Switchyard${route.page?.startsWith('gateway/') ? ' gateway' : ''}`;
  app.removeAttribute('aria-busy');
  app.dataset.ready = 'true';
}

window.addEventListener('hashchange', () => void render());
void render();
