// The operator's console in a real browser (Debian's Chromium via playwright-core) against a
// real gateway with engine emulators on 127.0.0.1, through `switchyard dashboard --gateway`:
// a wrong admin key shows the refusal and no data; draining a route from the console (keyboard
// only, through the confirmation dialog) moves live traffic off it, as the health view and the
// request log then show; an offload policy set in the console is what the admin API lists; an
// upstream is verified and a strategy switched; the audit trail lists the changes; every page renders and its screenshot is not blank.
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { BrowserContext, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { CHROMIUM, HAVE_CHROMIUM, launchChromium } from './chromium.ts';
import { CONSOLE_KEYS, distinctColours, enterKey, openConsolePage, screenshotConsole, startConsoleStack, type ConsoleStack } from './console-stack.ts';

describe.skipIf(!HAVE_CHROMIUM)(`gateway console in Chromium${HAVE_CHROMIUM ? '' : ` (skipped: no browser at ${CHROMIUM})`}`, () => {
  let stack: ConsoleStack;
  let dir: string;
  let context: BrowserContext;
  let page: Page;
  const problems: string[] = [];

  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), 'switchyard-console-ui-'));
    stack = await startConsoleStack();
    context = await launchChromium(join(dir, 'profile'));
    page = context.pages()[0] ?? (await context.newPage());
    page.on('pageerror', (e) => problems.push(`page error: ${e.message}`));
    page.on('console', (m) => {
      // The wrong key's 401 and the refused policy's 400 are expected; anything else is a problem.
      if (m.type() === 'error' && !/status of (401|400)/.test(m.text())) problems.push(`console: ${m.text()}`);
    });
  }, 120_000);

  afterAll(async () => {
    await context?.close();
    await stack?.close();
    if (dir) rmSync(dir, { recursive: true, force: true });
  });

  it('a wrong admin key shows the refusal and no data; the right one shows the models', async () => {
    await page.goto(`${stack.dashboard.url}#/gateway/routes`);
    await page.waitForSelector('[data-console="routes"][data-state="need-key"]');
    expect(await page.locator('nav [data-nav-group="gateway"] a').count()).toBe(6);
    await enterKey(page, 'sk-not-the-key');
    await page.waitForSelector('[data-console="routes"][data-state="refused"]');
    expect(await page.locator('[data-console="routes"] [role="alert"]').innerText()).toMatch(/refused the admin key.*401/);
    expect(await page.locator('[data-model]').count()).toBe(0);
    // A refused key is forgotten; a good one lives in this tab's session storage only.
    expect(await page.evaluate(() => sessionStorage.length)).toBe(0);
    await enterKey(page, CONSOLE_KEYS.admin);
    await page.waitForSelector('[data-console="routes"][data-state="loaded"]');
    expect(await page.evaluate(() => [sessionStorage.length, localStorage.length, document.cookie])).toEqual([1, 0, '']);
    expect(await page.locator('[data-model]').count()).toBe(2);
    expect(await page.locator('[data-model="demo"] tbody tr').count()).toBe(2);
    expect(await page.locator('[data-model="demo"] tbody').innerText()).toMatch(/yaml/);
    expect(problems).toEqual([]);
  });

  it('draining a route from the console moves live traffic off it: health view and request log agree', async () => {
    const [drained, kept] = stack.ids.demo;
    const before = await stack.traffic('demo', 12);
    expect(before).toContain(drained);
    await openConsolePage(page, stack.dashboard.url, '#/gateway/health', 'health');
    const measured = async (id: string) => Number(await page.locator(`[data-served="${id}"]`).getAttribute('data-count'));
    const [drainedBefore, keptBefore] = [await measured(drained), await measured(kept)];
    expect(drainedBefore).toBeGreaterThan(0);

    await openConsolePage(page, stack.dashboard.url, '#/gateway/routes', 'routes');
    // Escape cancels and sends nothing.
    await page.locator(`[data-drain="${drained}"]`).focus();
    await page.keyboard.press('Enter');
    await page.waitForSelector('dialog[data-dialog="drain"][open]');
    await page.keyboard.press('Escape');
    await page.waitForSelector('dialog[data-dialog="drain"]', { state: 'detached' });
    expect(await page.locator('[data-result]').innerText()).toMatch(/Cancelled.*Nothing was sent/);
    expect(await page.evaluate(() => document.activeElement?.getAttribute('data-drain'))).toBe(drained);
    expect(await page.locator(`[data-effective="${drained}"]`).innerText()).toBe('1');
    // Keyboard only: Enter opens the dialog with the focus on Cancel; Shift+Tab, Enter confirms.
    await page.locator(`[data-drain="${drained}"]`).focus();
    await page.keyboard.press('Enter');
    await page.waitForSelector('dialog[data-dialog="drain"][open]');
    expect(await page.evaluate(() => document.activeElement?.textContent)).toBe('Cancel');
    await page.keyboard.press('Shift+Tab');
    expect(await page.evaluate(() => document.activeElement?.getAttribute('data-confirm'))).toBe('drain');
    await page.keyboard.press('Enter');
    await page.waitForSelector('[data-result] [data-answer-status="200"]');
    await expect.poll(() => page.locator(`[data-effective="${drained}"]`).innerText()).toBe('0');
    expect(await page.locator(`[data-model="demo"] tbody`).innerText()).toMatch(/weight_override/);

    const after = await stack.traffic('demo', 12);
    expect(new Set(after)).toEqual(new Set([kept]));

    await openConsolePage(page, stack.dashboard.url, '#/gateway/health', 'health');
    expect(await page.locator(`[data-excluded="${drained}"]`).innerText()).toBe('excluded from demo (weight_override)');
    expect(await page.locator(`[data-excluded="${kept}"]`).innerText()).toBe('in rotation');
    expect(await page.locator(`[data-breaker="${kept}"]`).innerText()).toContain('closed');
    // The traffic after the drain all went to the kept route.
    expect([(await measured(drained)) - drainedBefore, (await measured(kept)) - keptBefore]).toEqual([0, 12]);
    // Live: the page polls the gateway's sampled history, and the sparklines draw it.
    await page.waitForFunction(() => Number(document.querySelector('[data-live]')?.getAttribute('data-samples') ?? 0) >= 2, undefined, { timeout: 20_000 });
    expect(Number(await page.locator('svg.sparkline').first().getAttribute('data-samples'))).toBeGreaterThanOrEqual(2);

    await openConsolePage(page, stack.dashboard.url, '#/gateway/requests?model=demo&limit=12', 'requests');
    const servedBy = await page.locator('[data-table="recent-requests"] [data-served-by]').evaluateAll((els) => els.map((e) => e.getAttribute('data-served-by')));
    expect(servedBy).toEqual(Array(12).fill(kept));
    await page.locator('[data-request]').first().click();
    await page.waitForSelector('[data-request-detail]');
    expect(await page.locator('[data-table="request-attempts"] tbody tr').count()).toBe(1);
    expect(await page.locator('svg.attempts-timeline rect.attempt-bar').getAttribute('data-endpoint')).toBe(kept);

    // Clearing the override puts the route back.
    await openConsolePage(page, stack.dashboard.url, '#/gateway/routes', 'routes');
    await page.locator(`[data-clear="${drained}"]`).click();
    await page.locator('[data-confirm="clear-weight"]').click();
    await page.waitForSelector('[data-result] [data-answer-status="200"]');
    expect((await stack.admin('GET', '/admin/routing')).body.models.find((m: { id: string }) => m.id === 'demo').routes.map((r: { effective_weight: number }) => r.effective_weight)).toEqual([1, 1]);
    expect(problems).toEqual([]);
  });

  it('an offload policy set in the console is what the admin API lists; verify and strategy switch; the audit trail lists the changes', async () => {
    const [, route] = stack.ids.demo;
    await openConsolePage(page, stack.dashboard.url, '#/gateway/offload', 'offload');
    const form = page.locator('[data-offload-form]');
    await form.locator('select[name="offload-model"]').selectOption('demo');
    await form.locator('select[name="offload-route"]').selectOption(route);
    await form.locator('input[name="wait-sec"]').fill('1.5');
    await form.locator('[data-set-offload]').click();
    await page.locator('[data-confirm="set-offload"]').click();
    await page.waitForSelector('[data-result] [data-answer-status="200"]');
    await expect.poll(() => page.locator('[data-policy-state="demo"]').innerText()).toBe('active');
    const api = await stack.admin('GET', '/admin/routing/offload-routes/demo');
    expect(api.body.policy).toMatchObject({ model_id: 'demo', route_id: route, wait_sec: 1.5, source: 'override', active: true, updated_by: 'operator' });
    // A refusal is shown as the server's answer.
    await form.locator('input[name="wait-sec"]').fill('0');
    await form.locator('[data-set-offload]').click();
    await page.locator('[data-confirm="set-offload"]').click();
    await page.waitForSelector('[data-result] [data-answer-status="400"]');
    expect(await page.locator('[data-result] [role="alert"]').innerText()).toMatch(/wait_sec/);

    // Verify an upstream before saving, then switch a strategy and back.
    await openConsolePage(page, stack.dashboard.url, '#/gateway/routes', 'routes');
    await page.getByRole('button', { name: `Verify the upstream of ${route}` }).click();
    await page.locator('[data-confirm="verify-route"]').click();
    await page.waitForSelector('[data-result] [data-answer-status="200"][data-verified="true"]');
    const strategy = page.locator('[data-model="demo"] select[name="strategy"]');
    await strategy.selectOption('round_robin');
    await page.getByRole('button', { name: 'Change the strategy of demo' }).click();
    await page.locator('[data-confirm="strategy"]').click();
    // The earlier answer (the verify) may still be shown: wait for the change itself.
    await expect.poll(() => stack.gw.core.model('demo')!.strategy, { timeout: 10_000 }).toBe('round_robin');
    await expect.poll(() => page.locator('[data-model="demo"] h2').innerText()).toContain('strategy round_robin (from override)');
    await page.locator('[data-model="demo"] select[name="strategy"]').selectOption('fixed');
    await page.getByRole('button', { name: 'Change the strategy of demo' }).click();
    await page.locator('[data-confirm="strategy"]').click();
    await expect.poll(() => stack.gw.core.model('demo')!.strategy, { timeout: 10_000 }).toBe('fixed');

    await openConsolePage(page, stack.dashboard.url, '#/gateway/audit', 'audit');
    const calls = await page.locator('[data-audit-call]').allInnerTexts();
    expect(calls).toContain(`PUT /admin/routing/offload-routes/demo`);
    expect(calls.some((c) => c.startsWith('PUT /admin/routing/weights/demo/'))).toBe(true);
    expect(calls.some((c) => c.startsWith('DELETE /admin/routing/weights/demo/'))).toBe(true);
    expect(calls).toContain('PATCH /admin/routing/provider-route-strategies/demo');
    expect(problems).toEqual([]);
  });

  it('RouteWise shows the learnt profiles; every page renders and its screenshot is not blank', async () => {
    await stack.traffic('rw', 6);
    await openConsolePage(page, stack.dashboard.url, '#/gateway/routewise', 'routewise');
    const profiles = await page.locator('[data-table="profiles-rw"] tbody').innerText();
    expect(profiles).toMatch(/ms ago|s ago/);
    expect(await page.locator('[data-table="settings-rw"] tbody tr').count()).toBeGreaterThan(3);
    const files = await screenshotConsole(page, stack.dashboard.url, join(dir, 'shots'));
    expect(files).toHaveLength(6);
    for (const f of files) expect(await distinctColours(page, readFileSync(f)), f).toBeGreaterThan(20);
    expect(problems).toEqual([]);
  });
});
