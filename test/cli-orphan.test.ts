// A server started through a wrapper that dies without passing the signal on (`npm run … &`,
// then `kill $!`: npm does not forward SIGTERM) stops by itself instead of holding its port.
import { spawn } from 'node:child_process';
import { join } from 'node:path';
import { describe, expect, it, vi } from 'vitest';

const repoRoot = join(import.meta.dirname, '..');

const alive = (pid: number): boolean => {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
};

describe('an orphaned server', () => {
  it('stops when its parent process exits', async () => {
    const wrapper = spawn('bash', ['-c', `"${process.execPath}" bin/switchyard.mjs emulate --host 127.0.0.1 --port 0 --mode echo & echo "pid=$!"; wait`], { cwd: repoRoot, stdio: ['ignore', 'pipe', 'pipe'] });
    let out = '';
    wrapper.stdout.on('data', (d: Buffer) => (out += d.toString()));
    wrapper.stderr.on('data', (d: Buffer) => (out += d.toString()));
    await vi.waitFor(() => expect(out).toMatch(/pid=\d+[\s\S]*http:\/\/127\.0\.0\.1:\d+/), { timeout: 30_000, interval: 100 });
    const pid = Number(/pid=(\d+)/.exec(out)![1]);
    wrapper.kill('SIGKILL');
    await vi.waitFor(() => expect(alive(pid)).toBe(false), { timeout: 15_000, interval: 200 });
    expect(out).toMatch(/parent process \d+ exited; stopping as on SIGTERM/);
  }, 60_000);
});
