// One throw-away redis-server for a test run (vitest globalSetup): a free loopback port, no
// persistence (`--save '' --appendonly no`), a temporary working directory, stopped and deleted at
// teardown. No binary ⇒ `redisUrl` is '' and the Redis tests skip with the reason. The tests
// stop and restart the same server (same port) to simulate an outage: `redisBin`, `redisPort`
// and `redisDir` tell them how.
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { TestProject } from 'vitest/node';
import { freePort } from '../free-port.ts';

declare module 'vitest' {
  export interface ProvidedContext {
    /** `redis://127.0.0.1:<port>` of the run's server, or '' when none could be started. */
    redisUrl: string;
    /** Why there is no server ('' when there is one). */
    redisSkip: string;
    /** The redis-server binary, its port and working directory (to restart it after a kill). */
    redisBin: string;
    redisPort: number;
    redisDir: string;
  }
}

/** The argv of a persistence-free server on `port` in `dir`. */
export function redisArgs(port: number, dir: string): string[] {
  return ['--port', String(port), '--bind', '127.0.0.1', '--save', '', '--appendonly', 'no', '--dir', dir, '--protected-mode', 'no'];
}

/** Starts redis-server and resolves once it answers PING. @throws Error with its output when it does not start in 10 s. */
export async function startRedis(bin: string, port: number, dir: string): Promise<ChildProcess> {
  const child = spawn(bin, redisArgs(port, dir), { stdio: ['ignore', 'pipe', 'pipe'], cwd: dir });
  let out = '';
  child.stdout!.on('data', (d: Buffer) => (out += d.toString()));
  child.stderr!.on('data', (d: Buffer) => (out += d.toString()));
  const { Redis } = await import('ioredis');
  const deadline = Date.now() + 10_000;
  for (;;) {
    const c = new Redis({ port, host: '127.0.0.1', lazyConnect: true, retryStrategy: () => null, maxRetriesPerRequest: 0 });
    c.on('error', () => {});
    try {
      await c.connect();
      await c.ping();
      c.disconnect();
      return child;
    } catch (e) {
      c.disconnect();
      if (Date.now() > deadline || child.exitCode !== null) throw new Error(`redis-server did not start: ${(e as Error).message}\n${out}`);
      await new Promise((r) => setTimeout(r, 50));
    }
  }
}

export default async function setup(project: TestProject): Promise<() => Promise<void>> {
  const bin = spawnSync('sh', ['-c', 'command -v redis-server'], { encoding: 'utf8' }).stdout.trim();
  if (!bin) {
    for (const [k, v] of [['redisUrl', ''], ['redisSkip', 'no redis-server on PATH (install the redis-server package)'], ['redisBin', ''], ['redisDir', '']] as const) project.provide(k, v);
    project.provide('redisPort', 0);
    return async () => {};
  }
  const dir = mkdtempSync(join(tmpdir(), 'switchyard-redis-'));
  const port = await freePort();
  const server = await startRedis(bin, port, dir);
  project.provide('redisUrl', `redis://127.0.0.1:${port}`);
  project.provide('redisSkip', '');
  project.provide('redisBin', bin);
  project.provide('redisPort', port);
  project.provide('redisDir', dir);
  return async () => {
    server.kill('SIGTERM');
    // A test may have killed and restarted the server on this port: shut down whatever answers there.
    spawnSync('redis-cli', ['-p', String(port), 'shutdown', 'nosave'], { timeout: 5_000 });
    rmSync(dir, { recursive: true, force: true });
  };
}
