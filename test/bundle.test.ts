// The gateway's bundle (bin/bundle.mjs): built once per source state and reused, its paths next
// to the sources resolve as under tsx, and a gateway started by the CLI runs from it without
// loading tsx (so its resident memory is well below the same gateway under tsx).
import { spawn } from 'node:child_process';
import { cpSync, existsSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
// @ts-expect-error plain JS module without declarations
import { bundleGateway, bundleSimulator } from '../bin/bundle.mjs';
import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import { ResultsStore } from '../simulator/results/results-store.ts';
import { mooncakeConversation } from './simulator/fixtures.ts';
import { freePort } from './free-port.ts';

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
    const port = async () => ['--workers', '2', '--port', String(await freePort())];
    const bundled = await idleRssKb({}, await port());
    const tsx = await idleRssKb({ SWITCHYARD_BUNDLE: '0' }, await port());
    // Measured 161 vs 240 MB: under tsx each worker thread registers its own loader.
    expect(bundled).toBeLessThan(tsx - 40_000);
  }, 90_000);
});

describe('simulator bundle', () => {
  it('an unchanged tree reuses one build; `switchyard sim --jobs 2` runs from it (workers and results thread too) and writes the rows tsx writes', async () => {
    const a = (await bundleSimulator()) as { cli: string; 'cell-worker': string };
    expect(await bundleSimulator()).toEqual(a);
    const dir = mkdtempSync(join(tmpdir(), 'switchyard-sim-bundle-'));
    const file = join(dir, 'e.yaml');
    writeFileSync(
      file,
      `name: e\ntrace: ${mooncakeConversation}\nseed: 5\nrate_scale: 0.2\nlimit: 200\nmodel: kimi\nreplicas: { count: 2, profile: llama2-70b-h100-tp4 }\nruns:\n  - strategy: fixed\n  - strategy: round_robin\noutput: out.duckdb\n`,
    );
    const run = async (env: Record<string, string>, out: string) => {
      const { stdout, stderr } = await promisify(execFile)(process.execPath, [join(repoRoot, 'bin', 'switchyard.mjs'), 'sim', file, '--jobs', '2', '--no-progress', '--output', join(dir, out)], { env: { ...process.env, ...env } });
      expect(stderr).not.toMatch(/could not/);
      expect(stdout).toMatch(/2 jobs/);
      // The bundle reads the trace and writes DuckDB on the results thread (phase lines: simulator/phase-clock.ts).
      if (env.SWITCHYARD_BUNDLE !== '0') expect(stderr).toMatch(/^phase results readTrace-start /m);
      const store = await ResultsStore.open(join(dir, out));
      try {
        return await store.query('select * exclude (run_id) from requests order by run_id, request_id');
      } finally {
        await store.close();
      }
    };
    const bundled = await run({ SWITCHYARD_PHASES: '1' }, 'bundled.duckdb');
    expect(bundled.length).toBe(400);
    expect(await run({ SWITCHYARD_BUNDLE: '0' }, 'tsx.duckdb')).toEqual(bundled);
  }, 90_000);
});

/** A port that was free a moment ago (127.0.0.1). */

/**
 * A copy of the example configuration in a temporary directory, its routes' ports (8101-8103
 * in the example, where a running demo's emulators listen) moved to free ones and its request
 * log under the same directory, so a test never reaches `npm run gateway`'s upstreams nor writes
 * into results/. (The gateway starts no emulators: its upstreams are simply down here.)
 */
async function exampleCopy(): Promise<{ dir: string; requestLog: string }> {
  const dir = mkdtempSync(join(tmpdir(), 'switchyard-bundle-'));
  cpSync(join(repoRoot, 'gateway', 'example'), dir, { recursive: true });
  const moved = new Map<string, string>();
  for (const p of ['8101', '8102', '8103']) moved.set(p, String(await freePort()));
  for (const f of ['models.yaml']) {
    const text = readFileSync(join(dir, f), 'utf8').replace(/\b810[123]\b/g, (p) => moved.get(p)!);
    writeFileSync(join(dir, f), text);
  }
  return { dir, requestLog: join(dir, 'gateway-requests.duckdb') };
}

/** Starts (a copy of) the example gateway, waits until it listens, and returns its VmRSS (kB). */
async function idleRssKb(env: Record<string, string>, extra: string[]): Promise<number> {
  const example = await exampleCopy();
  const child = spawn(process.execPath, [join(repoRoot, 'bin', 'switchyard.mjs'), 'gateway', '--config', join(example.dir, 'models.yaml'), '--port', '0', '--admin-port', 'off', ...extra], {
    cwd: example.dir,
    env: { ...process.env, SWITCHYARD_REQUEST_LOG: example.requestLog, ...env },
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
    rmSync(example.dir, { recursive: true, force: true });
  }
}
