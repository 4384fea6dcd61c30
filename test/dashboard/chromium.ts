// Debian's Chromium for the dashboard's browser tests and screenshots, driven by playwright-core
// (never a downloaded browser): headless, no sandbox (containers), no GPU, no background traffic.
import { existsSync } from 'node:fs';
import { chromium, type BrowserContext } from 'playwright-core';

/** The browser binary (`SWITCHYARD_CHROMIUM` overrides). */
export const CHROMIUM = process.env.SWITCHYARD_CHROMIUM ?? '/usr/bin/chromium';
/** Whether it is installed (tests skip without it). */
export const HAVE_CHROMIUM = existsSync(CHROMIUM);
/** Command-line flags of every launch. */
export const FLAGS = ['--headless', '--no-sandbox', '--disable-gpu', '--disable-background-networking', '--disable-component-update', '--disable-sync', '--no-first-run'];

/** Launches Chromium with a fresh profile in `profileDir` and a 1400×1000 viewport. */
export function launchChromium(profileDir: string, opts: { acceptDownloads?: boolean } = {}): Promise<BrowserContext> {
  return chromium.launchPersistentContext(profileDir, {
    executablePath: CHROMIUM,
    headless: true,
    args: FLAGS,
    acceptDownloads: opts.acceptDownloads ?? false,
    viewport: { width: 1400, height: 1000 },
  });
}
