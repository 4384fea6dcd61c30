// A running gateway for the operator's console: two engine emulators on 127.0.0.1 behind a
// gateway with an admin listener and a request log (model `demo` on the fixed router over both,
// model `rw` on RouteWise over both), and `switchyard dashboard --gateway <admin URL>` in front
// of it. Used by console-browser.test.ts and by `npm run screenshots` (console-screenshots.ts),
// so the screenshots in docs/ show exactly what the test checks.
import { mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pino from 'pino';
import type { Page } from 'playwright-core';
import { endpointId } from '../../core/index.ts';
import { hashKey } from '../../gateway/callers.ts';
import { buildGatewayConfig } from '../../gateway/config/load.ts';
import { startGateway, type RunningGateway } from '../../gateway/gateway.ts';
import { startDashboard } from '../../notebooks-web/dashboard-command.ts';
import type { DashboardServer } from '../../notebooks-web/server/dashboard-server.ts';
import { startEmulator, type RunningEmulator } from '../../simulator/emulator/emulator.ts';
import { servedEndpoint } from '../gateway/harness.ts';

/** Caller keys of the stack. */
export const CONSOLE_KEYS = { user: 'sk-console-user', admin: 'sk-console-admin' } as const;

/** The running stack. */
export interface ConsoleStack {
  gw: RunningGateway;
  emus: RunningEmulator[];
  dashboard: DashboardServer;
  /** Endpoint ids of `demo`'s two routes and `rw`'s two routes. */
  ids: { demo: [string, string]; rw: [string, string] };
  /** Sends `n` chat requests for `model` one after another; the endpoint that served each. */
  traffic(model: string, n: number): Promise<string[]>;
  /** An admin call straight to the gateway's admin listener. */
  admin(method: string, path: string, body?: unknown): Promise<{ status: number; body: any }>;
  close(): Promise<void>;
}

/** Starts emulators, the gateway and the dashboard (API + built app) on free loopback ports. */
export async function startConsoleStack(): Promise<ConsoleStack> {
  const dir = mkdtempSync(join(tmpdir(), 'switchyard-console-'));
  const emus = await Promise.all([0, 1].map(() => startEmulator({ faults: { latency_scale: 0.02 } })));
  const [e0, e1] = emus.map((e) => e.baseUrl) as [string, string];
  const price = { input_usd_per_1m: 0.3, output_usd_per_1m: 1.2 };
  const config = buildGatewayConfig({
    models: {
      models: [
        { id: 'demo', route: [{ base_url: e0 }, { base_url: e1 }] },
        { id: 'rw', router: 'routewise', route: [{ base_url: e0, pricing: price }, { base_url: e1, pricing: price }] },
      ],
    },
    gateway: {
      routing_settings: { affinity_enabled: false, prefill_aware_enabled: false },
      request_log: { path: join(dir, 'requests.duckdb') },
      auth: {
        mode: 'keys',
        keys: [
          { id: 'app', sha256: hashKey(CONSOLE_KEYS.user), allowed_models: ['demo', 'rw'] },
          { id: 'operator', sha256: hashKey(CONSOLE_KEYS.admin), admin: true },
        ],
      },
    },
  });
  const gw = await startGateway({ config, host: '127.0.0.1', port: 0, adminPort: 0, seed: 11, logger: pino({ level: 'silent' }) });
  mkdirSync(join(dir, 'results'));
  const dashboard = await startDashboard({ paths: [join(dir, 'results')], port: 0, host: '127.0.0.1', gateway: gw.adminUrl! });
  return {
    gw,
    emus,
    dashboard,
    ids: { demo: [endpointId('demo', 'openai_compat', e0), endpointId('demo', 'openai_compat', e1)], rw: [endpointId('rw', 'openai_compat', e0), endpointId('rw', 'openai_compat', e1)] },
    async traffic(model, n) {
      const served: string[] = [];
      for (let i = 0; i < n; i++) {
        const r = await fetch(`${gw.url}/v1/chat/completions`, {
          method: 'POST',
          headers: { authorization: `Bearer ${CONSOLE_KEYS.user}`, 'content-type': 'application/json', 'x-session-id': `s-${i % 3}` },
          body: JSON.stringify({ model, messages: [{ role: 'user', content: `Hello number ${i}` }], max_tokens: 4 }),
        });
        await r.text();
        if (r.status !== 200) throw new Error(`chat for ${model} answered ${r.status}`);
        served.push((await servedEndpoint(gw, r)) ?? '?');
      }
      return served;
    },
    async admin(method, path, body) {
      const r = await fetch(`${gw.adminUrl}${path}`, { method, headers: { authorization: `Bearer ${CONSOLE_KEYS.admin}`, 'content-type': 'application/json' }, ...(body !== undefined && { body: JSON.stringify(body) }) });
      return { status: r.status, body: await r.json() };
    },
    async close() {
      await dashboard.close();
      await gw.close();
      await Promise.all(emus.map((e) => e.close()));
      rmSync(dir, { recursive: true, force: true });
    },
  };
}

/** The console's pages, as `[file name, hash, data-console]`. */
export const CONSOLE_PAGES = [
  ['routes', '#/gateway/routes', 'routes'],
  ['health', '#/gateway/health', 'health'],
  ['offload', '#/gateway/offload', 'offload'],
  ['requests', '#/gateway/requests?model=demo', 'requests'],
  ['routewise', '#/gateway/routewise', 'routewise'],
  ['audit', '#/gateway/audit?limit=30', 'audit'],
] as const;

/** Opens a console page and waits until the app has rendered it with data. */
export async function openConsolePage(page: Page, base: string, hash: string, name: string): Promise<void> {
  await page.goto(`${base}${hash}`);
  await page.waitForSelector(`#app[data-ready="true"] [data-console="${name}"][data-state="loaded"]`, { timeout: 20_000 });
}

/** Enters the admin key in the page's key form. */
export async function enterKey(page: Page, key: string): Promise<void> {
  await page.locator('#admin-key').fill(key);
  await page.locator('[data-key-form] button[type="submit"]').click();
}

/**
 * Takes a full-page screenshot of every console page into `outDir` (`<name>.png`); the admin
 * key must already be in the tab. The health page is taken once it has `healthSamples` polls
 * (default 2). Returns the files written.
 */
export async function screenshotConsole(page: Page, base: string, outDir: string, opts: { selectRequest?: boolean; healthSamples?: number } = {}): Promise<string[]> {
  mkdirSync(outDir, { recursive: true });
  const files: string[] = [];
  for (const [file, hash, name] of CONSOLE_PAGES) {
    await openConsolePage(page, base, hash, name);
    if (name === 'health') await page.waitForFunction((n) => Number(document.querySelector('[data-live]')?.getAttribute('data-samples') ?? 0) >= n, opts.healthSamples ?? 2, { timeout: 60_000 });
    if (name === 'requests' && opts.selectRequest !== false) {
      await page.locator('[data-request]').first().click();
      await page.waitForSelector('[data-request-detail]', { timeout: 20_000 });
    }
    const path = join(outDir, `${file}.png`);
    await page.screenshot({ path, fullPage: true });
    files.push(path);
  }
  return files;
}

/**
 * Whether a PNG shows something: decoded in the page and drawn on a canvas, it has more than a
 * handful of distinct colours (a blank or single-colour image has one or two).
 */
export async function distinctColours(page: Page, png: Buffer): Promise<number> {
  return page.evaluate(async (b64) => {
    const img = new Image();
    img.src = `data:image/png;base64,${b64}`;
    await img.decode();
    const c = document.createElement('canvas');
    c.width = img.naturalWidth;
    c.height = img.naturalHeight;
    const g = c.getContext('2d')!;
    g.drawImage(img, 0, 0);
    const data = g.getImageData(0, 0, c.width, c.height).data;
    const seen = new Set<number>();
    for (let i = 0; i < data.length && seen.size < 1000; i += 4 * 7) seen.add((data[i]! << 16) | (data[i + 1]! << 8) | data[i + 2]!);
    return seen.size;
  }, png.toString('base64'));
}
