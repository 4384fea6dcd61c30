// The dashboard in a real browser: Debian's Chromium driven by playwright-core (never a
// downloaded browser) against `switchyard dashboard` serving two hand-made results files.
// Every page must load without console errors; screenshots go to $SWITCHYARD_TEST_ARTIFACTS/dashboard/
// when that is set (e.g. for CI to keep), else to a temporary folder (never into the working tree).
import { mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { BrowserContext, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startDashboard } from '../../notebooks-web/dashboard-command.ts';
import type { DashboardServer } from '../../notebooks-web/server/dashboard-server.ts';
import { CHROMIUM, HAVE_CHROMIUM, launchChromium } from './chromium.ts';
import { LEGACY_EXP, SWEEP, SWEEP_EXP, writeLegacyFixture, writePlanFixture, writeSweepFixture } from './fixtures.ts';

const ARTIFACTS = join(process.env.SWITCHYARD_TEST_ARTIFACTS ?? mkdtempSync(join(tmpdir(), 'switchyard-artifacts-')), 'dashboard');

describe.skipIf(!HAVE_CHROMIUM)(`dashboard in Chromium${HAVE_CHROMIUM ? '' : ` (skipped: no browser at ${CHROMIUM}; .ci/run installs Debian's chromium)`}`, () => {
  let dir: string;
  let server: DashboardServer;
  let context: BrowserContext;
  let page: Page;
  const problems: string[] = [];

  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), 'switchyard-dash-ui-'));
    await writeSweepFixture(join(dir, 'results', 'sweep.duckdb'));
    await writeLegacyFixture(join(dir, 'results', 'legacy.duckdb'));
    await writePlanFixture(join(dir, 'results', 'plan.duckdb'), 'plan-1');
    server = await startDashboard({ paths: [join(dir, 'results')], port: 0, host: '127.0.0.1' });
    mkdirSync(ARTIFACTS, { recursive: true });
    context = await launchChromium(join(dir, 'profile'), { acceptDownloads: true });
    page = context.pages()[0] ?? (await context.newPage());
    page.on('console', (m) => {
      if (m.type() === 'error') problems.push(`console: ${m.text()}`);
    });
    page.on('pageerror', (e) => problems.push(`page error: ${e.message}`));
    page.on('response', (r) => {
      if (r.status() >= 400) problems.push(`HTTP ${r.status()} ${r.url()}`);
    });
  });

  afterAll(async () => {
    await context?.close();
    await server?.close();
    if (dir) rmSync(dir, { recursive: true, force: true });
  });

  /** Opens a view and waits until the app says it is rendered. */
  async function open(hash: string, view: string): Promise<void> {
    await page.goto(`${server.url}${hash}`);
    await ready(view);
  }

  async function ready(view: string): Promise<void> {
    await page.waitForSelector(`#app[data-ready="true"][data-view="${view}"]`, { timeout: 20_000 });
  }

  async function shot(name: string): Promise<void> {
    await page.screenshot({ path: join(ARTIFACTS, `${name}.png`), fullPage: true });
  }

  function expectNoProblems(): void {
    expect(problems).toEqual([]);
  }

  it('experiments list: every file, provenance columns, sortable', async () => {
    await open('#/experiments', 'experiments');
    const rows = page.locator('[data-table="experiments"] tbody tr');
    await expect.poll(() => rows.count()).toBe(3);
    const header = await page.locator('[data-table="experiments"] thead').innerText();
    for (const col of ['name', 'trace', 'date', 'runs', 'seed', 'git revision']) expect(header).toContain(col);
    // Default: newest first (the sweep fixture is from 2026, the legacy one from 2025).
    expect(await rows.first().innerText()).toContain('offload-sweep');
    await page.locator('[data-table="experiments"] th[data-key="runs"] button').click();
    await ready('experiments');
    expect(page.url()).toContain('sort=runs%3Adesc');
    await page.locator('[data-table="experiments"] th[data-key="runs"] button').click();
    await ready('experiments');
    expect(page.url()).toContain('sort=runs%3Aasc');
    // The plan fixture has no runs rows (only its plan tables), so it sorts first.
    expect(await rows.first().innerText()).toContain('plan');
    await shot('experiments');
    expectNoProblems();
  });

  it('comparison: one CDF line per run, percentile bars with the stored intervals, CSV/SVG/PNG export', async () => {
    await open(`#/compare?db=sweep&exp=${SWEEP_EXP}`, 'compare');
    // The first pair group of the sweep: 2 labels × 2 seeds = 4 runs.
    const runsInGroup = SWEEP.labels.length * SWEEP.seeds.length;
    for (const m of ['ttft', 'tpot', 'e2e']) {
      expect(await page.locator(`[data-chart="cdf-${m}"] path.cdf-line`).count()).toBe(runsInGroup);
    }
    // p2c against fixed: intervals stored for p50 and p99 of TTFT and E2E.
    expect(await page.locator('[data-chart="pct-ttft"] .whisker').count()).toBe(2);
    expect(await page.locator('[data-chart="pct-ttft"] rect.bar').count()).toBe(SWEEP.labels.length * 3);
    expect(await page.locator('[data-table="comparisons"] tbody tr').count()).toBeGreaterThan(0);
    expect(await page.locator('[data-chart="scatter"] .dot.on-front').count()).toBeGreaterThan(0);
    await shot('compare-sweep');

    const csv = page.waitForEvent('download');
    await page.locator('[data-table="run-metrics"] button[data-export="csv"]').click();
    expect((await csv).suggestedFilename()).toMatch(/\.csv$/);
    const svg = page.waitForEvent('download');
    await page.locator('[data-chart="cdf-ttft"] button[data-export="svg"]').click();
    expect((await svg).suggestedFilename()).toBe('ttft-cdf.svg');
    const png = page.waitForEvent('download');
    await page.locator('[data-chart="cdf-ttft"] button[data-export="png"]').click();
    expect((await png).suggestedFilename()).toBe('ttft-cdf.png');

    // A stricter SLO lowers goodput and lands in the URL.
    const before = await page.locator('[data-chart="goodput"] rect.bar').first().getAttribute('height');
    await page.locator('input[name="slo_ttft_ms"]').fill('500');
    await page.locator('input[name="slo_ttft_ms"]').press('Enter');
    await page.waitForURL(/slo_ttft_ms=500/);
    await ready('compare');
    const after = await page.locator('[data-chart="goodput"] rect.bar').first().getAttribute('height');
    expect(Number(after)).toBeLessThan(Number(before));
    expectNoProblems();
  });

  it('comparison of an older results file: one line per run, no intervals, a note instead', async () => {
    await open(`#/compare?db=legacy&exp=${LEGACY_EXP}`, 'compare');
    expect(await page.locator('[data-chart="cdf-e2e"] path.cdf-line').count()).toBe(2);
    expect(await page.locator('.whisker').count()).toBe(0);
    expect(await page.locator('[data-chart="pct-ttft"] .caption').innerText()).toMatch(/no intervals/);
    await shot('compare-legacy');
    expectNoProblems();
  });

  it('timeline: brushing the overview narrows the x-domain of the detail charts', async () => {
    await open(`#/timeline?db=sweep&exp=${SWEEP_EXP}&run=p2c-wait1-q8-seed1`, 'timeline');
    for (const c of ['queue', 'running', 'kv', 'backlog', 'rate', 'breakers']) expect(await page.locator(`[data-chart="${c}"] svg`).count()).toBe(1);
    expect(await page.locator('[data-chart="breakers"] rect.state-band[data-state="open"]').count()).toBe(1);
    expect(await page.locator('[data-chart="breakers"] rect.fault-overlay').count()).toBe(1);
    const domainOf = async () => (await page.locator('[data-chart="queue"] svg').getAttribute('data-x-domain'))!.split(',').map(Number) as [number, number];
    const [a0, z0] = await domainOf();
    await shot('timeline-whole-run');

    const box = (await page.locator('[data-chart="overview"] .brush .overlay').boundingBox())!;
    await page.mouse.move(box.x + box.width * 0.3, box.y + box.height / 2);
    await page.mouse.down();
    await page.mouse.move(box.x + box.width * 0.45, box.y + box.height / 2, { steps: 5 });
    await page.mouse.move(box.x + box.width * 0.6, box.y + box.height / 2, { steps: 5 });
    await page.mouse.up();
    await page.waitForURL(/from=\d+.*to=\d+/);
    await ready('timeline');
    const [a1, z1] = await domainOf();
    expect(a1).toBeGreaterThan(a0);
    expect(z1).toBeLessThan(z0);
    expect(z1 - a1).toBeLessThan((z0 - a0) * 0.5);
    // Every detail chart follows the brush.
    expect(await page.locator('[data-chart="breakers"] svg').getAttribute('data-x-domain')).toBe(`${a1},${z1}`);
    await shot('timeline-zoomed');
    expectNoProblems();
  });

  it('sweep: heatmap over two swept parameters; clicking a cell opens its run', async () => {
    await open(`#/sweep?db=sweep&exp=${SWEEP_EXP}`, 'sweep');
    const cells = page.locator('rect.heat-cell');
    expect(await cells.count()).toBe(SWEEP.waitS.length * SWEEP.queueLimit.length);
    expect(await page.locator('select[name="x"]').inputValue()).toBe('wait_s');
    expect(await page.locator('select[name="y"]').inputValue()).toBe('queue_limit');
    await shot('sweep');
    const target = page.locator('rect.heat-cell[data-x="2"][data-y="8"]');
    const run = (await target.getAttribute('data-run'))!;
    expect(run).toMatch(/^fixed-wait2-q8-seed\d$/);
    await target.click();
    await ready('timeline');
    expect(page.url()).toContain(`run=${encodeURIComponent(run)}`);
    expect(await page.locator('.page-head h1').innerText()).toContain(run);
    expectNoProblems();
  });

  it('plans: attainment against rate per configuration, the answers by cost and in a table; a non-plan says so', async () => {
    await open('#/plans?db=plan&exp=plan-1', 'plans');
    expect(await page.locator('[data-chart="plan-attainment"] path.cdf-line').count()).toBe(1);
    expect(await page.locator('[data-chart="plan-front"] svg').count()).toBe(1);
    const rows = page.locator('[data-table="plan-answers"] tbody tr');
    expect(await rows.count()).toBe(1);
    expect(await rows.first().innerText()).toContain('0.7 rate_scale');
    await shot('plans');
    await open(`#/plans?db=sweep&exp=${SWEEP_EXP}`, 'plans');
    expect(await page.locator('.page').innerText()).toContain('not a capacity plan');
    expectNoProblems();
  });

  it('requests: filter by status, then see the attempts of one request', async () => {
    await open(`#/requests?db=sweep&exp=${SWEEP_EXP}&run=fixed-wait1-q4-seed1`, 'requests');
    expect(await page.locator('[data-table="requests"] tbody tr').count()).toBe(SWEEP.requestsPerRun);
    await page.locator('select[name="status"]').selectOption('upstream_error');
    await page.waitForURL(/status=upstream_error/);
    await ready('requests');
    expect(await page.locator('[data-table="requests"] tbody tr').count()).toBe(3);
    // Clear the filter, sort by E2E (server-side; numbers sort descending first), then open a
    // request that fell back.
    await page.locator('select[name="status"]').selectOption('');
    await page.waitForURL((u) => !u.hash.includes('status='));
    await ready('requests');
    await page.locator('[data-table="requests"] th[data-key="e2e_ms"] button').click();
    await page.waitForURL(/sort=e2e_ms.*order=desc|order=desc.*sort=e2e_ms/);
    await ready('requests');
    const e2e = await page.locator('[data-table="requests"] tbody tr td:nth-child(8)').allInnerTexts();
    const secs = e2e.filter((t) => t !== '–').map((t) => (t.endsWith(' s') ? parseFloat(t) * 1000 : parseFloat(t)));
    expect(secs.length).toBeGreaterThan(10);
    expect(secs).toEqual([...secs].sort((x, y) => y - x));
    await page.locator('[data-table="requests"] tbody tr[data-key="3"]').click();
    await page.waitForURL(/req=3/);
    await ready('requests');
    expect(await page.locator('[data-chart="attempts"] rect.attempt-bar').count()).toBe(2);
    expect(await page.locator('[data-table="attempts"] tbody tr').count()).toBe(2);
    await shot('requests');
    expectNoProblems();
  });
});
