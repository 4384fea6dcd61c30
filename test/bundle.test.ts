// The gateway's bundle (bin/bundle.mjs): built once per source state and reused, its paths next
// to the sources resolve as under tsx, and a gateway started by the CLI runs from it without
// loading tsx (so its resident memory is well below the same gateway under tsx).
import { spawn } from 'node:child_process';
import { existsSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
// @ts-expect-error plain JS module without declarations
import { bundleGateway } from '../bin/bundle.mjs';

const repoRoot = join(import.meta.dirname, '..');

describe('gateway bundle', () => {
  it('an unchanged tree reuses one build, repairs a damaged one; import.meta paths point at the sources', async () => {
    const a = (await bundleGateway()) as { gateway: string; worker: string };
    const b = (await bundleGateway()) as { gateway: string; worker: string };
    expect(b).toEqual(a);
    const dir = dirname(a.gateway);
    const code = readdirSync(dir)
      .map((f) => readFileSync(join(dir, f), 'utf8'))
      .join('\n');
    expect(code).not.toContain('import.meta');
    // The request log's writer is started from a URL next to request-log.ts, which must exist.
    const m = /new URL\("\.\/log-worker\.mjs", "(file:[^"]+)"\)/.exec(code);
    expect(m).not.toBeNull();
    expect(existsSync(fileURLToPath(new URL('./log-worker.mjs', m![1])))).toBe(true);
    // Only the gateway is built: no simulator command, no dashboard.
    expect(code).not.toContain('replay a trace through the routing strategies');
    // A file lost from the cache is written again by the next start.
    rmSync(a.worker);
    expect((await bundleGateway()) as unknown).toEqual(a);
    expect(existsSync(a.worker)).toBe(true);
  }, 60_000);

  it('`switchyard gateway` runs from the bundle, resident memory well below the same gateway under tsx', async () => {
    const bundled = await idleRssKb({}, []);
    const tsx = await idleRssKb({ SWITCHYARD_BUNDLE: '0' }, []);
    // Measured 134 vs 172 MB idle with the request log on (84 vs 126 without): tsx's loader
    // thread and transpiler stay for the life of the process.
    expect(bundled).toBeLessThan(tsx - 15_000);
  }, 90_000);

  it('--workers 2 starts from the bundle too: its worker threads run the bundled worker, not tsx', async () => {
    const port = () => ['--workers', '2', '--port', String(19_200 + Math.floor(Math.random() * 500))];
    const bundled = await idleRssKb({}, port());
    const tsx = await idleRssKb({ SWITCHYARD_BUNDLE: '0' }, port());
    // Measured 161 vs 240 MB: under tsx each worker thread registers its own loader.
    expect(bundled).toBeLessThan(tsx - 40_000);
  }, 90_000);
});

/** Starts the example gateway, waits until it listens, and returns its VmRSS (kB). */
async function idleRssKb(env: Record<string, string>, extra: string[]): Promise<number> {
  const child = spawn(process.execPath, [join(repoRoot, 'bin', 'switchyard.mjs'), 'gateway', '--config', join(repoRoot, 'gateway', 'example', 'models.yaml'), '--port', '0', '--admin-port', 'off', ...extra], {
    cwd: repoRoot,
    env: { ...process.env, ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let out = '';
  child.stdout.on('data', (d: Buffer) => (out += d.toString()));
  child.stderr.on('data', (d: Buffer) => (out += d.toString()));
  try {
    await new Promise<void>((resolve, reject) => {
      const t = setTimeout(() => reject(new Error(`gateway did not start:\n${out}`)), 30_000);
      const check = () => {
        if (/switchyard gateway on http/.test(out)) {
          clearTimeout(t);
          resolve();
        } else if (child.exitCode !== null) {
          clearTimeout(t);
          reject(new Error(`gateway exited ${child.exitCode}:\n${out}`));
        } else setTimeout(check, 50);
      };
      check();
    });
    await new Promise((r) => setTimeout(r, 500));
    expect(out).not.toMatch(/could not run the gateway bundle/);
    return Number(/VmRSS:\s+(\d+)/.exec(readFileSync(`/proc/${child.pid}/status`, 'utf8'))![1]);
  } finally {
    if (child.exitCode === null) {
      child.kill('SIGTERM');
      await new Promise((r) => child.once('exit', r));
    }
  }
}
