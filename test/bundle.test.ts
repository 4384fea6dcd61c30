// The gateway's bundle (bin/bundle.mjs): built once per source state and reused, its paths next
// to the sources resolve as under tsx, and a gateway started by the CLI runs from it without
// loading tsx (so its resident memory is well below the same gateway under tsx).
import { spawn } from 'node:child_process';
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
// @ts-expect-error plain JS module without declarations
import { bundleCli } from '../bin/bundle.mjs';

const repoRoot = join(import.meta.dirname, '..');

describe('gateway bundle', () => {
  it('an unchanged tree reuses one build; import.meta paths point at the sources', async () => {
    const a = (await bundleCli()) as string;
    const b = (await bundleCli()) as string;
    expect(b).toBe(a);
    const dir = dirname(a);
    const code = readdirSync(dir)
      .map((f) => readFileSync(join(dir, f), 'utf8'))
      .join('\n');
    expect(code).not.toContain('import.meta');
    // The request log's writer is started from a URL next to request-log.ts, which must exist.
    const m = /new URL\("\.\/log-worker\.mjs", "(file:[^"]+)"\)/.exec(code);
    expect(m).not.toBeNull();
    expect(existsSync(fileURLToPath(new URL('./log-worker.mjs', m![1])))).toBe(true);
  }, 60_000);

  it('`switchyard gateway` runs from the bundle, resident memory well below the same gateway under tsx', async () => {
    const bundled = await idleRssKb({});
    const tsx = await idleRssKb({ SWITCHYARD_BUNDLE: '0' });
    // Measured 84 vs 126 MB idle: tsx's loader thread and transpiler stay for the process's life.
    expect(bundled).toBeLessThan(tsx - 20_000);
  }, 90_000);
});

/** Starts the example gateway, waits until it listens, and returns its VmRSS (kB). */
async function idleRssKb(env: Record<string, string>): Promise<number> {
  const child = spawn(process.execPath, [join(repoRoot, 'bin', 'switchyard.mjs'), 'gateway', '--config', join(repoRoot, 'gateway', 'example', 'models.yaml'), '--port', '0', '--admin-port', 'off'], {
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
    expect(out).not.toMatch(/could not bundle/);
    return Number(/VmRSS:\s+(\d+)/.exec(readFileSync(`/proc/${child.pid}/status`, 'utf8'))![1]);
  } finally {
    child.kill('SIGTERM');
    await new Promise((r) => child.once('exit', r));
  }
}
