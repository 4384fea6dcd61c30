// `npm run screenshots`: writes a screenshot of every page of the operator's console into
// docs/console/<page>.png (shown in README), from the same stack the browser test drives
// (console-stack.ts): two emulators behind a gateway, some traffic, a drained route and an
// offload policy set through the admin API, so each page has something to show.
// Needs Debian's chromium (SWITCHYARD_CHROMIUM overrides its path).
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, relative } from 'node:path';
import { CHROMIUM, HAVE_CHROMIUM, launchChromium } from './chromium.ts';
import { CONSOLE_KEYS, enterKey, screenshotConsole, startConsoleStack } from './console-stack.ts';

const OUT = join(import.meta.dirname, '..', '..', 'docs', 'console');

async function main(): Promise<number> {
  if (!HAVE_CHROMIUM) {
    process.stderr.write(`screenshots: no browser at ${CHROMIUM}; install Debian's chromium or set SWITCHYARD_CHROMIUM\n`);
    return 1;
  }
  const stack = await startConsoleStack();
  const profile = mkdtempSync(join(tmpdir(), 'switchyard-shots-'));
  const context = await launchChromium(profile);
  try {
    await stack.traffic('demo', 8);
    await stack.traffic('rw', 6);
    const [drained, kept] = stack.ids.demo;
    await stack.admin('PUT', `/admin/routing/weights/demo/${encodeURIComponent(drained)}`, { weight: 0 });
    await stack.admin('PUT', '/admin/routing/offload-routes/demo', { route_id: kept, wait_sec: 2 });
    await stack.traffic('demo', 6);
    const page = context.pages()[0] ?? (await context.newPage());
    await page.goto(`${stack.dashboard.url}#/gateway/routes`);
    await page.waitForSelector('[data-key-form]');
    await enterKey(page, CONSOLE_KEYS.admin);
    // Steady traffic while the pages are taken, so the health sparklines have something to draw.
    let running = true;
    const background = (async () => {
      while (running) await stack.traffic(Math.random() < 0.7 ? 'demo' : 'rw', 1);
    })();
    const files = await screenshotConsole(page, stack.dashboard.url, OUT, { healthSamples: 8 });
    running = false;
    await background;
    for (const f of files) process.stdout.write(`wrote ${relative(process.cwd(), f)}\n`);
    return 0;
  } finally {
    await context.close();
    await stack.close();
    rmSync(profile, { recursive: true, force: true });
  }
}

process.exitCode = await main();
