// The dashboard's plans route over a real results file holding a capacity plan's tables:
// points and answers of the plan whose id is the experiment's, nothing of another plan, and
// `available: false` for an experiment of a file without plan tables.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { PlansResponse } from '../../notebooks-web/shared/api-types.ts';
import { startDashboardServer, type DashboardServer } from '../../notebooks-web/server/dashboard-server.ts';
import { ResultsCatalog } from '../../notebooks-web/server/results-catalog.ts';
import { ResultsStore } from '../../simulator/results/results-store.ts';
import { writePlanFixture } from './fixtures.ts';

const root = mkdtempSync(join(tmpdir(), 'switchyard-dash-plans-'));
let server: DashboardServer;

beforeAll(async () => {
  await writePlanFixture(join(root, 'plan.duckdb'), 'plan-1');
  const plain = await ResultsStore.open(join(root, 'plain.duckdb'), { overwrite: true });
  await plain.addExperiment({ experimentId: 'exp-plain', name: 'plain', tracePath: 't.arrow', traceSource: 'fixture', startedAt: '2026-01-01T00:00:00.000Z', configJson: '{}', seed: 1 });
  await plain.close();
  server = await startDashboardServer({ catalog: ResultsCatalog.create([root]), appDir: root, port: 0, logError: () => {} });
});

afterAll(async () => {
  await server?.close();
  rmSync(root, { recursive: true, force: true });
});

async function get(path: string): Promise<{ status: number; body: PlansResponse }> {
  const r = await fetch(`http://127.0.0.1:${server.port}${path}`);
  return { status: r.status, body: (await r.json()) as PlansResponse };
}

describe('GET …/plans', () => {
  it("returns the plan's points (rate order) and answers with their intervals, and nothing of another plan", async () => {
    const { status, body } = await get('/api/experiments/plan/plan-1/plans');
    expect(status).toBe(200);
    expect(body.available).toBe(true);
    expect(body.points.map((p) => [p.rateScale, p.seed, p.holds])).toEqual([
      [0.5, 1, true],
      [0.5, 2, true],
      [1, 1, false],
    ]);
    expect(body.points[0]).toMatchObject({ question: 'max_rate', config: 'replicas=4', label: 'round_robin', replicas: 4, goodput: 0.97, probeVerdict: 'holds' });
    expect(body.answers).toEqual([
      { question: 'max_rate', config: 'replicas=4', label: 'round_robin', status: 'found', answer: 0.7, low: 0.5, high: 1, unit: 'rate_scale', confidence: 0.9, costPerHourUsd: 40, costPer1kRequestsUsd: 1.1, rank: null },
    ]);
  });

  it('a file without plan tables answers available: false; an unknown experiment is a 404', async () => {
    expect((await get('/api/experiments/plain/exp-plain/plans')).body).toEqual({ available: false, points: [], answers: [] });
    expect((await get('/api/experiments/plan/nope/plans')).status).toBe(404);
  });
});
