// One throw-away PostgreSQL server for a test run (vitest globalSetup): initdb into a temporary
// directory, `postgres` on a free loopback port, stopped and deleted at teardown. The binaries
// are looked up where Debian's `postgresql` package puts them (/usr/lib/postgresql/<v>/bin, not
// on PATH), then on PATH. initdb refuses to run as root, so as uid 0 both run as the postgres user (spawn uid/gid)
// on a directory owned by that user. No binaries ⇒ `pgUrl` is '' and the
// PostgreSQL tests are skipped with the reason.
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { chownSync, existsSync, mkdtempSync, readdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { TestProject } from 'vitest/node';
import { freePort } from '../free-port.ts';

declare module 'vitest' {
  export interface ProvidedContext {
    /** `postgres://…` of the run's server, or '' when none could be started. */
    pgUrl: string;
    /** Why there is no server ('' when there is one). */
    pgSkip: string;
  }
}

function findBin(): string | null {
  const roots = existsSync('/usr/lib/postgresql') ? readdirSync('/usr/lib/postgresql').sort((a, b) => Number(b) - Number(a)) : [];
  for (const v of roots) if (existsSync(join('/usr/lib/postgresql', v, 'bin', 'initdb'))) return join('/usr/lib/postgresql', v, 'bin');
  const which = spawnSync('sh', ['-c', 'command -v initdb'], { encoding: 'utf8' });
  const p = which.stdout.trim();
  return p ? p.replace(/\/initdb$/, '') : null;
}

export default async function setup(project: TestProject): Promise<() => Promise<void>> {
  const bin = findBin();
  if (!bin) {
    project.provide('pgUrl', '');
    project.provide('pgSkip', 'no PostgreSQL binaries (install the postgresql package)');
    return async () => {};
  }
  const asRoot = process.getuid?.() === 0;
  const dir = mkdtempSync(join(tmpdir(), 'switchyard-pg-'));
  const data = join(dir, 'data');
  const uid = asRoot ? Number(spawnSync('id', ['-u', 'postgres'], { encoding: 'utf8' }).stdout.trim()) : null;
  const gid = asRoot ? Number(spawnSync('id', ['-g', 'postgres'], { encoding: 'utf8' }).stdout.trim()) : null;
  if (asRoot) chownSync(dir, uid!, gid!);
  // As root, the binaries run as the postgres user through spawn's uid/gid (not `runuser`, which
  // would stand between the test and the server and not pass a shutdown signal on).
  const as = asRoot ? { uid: uid!, gid: gid! } : {};
  const init = spawnSync(join(bin, 'initdb'), ['-D', data, '-U', 'postgres', '--auth=trust', '-E', 'UTF8', '--no-sync'], { encoding: 'utf8', cwd: dir, ...as });
  if (init.status !== 0) throw new Error(`initdb failed: ${init.stderr || init.stdout}`);
  const port = await freePort();
  const server: ChildProcess = spawn(join(bin, 'postgres'), ['-D', data, '-p', String(port), '-k', dir, '-c', 'listen_addresses=127.0.0.1', '-c', 'fsync=off', '-c', 'synchronous_commit=off', '-c', 'full_page_writes=off'], { stdio: ['ignore', 'ignore', 'pipe'], cwd: dir, ...as });
  let stderr = '';
  server.stderr!.on('data', (d: Buffer) => (stderr += d.toString()));
  const url = `postgres://postgres@127.0.0.1:${port}/postgres`;
  const { default: pg } = await import('pg');
  const deadline = Date.now() + 30_000;
  for (;;) {
    const c = new pg.Client({ connectionString: url, connectionTimeoutMillis: 1000 });
    try {
      await c.connect();
      await c.end();
      break;
    } catch (e) {
      await c.end().catch(() => {});
      if (Date.now() > deadline || server.exitCode !== null) throw new Error(`postgres did not start: ${(e as Error).message}\n${stderr}`);
      await new Promise((r) => setTimeout(r, 100));
    }
  }
  project.provide('pgUrl', url);
  project.provide('pgSkip', '');
  return async () => {
    if (server.exitCode === null) {
      const exited = new Promise((r) => server.once('exit', r));
      server.kill('SIGINT'); // fast shutdown
      const forced = setTimeout(() => server.kill('SIGKILL'), 10_000);
      await exited;
      clearTimeout(forced);
    }
    rmSync(dir, { recursive: true, force: true });
  };
}
