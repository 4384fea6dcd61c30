// The dashboard's JSON API over real DuckDB files: routes and their data, 404 for unknown
// things, 400 for malformed input, no path traversal out of the results folder or the app
// folder, no SQL from the client, and files left untouched.
import { createHash } from 'node:crypto';
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, symlinkSync, writeFileSync, copyFileSync } from 'node:fs';
import { request } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { DuckDBInstance } from '@duckdb/node-api';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type {
  CdfResponse,
  ComparisonsResponse,
  ExperimentDetail,
  ExperimentsResponse,
  MetricsResponse,
  RequestDetail,
  RequestsPage,
  TimelineResponse,
} from '../../notebooks-web/shared/api-types.ts';
import { UsageError } from '../../bin/command.ts';
import { parseDashboardArgs } from '../../notebooks-web/dashboard-command.ts';
import { startDashboardServer, type DashboardServer } from '../../notebooks-web/server/dashboard-server.ts';
import { cdfProbabilities } from '../../notebooks-web/server/metric-queries.ts';
import { ResultsCatalog } from '../../notebooks-web/server/results-catalog.ts';
import { bucketWidthMs } from '../../notebooks-web/server/timeline-queries.ts';
import { LEGACY_EXP, SWEEP, SWEEP_EXP, SWEEP_RUNS, writeLegacyFixture, writeSweepFixture } from './fixtures.ts';

const root = mkdtempSync(join(tmpdir(), 'switchyard-dash-api-'));
const results = join(root, 'results');
const appDir = join(root, 'app');
let server: DashboardServer;
let sweepHash: string;

const sha = (p: string) => createHash('sha256').update(readFileSync(p)).digest('hex');

/** GET through node:http with the path sent exactly as given (no client-side normalisation). */
function raw(path: string, method = 'GET'): Promise<{ status: number; headers: Record<string, string | string[] | undefined>; body: string }> {
  return new Promise((resolve, reject) => {
    const req = request({ host: '127.0.0.1', port: server.port, path, method }, (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (c: Buffer) => chunks.push(c));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, headers: res.headers, body: Buffer.concat(chunks).toString('utf8') }));
    });
    req.on('error', reject);
    req.end();
  });
}

async function json<T>(path: string, status = 200): Promise<T> {
  const r = await raw(path);
  expect(r.status, `${path}: ${r.body}`).toBe(status);
  expect(r.headers['content-type']).toMatch(/^application\/json/);
  return JSON.parse(r.body) as T;
}

const exp = (db: string, id: string) => `/api/experiments/${db}/${id}`;
const sweep = exp('sweep', SWEEP_EXP);
const legacy = exp('legacy', LEGACY_EXP);

beforeAll(async () => {
  await writeSweepFixture(join(results, 'sweep.duckdb'));
  await writeLegacyFixture(join(results, 'legacy.duckdb'));
  // A DuckDB file that is not a results database, and a file that is not DuckDB at all.
  const other = await DuckDBInstance.create(join(results, 'other.duckdb'));
  const c = await other.connect();
  await c.run('CREATE TABLE foo (x INTEGER)');
  c.closeSync();
  other.closeSync();
  writeFileSync(join(results, 'garbage.duckdb'), 'not a database');
  // A valid results file outside the folder, reachable only through a symlink inside it.
  mkdirSync(join(root, 'outside'));
  copyFileSync(join(results, 'legacy.duckdb'), join(root, 'outside', 'secret.duckdb'));
  symlinkSync(join(root, 'outside', 'secret.duckdb'), join(results, 'linked.duckdb'));
  // The "built app", a secret beside it and a symlink out of it.
  mkdirSync(join(appDir, 'assets'), { recursive: true });
  writeFileSync(join(appDir, 'index.html'), '<!doctype html><title>app</title>');
  writeFileSync(join(appDir, 'assets', 'main.js'), 'console.log(1)');
  writeFileSync(join(root, 'secret.txt'), 'TOP SECRET');
  symlinkSync(join(root, 'secret.txt'), join(appDir, 'leak.txt'));
  sweepHash = sha(join(results, 'sweep.duckdb'));
  server = await startDashboardServer({ catalog: ResultsCatalog.create([results]), appDir, port: 0, logError: () => {} });
});

afterAll(async () => {
  await server?.close();
  rmSync(root, { recursive: true, force: true });
});

describe('experiments', () => {
  it('lists every experiment of the folder; unreadable files are reported, not fatal; links out are not followed', async () => {
    const body = await json<ExperimentsResponse>('/api/experiments');
    expect(body.experiments.map((e) => [e.db, e.experimentId])).toEqual([
      ['sweep', SWEEP_EXP],
      ['legacy', LEGACY_EXP],
    ]);
    const s = body.experiments[0]!;
    expect(s).toMatchObject({ name: 'offload-sweep', tracePath: '../traces/fixture.arrow', traceSource: 'hand-made fixture', seed: 1, runs: SWEEP_RUNS, strategies: ['fixed', 'p2c'], gitRevisions: ['abc1234def'] });
    expect(body.problems.map((p) => p.db).sort()).toEqual(['garbage', 'other']);
    expect(JSON.stringify(body)).not.toContain('secret');
    expect(JSON.stringify(body)).not.toContain(root); // no server paths in answers
  });

  it('detail: runs with parsed params, labels and pair keys; older files fall back', async () => {
    const d = await json<ExperimentDetail>(sweep);
    expect(d.runs).toHaveLength(SWEEP_RUNS);
    expect(d.runs[0]).toMatchObject({ runId: 'fixed-wait0.5-q4-seed1', label: 'fixed', pairKey: 'wait_s=0.5,queue_limit=4', params: { wait_s: 0.5, queue_limit: 4, seed: 1 } });
    expect(d.endpoints).toEqual(['m:replica-0', 'm:replica-1']);
    expect([d.sloTtftMs, d.sloTpotMs, d.hasComparisons]).toEqual([1200, 100, true]);
    const l = await json<ExperimentDetail>(legacy);
    expect(l.runs.map((r) => [r.runId, r.label, r.pairKey])).toEqual([
      ['fixed-1', 'fixed', ''],
      ['round_robin-1', 'round_robin', ''],
    ]);
    expect(l.hasComparisons).toBe(false);
  });
});

describe('comparison data', () => {
  it('CDFs are a few hundred quantiles per run, not the rows', async () => {
    const c = await json<CdfResponse>(`${sweep}/cdf?metric=ttft&points=200`);
    expect(c.runs).toHaveLength(SWEEP_RUNS);
    for (const r of c.runs) {
      expect(r.n).toBe(SWEEP.requestsPerRun - 3); // 3 failed requests have no TTFT
      expect(r.points.length).toBeLessThanOrEqual(200);
      expect(r.points[0]![1]).toBe(0);
      expect(r.points.at(-1)![1]).toBe(1);
      for (let i = 1; i < r.points.length; i++) {
        expect(r.points[i]![0]).toBeGreaterThanOrEqual(r.points[i - 1]![0]);
        expect(r.points[i]![1]).toBeGreaterThan(r.points[i - 1]![1]);
      }
    }
    const probs = cdfProbabilities(200);
    expect(probs.length).toBeLessThanOrEqual(200);
    expect(probs.filter((p) => p >= 0.99).length).toBeGreaterThan(20); // the tail gets points
    expect(() => cdfProbabilities(3)).toThrow(RangeError);
  });

  it('goodput follows the SLO the client asks for; cost comes from summary when it has it', async () => {
    const wide = await json<MetricsResponse>(`${sweep}/metrics?slo_ttft_ms=100000&slo_tpot_ms=1000`);
    const tight = await json<MetricsResponse>(`${sweep}/metrics?slo_ttft_ms=600&slo_tpot_ms=1000`);
    const dflt = await json<MetricsResponse>(`${sweep}/metrics`);
    expect([dflt.sloTtftMs, dflt.sloTpotMs]).toEqual([1200, 100]);
    const r0 = wide.runs[0]!;
    expect(r0.goodput).toBeCloseTo((SWEEP.requestsPerRun - 3) / SWEEP.requestsPerRun);
    expect(tight.runs[0]!.goodput).toBeLessThan(r0.goodput);
    expect(r0.failureRate).toBeCloseTo(3 / 60);
    expect(r0.fallbackRate).toBeCloseTo(4 / 60);
    expect(r0.offloadRate).toBeCloseTo(3 / 60);
    expect(r0.costSource).toBe('summary');
    expect(r0.costPer1kRequestsUsd).toBeCloseTo(1.5);
    expect(r0.ttft.p50).not.toBeNull();
    const l = await json<MetricsResponse>(`${legacy}/metrics`);
    expect(l.runs[0]!.costSource).toBe('requests');
    expect(l.runs[0]!.costPer1kRequestsUsd).toBeCloseTo(1);
  });

  it('stored comparisons when the table has rows for the experiment; a reason otherwise', async () => {
    const c = await json<ComparisonsResponse>(`${sweep}/comparisons`);
    expect(c.available).toBe(true);
    expect(c.rows).toHaveLength(SWEEP.waitS.length * SWEEP.queueLimit.length * 6);
    expect(c.rows[0]).toMatchObject({ baseline: 'fixed', candidate: 'p2c', better: expect.stringMatching(/lower|higher/), seeds: 2, confidence: 0.95 });
    const l = await json<ComparisonsResponse>(`${legacy}/comparisons`);
    expect(l).toEqual({ available: false, reason: expect.stringMatching(/no 'comparisons' table/), rows: [] });
  });
});

describe('timeline', () => {
  const t = `${sweep}/runs/p2c-wait1-q8-seed1/timeline`;

  it('whole run: per-endpoint series, zero-filled rate, breaker and fault events', async () => {
    const tl = await json<TimelineResponse>(t);
    expect([tl.runStartMs, tl.fromMs]).toEqual([0, 0]);
    expect(tl.runEndMs).toBeGreaterThanOrEqual(60_000);
    expect(tl.endpoints).toEqual(['m:replica-0', 'm:replica-1']);
    expect(tl.series[0]!.points.length).toBeGreaterThan(10);
    // Engine counters: batch tokens are a gauge (bucket max), steps and preemptions the increase over a bucket.
    const p0 = tl.series[0]!.points;
    expect(Math.max(...p0.map((p) => p.batchTokens))).toBeGreaterThan(0);
    expect(p0.every((p) => p.steps >= 0 && p.preemptions >= 0)).toBe(true);
    expect(tl.rate.length).toBe(Math.floor(tl.toMs / tl.bucketMs) - Math.floor(tl.fromMs / tl.bucketMs) + 1);
    expect(tl.breakers.map((b) => b.to)).toEqual(['open', 'half_open', 'closed']);
    expect(tl.faults.map((f) => [f.phase, f.status])).toEqual([
      ['start', 503],
      ['end', 503],
    ]);
  });

  it('a window gives finer buckets inside it; bad windows are 400', async () => {
    const w = await json<TimelineResponse>(`${t}?from_ms=10000&to_ms=20000&max_points=100`);
    expect([w.fromMs, w.toMs, w.bucketMs]).toEqual([10_000, 20_000, 1000]);
    expect(w.series[0]!.points.every((p) => p.atMs >= 10_000 && p.atMs <= 20_000)).toBe(true);
    expect(bucketWidthMs(0, 3_600_000, 600)).toBe(6000);
    expect(bucketWidthMs(0, 10_000, 600)).toBe(1000);
    await json(`${t}?from_ms=20000&to_ms=10000`, 400);
    await json(`${t}?max_points=1`, 400);
    await json(`${t}?from_ms=-5`, 400);
  });
});

describe('requests', () => {
  const q = `${sweep}/runs/fixed-wait1-q4-seed1/requests`;

  it('filters, sorts and pages in SQL', async () => {
    const all = await json<RequestsPage>(q);
    expect([all.total, all.rows.length]).toEqual([60, 60]);
    expect(all.statuses).toEqual(['ok', 'upstream_error']);
    expect(all.endpoints).toEqual(['m:replica-0', 'm:replica-1']);
    const failed = await json<RequestsPage>(`${q}?status=upstream_error`);
    expect(failed.rows.map((r) => r.requestId).sort()).toEqual(['27', '47', '7']);
    const slow = await json<RequestsPage>(`${q}?metric=e2e&min_ms=1000&sort=e2e_ms&order=desc&limit=5`);
    expect(slow.rows).toHaveLength(5);
    expect(slow.rows.every((r) => r.e2eMs! >= 1000)).toBe(true);
    expect(slow.rows.map((r) => r.e2eMs)).toEqual([...slow.rows.map((r) => r.e2eMs)].sort((a, b) => b! - a!));
    const page2 = await json<RequestsPage>(`${q}?sort=arrival_ms&limit=10&offset=10`);
    expect(page2.rows[0]!.arrivalMs).toBe(10_000);
    const r1 = await json<RequestsPage>(`${q}?endpoint=m%3Areplica-1`);
    expect(r1.total).toBe(30);
  });

  it('one request with its attempts', async () => {
    const d = await json<RequestDetail>(`${q}/3`);
    expect(d.request).toMatchObject({ requestId: '3', status: 'ok', fallbacks: 1 });
    expect(d.attempts.map((a) => [a.attemptId, a.outcome, a.status])).toEqual([
      [1, 'http_status', 503],
      [2, 'ok', null],
    ]);
  });
});

describe('errors', () => {
  it('404 for an unknown file, experiment, run, request or route', async () => {
    for (const path of [
      '/api/experiments/nope/x',
      exp('sweep', 'no-such-experiment'),
      exp('sweep', LEGACY_EXP), // exists, but in another file
      `${sweep}/metrics`.replace(SWEEP_EXP, 'nope'),
      `${sweep}/runs/nope/timeline`,
      `${sweep}/runs/fixed-1/timeline`, // a run of another experiment
      `${sweep}/runs/fixed-wait1-q4-seed1/requests/99999`,
      '/api/nothing-here',
      `${sweep}/cdf/extra`,
    ]) {
      const body = await json<{ error: { code: string; message: string } }>(path, 404);
      expect(body.error.code).toBe('not_found');
    }
  });

  it('400 for malformed parameters, naming the parameter', async () => {
    const cases: [string, RegExp][] = [
      [`${sweep}/cdf?metric=latency`, /metric/],
      [`${sweep}/cdf?points=5`, /points/],
      [`${sweep}/cdf?points=abc`, /points/],
      [`${sweep}/cdf?points=20.5`, /points/],
      [`${sweep}/metrics?slo_ttft_ms=-1`, /slo_ttft_ms/],
      [`${sweep}/metrics?slo_ttft_ms=NaN`, /slo_ttft_ms/],
      [`${sweep}/metrics?slo_ttft_ms=1e400`, /slo_ttft_ms/],
      [`${sweep}/metrics?slo_ttft_ms=%20`, /slo_ttft_ms/],
      [`${sweep}/metrics?slo=1`, /unknown parameter 'slo'/],
      [`${sweep}/cdf?metric=ttft&metric=e2e`, /more than once/],
      [`${sweep}/runs/fixed-1/requests?sort=1;DROP%20TABLE%20runs`, /sort/],
      [`${sweep}/runs/fixed-1/requests?order=sideways`, /order/],
      [`${sweep}/runs/fixed-1/requests?limit=0`, /limit/],
      [`${sweep}/runs/fixed-1/requests?limit=1000000`, /limit/],
      [`${sweep}/runs/fixed-1/requests?status=${'x'.repeat(300)}`, /longer than/],
      [`${sweep}/runs/fixed-1/requests?status=a%00b`, /control characters/],
      [`/api/experiments/sweep/%E0%A4%A`, /percent-encoding/],
    ];
    for (const [path, message] of cases) {
      const body = await json<{ error: { code: string; message: string } }>(path, 400);
      expect(body.error.code).toBe('bad_request');
      expect(body.error.message).toMatch(message);
    }
  });

  it('no path traversal: not through API segments, not to files outside the results folder, not out of the app', async () => {
    for (const path of [
      '/api/experiments/../../etc/passwd',
      '/api/experiments/..%2F..%2Foutside%2Fsecret/x',
      `/api/experiments/%2e%2e/${LEGACY_EXP}`,
      '/api/experiments/sweep/..%5C..%5Cx',
    ]) {
      const r = await raw(path);
      expect([400, 404], path).toContain(r.status);
    }
    // A run id may hold '/' (fixed/outage/s42), but no empty, '.' or '..' part.
    for (const run of ['fixed%2F..%2Fx', '%2Ffixed', 'fixed%2F%2Fs1', 'fixed%2F.']) expect((await raw(`${sweep}/runs/${run}/timeline`)).status, run).toBe(400);
    expect((await raw(`${sweep}/runs/fixed%2Fs1/timeline`)).status).toBe(404);
    // The symlinked file outside the folder is not in the catalog, under any name.
    for (const name of ['linked', 'secret', '..%2Foutside%2Fsecret']) {
      const r = await raw(exp(name, LEGACY_EXP));
      expect([400, 404]).toContain(r.status);
    }
    for (const path of ['/../secret.txt', '/%2e%2e/secret.txt', '/assets/..%2F..%2Fsecret.txt', '/assets/%2e%2e/%2e%2e/secret.txt', '/leak.txt', '/..%5Csecret.txt']) {
      const r = await raw(path);
      expect([400, 404], path).toContain(r.status);
      expect(r.body).not.toContain('TOP SECRET');
    }
    expect((await raw('/')).body).toContain('<title>app</title>');
    expect((await raw('/assets/main.js')).headers['content-type']).toMatch(/javascript/);
  });

  it('read-only: other methods are 405; client text is bound, never run as SQL; files are unchanged', async () => {
    for (const method of ['POST', 'PUT', 'DELETE', 'PATCH']) {
      const r = await raw(`${sweep}/metrics`, method);
      expect(r.status).toBe(405);
      expect(r.headers.allow).toBe('GET, HEAD');
    }
    const q = `${sweep}/runs/fixed-wait1-q4-seed1/requests`;
    expect((await json<RequestsPage>(`${q}?status=${encodeURIComponent("ok' OR '1'='1")}`)).total).toBe(0);
    expect((await json<RequestsPage>(`${q}?endpoint=${encodeURIComponent("x'); DROP TABLE runs; --")}`)).total).toBe(0);
    await json(`${q}/${encodeURIComponent("1' OR '1'='1")}`, 404);
    expect((await json<ExperimentDetail>(sweep)).runs).toHaveLength(SWEEP_RUNS);
    expect(sha(join(results, 'sweep.duckdb'))).toBe(sweepHash);
    expect(existsSync(join(results, 'sweep.duckdb.wal'))).toBe(false);
  });

  it('a results file added while running appears without a restart', async () => {
    await writeLegacyFixture(join(results, 'later.duckdb'));
    const body = await json<ExperimentsResponse>('/api/experiments');
    expect(body.experiments.map((e) => e.db)).toContain('later');
  });
});

describe('dashboard command line', () => {
  it('parses paths, --port and --host; rejects a bad port', () => {
    expect(parseDashboardArgs([])).toEqual({ paths: ['results'], port: 8090, host: '127.0.0.1' });
    expect(parseDashboardArgs(['a.duckdb', 'b', '--port', '0'])).toEqual({ paths: ['a.duckdb', 'b'], port: 0, host: '127.0.0.1' });
    expect(() => parseDashboardArgs(['--port', 'http'])).toThrow(UsageError);
    expect(() => parseDashboardArgs(['--port', 'abc'])).toThrow("--port must be an integer 0–65535, got 'abc'");
    expect(() => parseDashboardArgs(['--port', '80.5'])).toThrow("--port must be an integer 0–65535, got '80.5'");
    expect(() => parseDashboardArgs(['--port', '70000'])).toThrow(UsageError);
    expect(() => parseDashboardArgs(['--bogus'])).toThrow(UsageError);
  });

  it('a missing results file is a clear error whose hint fits what was named', () => {
    const cwd = mkdtempSync(join(tmpdir(), 'switchyard-dash-missing-'));
    mkdirSync(join(cwd, 'experiments'));
    writeFileSync(join(cwd, 'experiments', 'mine.yaml'), 'name: mine\noutput: ../results/mine.duckdb\n');
    // An experiment's output: its sim command.
    expect(() => ResultsCatalog.create(['results/mine.duckdb'], cwd)).toThrow('results/mine.duckdb: no such file or folder (run `npx switchyard sim experiments/mine.yaml` to produce it)');
    // A name beside other results files: those files.
    mkdirSync(join(cwd, 'results'));
    writeFileSync(join(cwd, 'results', 'other.duckdb'), '');
    expect(() => ResultsCatalog.create(['results/typo.duckdb'], cwd)).toThrow('results/typo.duckdb: no such file or folder (results files in results: other.duckdb)');
    // Anything else: how results files are made (no `npm start` whatever was named).
    expect(() => ResultsCatalog.create(['missing.duckdb'], cwd)).toThrow("missing.duckdb: no such file or folder (give a results file that `switchyard sim` wrote (the experiment's output:, or --output) or a folder of them)");
  });

  it('a named file that is not a DuckDB database is refused, naming it and what is expected', () => {
    const cwd = mkdtempSync(join(tmpdir(), 'switchyard-dash-notdb-'));
    writeFileSync(join(cwd, 'garbage.arrow'), 'ARROW1 and then some');
    writeFileSync(join(cwd, 'notes.duckdb'), 'not a database');
    const expected = 'expected a .duckdb file that `switchyard sim` wrote, a Parquet results folder (sim --shard), or a folder of .duckdb files';
    expect(() => ResultsCatalog.create(['garbage.arrow'], cwd)).toThrow(`garbage.arrow: not a DuckDB results file (${expected}; garbage.arrow looks like an Arrow trace: name it as trace: in an experiment, run \`switchyard sim <experiment.yaml>\``);
    expect(() => ResultsCatalog.create(['notes.duckdb'], cwd)).toThrow(`notes.duckdb: not a DuckDB results file (${expected})`);
    // A folder is still listed as before: its entries are checked when opened.
    expect(ResultsCatalog.create(['.'], cwd).entries().map((e) => e.name)).toEqual(['notes']);
  });
});
