// The benchmark gate must fail when a deliberately slowed strategy is substituted.
import { execFileSync } from 'node:child_process';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';

const root = join(import.meta.dirname, '..', '..');

describe('npm run bench:check', () => {
  it('exits non-zero and names the metric when the fixed strategy is slowed by ~20 µs per pick', () => {
    let status = 0;
    let out = '';
    try {
      out = execFileSync(join(root, 'node_modules', '.bin', 'tsx'), ['bench/check.ts', '--slow-strategy', 'fixed', '--no-history'], { cwd: root, encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'] });
    } catch (err) {
      const e = err as { status: number; stdout: string; stderr: string };
      status = e.status;
      out = e.stdout + e.stderr;
    }
    expect(status).toBe(1);
    expect(out).toMatch(/WORSE\s+micro ratio: decision: fixed over 8 routes/);
    expect(out).toMatch(/regressed beyond tolerance/);
  });
});
