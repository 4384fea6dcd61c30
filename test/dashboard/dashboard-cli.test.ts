// End to end through the command line, as a user runs it: `switchyard sim` writes a small real
// results file, `switchyard dashboard` builds the app if needed, prints its URL and serves the
// pages' data from that file. Guards against the simulator's schema drifting from what the
// dashboard reads.
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import type { ExperimentDetail, ExperimentsResponse, MetricsResponse, TimelineResponse } from '../../notebooks-web/shared/api-types.ts';

const repo = join(import.meta.dirname, '..', '..');
const bin = join(repo, 'bin', 'switchyard.mjs');
const dir = mkdtempSync(join(tmpdir(), 'switchyard-dash-cli-'));
let child: ChildProcess | undefined;

afterAll(() => {
  child?.kill('SIGKILL');
  rmSync(dir, { recursive: true, force: true });
});

/** Starts the dashboard and resolves with the URL it prints. */
function startDashboard(args: string[]): Promise<string> {
  return new Promise((resolve, reject) => {
    child = spawn(process.execPath, [bin, 'dashboard', ...args], { cwd: repo, stdio: ['ignore', 'pipe', 'pipe'] });
    let out = '';
    const timer = setTimeout(() => reject(new Error(`no URL printed; output so far:\n${out}`)), 45_000);
    const onData = (d: Buffer) => {
      out += d.toString();
      const m = /dashboard: (http:\/\/127\.0\.0\.1:\d+\/)/.exec(out);
      if (m) {
        clearTimeout(timer);
        resolve(m[1]!);
      }
    };
    child.stdout!.on('data', onData);
    child.stderr!.on('data', onData);
    child.on('exit', (code) => {
      clearTimeout(timer);
      reject(new Error(`dashboard exited with ${code}:\n${out}`));
    });
  });
}

describe('switchyard dashboard (command line)', () => {
  it('a bad --port or a path that is not results exits at once with a clear error', () => {
    const port = spawnSync(process.execPath, [bin, 'dashboard', '--port', 'abc'], { cwd: repo, encoding: 'utf8' });
    expect(port.status).toBe(2);
    expect(port.stderr).toContain("--port must be an integer 0–65535, got 'abc'");
    const arrow = join(dir, 'garbage.arrow');
    writeFileSync(arrow, 'not results');
    const notDb = spawnSync(process.execPath, [bin, 'dashboard', arrow, '--port', '0'], { cwd: repo, encoding: 'utf8', timeout: 30_000 });
    expect(notDb.status).not.toBe(0);
    expect(notDb.stderr).toContain(`${arrow}: not a DuckDB results file (expected a .duckdb file`);
  });

  it('serves a fresh `switchyard sim` results file: URL printed, app and API answer, exits on SIGTERM', async () => {
    const output = join(dir, 'results', 'cli.duckdb');
    writeFileSync(
      join(dir, 'exp.yaml'),
      `name: cli-fixture
trace: ${join(repo, 'traces', 'mooncake', 'conversation.arrow')}
seed: 5
rate_scale: 0.2
limit: 120
model: kimi
replicas: { count: 2, profile: llama2-70b-h100-tp4 }
runs:
  - strategy: fixed
  - strategy: round_robin
output: ${output}
`,
    );
    const sim = spawnSync(process.execPath, [bin, 'sim', join(dir, 'exp.yaml'), '--no-progress'], { cwd: repo, encoding: 'utf8' });
    expect(sim.status, sim.stderr).toBe(0);

    const url = await startDashboard([output, '--port', '0']);
    const page = await fetch(url);
    expect(page.status).toBe(200);
    expect(await page.text()).toMatch(/<script type="module"[^>]+src="\.\/assets\/[^"]+\.js"/);

    const list = (await (await fetch(`${url}api/experiments`)).json()) as ExperimentsResponse;
    expect(list.problems).toEqual([]);
    const e = list.experiments[0]!;
    expect([e.db, e.name, e.runs]).toEqual(['cli', 'cli-fixture', 2]);
    const base = `${url}api/experiments/cli/${e.experimentId}`;
    const detail = (await (await fetch(base)).json()) as ExperimentDetail;
    const metrics = (await (await fetch(`${base}/metrics`)).json()) as MetricsResponse;
    expect(metrics.runs.map((r) => r.requests)).toEqual([120, 120]);
    for (const path of ['cdf?metric=e2e', 'comparisons']) expect((await fetch(`${base}/${path}`)).status).toBe(200);
    const run = detail.runs[0]!.runId;
    const tl = (await (await fetch(`${base}/runs/${encodeURIComponent(run)}/timeline`)).json()) as TimelineResponse;
    expect(tl.endpoints).toHaveLength(2);
    expect((await fetch(`${base}/runs/${encodeURIComponent(run)}/requests?sort=e2e_ms&order=desc`)).status).toBe(200);

    // (The start-up promise's exit listener is settled already; a late reject is a no-op.)
    const exited = new Promise<number | null>((resolve) => child!.once('exit', (code) => resolve(code)));
    child!.kill('SIGTERM');
    expect(await exited).toBe(0);
    child = undefined;
  });
});
