/**
 * `switchyard calibrate <request-log.duckdb> --experiment <exp.yaml> [--fit] [--out FILE]`:
 * replays a gateway request log on the experiment's engine models and reports, per endpoint,
 * predicted vs measured TTFT / TPOT / E2E percentiles. An endpoint whose name (the endpoint
 * id's part after the last ':', e.g. `local-8103` of `demo:local-8103`) is a provider of the
 * experiment is a hosted provider: its prediction is the provider model's quantiles. Every
 * other endpoint is replayed on the experiment's `replicas:` model, open-loop at its logged
 * arrival times (`endpoint-replay.ts`). `--fit` fits the API-server and step-overhead terms
 * (`fit-terms.ts`) and the providers' TTFT/TPOT, reports the fitted predictions, and writes a
 * calibration file (`calibration-file.ts`) that an experiment names with `calibration:`.
 */
import { existsSync, readFileSync } from 'node:fs';
import { basename, dirname, resolve } from 'node:path';
import { parseArgs } from 'node:util';
import { parse as parseYaml } from 'yaml';
import { UsageError, type CliCommand } from '../../bin/command.ts';
import { formatYamlSyntaxError, yamlSyntaxReport, type YamlErrorLike } from '../../core/index.ts';
import { type ReplicasConfig, replicaApiServer } from '../engine/replica-config.ts';
import { parseExperiment, resolveProviders, type Experiment } from '../experiment.ts';
import { quantile } from '../engine/validation.ts';
import { writeCalibrationFile, type CalibrationFile } from './calibration-file.ts';
import { fitEngineTerms, predictLatencies, replayEndpoints, type EndpointRequests, type EngineFit } from './fit-terms.ts';
import { compareLatencies, formatLatencyComparisons, PERCENTILES, tpotOf, type MetricComparison } from './latency-report.ts';
import { endpointName, readRequestLog } from './request-log-source.ts';
import { loadStrategyModules, strategyModulePaths } from '../strategy-modules.ts';

const USAGE = `usage: switchyard calibrate <request-log.duckdb> [<another.duckdb> …] --experiment <exp.yaml> [--fit] [--out <calibration.yaml>]

Replays a gateway request log on the experiment's engine models and prints, per endpoint,
predicted vs measured TTFT / TPOT / E2E at p50/p90/p99. Requests served ok in one attempt count.
An endpoint named like one of the experiment's providers (demo:local-8103 -> local-8103) is a
hosted provider; every other one is replayed on the experiment's replicas: model.
  --experiment  the experiment whose replicas:/providers: model the endpoints
  --fit         fit the API-server term (ms per request, per prompt token, per output token)
                and the step overheads (calibrated replicas) to the log, and the providers'
                TTFT/TPOT; write them to --out (default: <log>.calibration.yaml) for an
                experiment's calibration: field`;

/** One endpoint's comparison. */
export interface EndpointReport {
  readonly endpointId: string;
  readonly kind: 'engine' | 'provider';
  readonly requests: number;
  readonly metrics: readonly MetricComparison[];
}

/** What `calibrate` found. */
export interface CalibrateReport {
  /** Predictions with the experiment's terms as configured. */
  readonly before: readonly EndpointReport[];
  /** With `fit`: the fit, predictions with the fitted terms, and the file written. */
  readonly fit: { engine: EngineFit | null; after: readonly EndpointReport[]; calibration: CalibrationFile; out: string } | null;
}

/** Options of `calibrate`. */
export interface CalibrateOptions {
  readonly logs: readonly string[];
  readonly experiment: string;
  readonly fit?: boolean;
  readonly out?: string;
  readonly print?: (line: string) => void;
}

/**
 * Loads the experiment; one that names a calibration file not written yet (the file this
 * command's --fit is about to write) is compared as if it named none, with a note.
 * @throws Error for an unreadable or invalid experiment (as `loadExperiment`).
 */
async function experimentToCalibrate(file: string, print: (line: string) => void): Promise<Experiment> {
  let text: string;
  try {
    text = readFileSync(file, 'utf8');
  } catch (err) {
    throw new Error(`${file}: cannot read experiment: ${(err as Error).message}`);
  }
  let raw: unknown;
  try {
    raw = parseYaml(text);
  } catch (err) {
    throw new Error(formatYamlSyntaxError(file, yamlSyntaxReport(text, err as YamlErrorLike)));
  }
  const cal = raw !== null && typeof raw === 'object' ? (raw as { calibration?: unknown }).calibration : undefined;
  if (typeof cal === 'string' && !existsSync(resolve(dirname(file), cal))) {
    print(`${file}: calibration ${cal} does not exist yet; comparing without it`);
    const { calibration: _c, ...rest } = raw as Record<string, unknown>;
    raw = rest;
  }
  // Its runs may name strategies of its strategy modules: import them, as `loadExperimentAsync` does.
  const listed = raw !== null && typeof raw === 'object' ? (raw as { strategies?: unknown }).strategies : undefined;
  const entries = Array.isArray(listed) ? listed.filter((e): e is string => typeof e === 'string' && e.length > 0) : [];
  const modules = entries.length > 0 ? await loadStrategyModules(strategyModulePaths(entries, dirname(file))) : [];
  return parseExperiment(raw, file, undefined, modules);
}

/** Measured samples of an endpoint. */
const measured = (e: EndpointRequests) => {
  const ttftMs = e.requests.map((r) => r.ttftMs ?? NaN);
  const e2eMs = e.requests.map((r) => r.e2eMs);
  return { ttftMs, e2eMs, tpotMs: tpotOf(ttftMs, e2eMs, e.requests.map((r) => r.outputTokens)) };
};

/** Engine endpoints' comparisons for `replicas`. */
function engineReports(eps: readonly EndpointRequests[], replicas: ReplicasConfig): EndpointReport[] {
  const times = replayEndpoints(eps, replicas);
  const api = replicaApiServer(replicas);
  return eps.map((e, k) => {
    const p = predictLatencies(e.requests, times[k]!, api);
    const predicted = { ttftMs: p.ttftMs, e2eMs: p.e2eMs, tpotMs: tpotOf(p.ttftMs, p.e2eMs, e.requests.map((r) => r.outputTokens)) };
    return { endpointId: e.endpointId, kind: 'engine' as const, requests: e.requests.length, metrics: compareLatencies(measured(e), predicted) };
  });
}

/** The measured TTFT summary and TPOT quantiles of a provider endpoint (the provider fit). */
function providerFit(e: EndpointRequests): CalibrationFile['providers'][string] {
  const m = measured(e);
  const ttft = m.ttftMs.filter(Number.isFinite);
  const e2e = m.e2eMs;
  // Without streamed TTFTs the whole response time is the first-token time of a non-streamed answer.
  const t = ttft.length > 0 ? ttft : e2e;
  const tpot = Array.from(m.tpotMs).filter(Number.isFinite);
  const positive = (v: number) => Number(Math.max(v, 1e-3).toPrecision(6));
  const p50 = tpot.length ? positive(quantile(tpot, 0.5)) : 20;
  return {
    ttft: {
      n_samples: t.length,
      p50_ms: positive(quantile(t, 0.5)),
      p90_ms: positive(quantile(t, 0.9)),
      p99_ms: positive(quantile(t, 0.99)),
      mean_ms: positive(t.reduce((s, v) => s + v, 0) / t.length),
      max_ms: positive(Math.max(...t)),
    },
    tpot: { p50_ms: p50, p90_ms: Math.max(p50, tpot.length ? positive(quantile(tpot, 0.9)) : 40) },
  };
}

/**
 * Runs the comparison (and with `fit`, the fit and the calibration file).
 * @throws Error for an unreadable log or experiment, a log with no usable request, or a log
 *   endpoint that neither is a provider nor can be replayed (no replicas configured).
 */
export async function calibrate(opts: CalibrateOptions): Promise<CalibrateReport> {
  const print = opts.print ?? ((l: string) => process.stdout.write(`${l}\n`));
  const exp = await experimentToCalibrate(opts.experiment, print);
  const providers = new Map(resolveProviders(exp).map((p) => [p.name, p]));
  const logged = await readRequestLog(opts.logs);
  const byEndpoint = new Map<string, EndpointRequests & { requests: typeof logged }>();
  for (const r of logged) {
    let e = byEndpoint.get(r.endpointId);
    if (!e) byEndpoint.set(r.endpointId, (e = { endpointId: r.endpointId, requests: [] }));
    e.requests.push(r);
  }
  const all = [...byEndpoint.values()].sort((a, b) => a.endpointId.localeCompare(b.endpointId));
  const engines = all.filter((e) => !providers.has(endpointName(e.endpointId)));
  const hosted = all.filter((e) => providers.has(endpointName(e.endpointId)));
  print(`log ${opts.logs.map((f) => basename(f)).join(', ')}: ${logged.length} requests served ok in one attempt; ${engines.length} engine endpoint(s) on the experiment's replicas, ${hosted.length} hosted provider(s)`);

  const providerReport = (e: EndpointRequests, override?: CalibrationFile['providers'][string]): EndpointReport => {
    const p = providers.get(endpointName(e.endpointId))!;
    const q = (f: { quantile(u: number): number }, scale = 1) => PERCENTILES.map((u) => f.quantile(u) * scale);
    let predicted: Record<string, (number | null)[]>;
    if (override) {
      const t = override.ttft;
      predicted = { ttft: [t.p50_ms, t.p90_ms, t.p99_ms], tpot: [override.tpot.p50_ms, override.tpot.p90_ms, null] };
    } else predicted = { ttft: q(p.ttft, p.ttftScale), tpot: q(p.tpot) };
    return { endpointId: e.endpointId, kind: 'provider', requests: e.requests.length, metrics: compareLatencies(measured(e), predicted) };
  };
  const before = [...engineReports(engines, exp.replicas), ...hosted.map((e) => providerReport(e))];
  print('');
  print('with the experiment as configured:');
  print(formatLatencyComparisons(before));
  if (!opts.fit) return { before, fit: null };

  const engine = engines.length > 0 ? fitEngineTerms(engines, exp.replicas) : null;
  const r6 = (v: number) => Number(v.toPrecision(6));
  const calibration: CalibrationFile = {
    source: `switchyard calibrate --fit on ${opts.logs.map((f) => basename(f)).join(', ')} (${logged.length} requests) with ${basename(opts.experiment)}`,
    ...(engine && {
      replicas: {
        ...(engine.overheads && { step_overhead_ms: r6(engine.overheads.stepOverheadMs), per_sequence_overhead_ms: r6(engine.overheads.perSequenceOverheadMs) }),
        api_server: { request_ms: r6(engine.apiServer.requestMs), per_prompt_token_ms: r6(engine.apiServer.perPromptTokenMs), per_output_token_ms: r6(engine.apiServer.perOutputTokenMs) },
      },
    }),
    providers: Object.fromEntries(hosted.map((e) => [endpointName(e.endpointId), providerFit(e)])),
    fit: engine ? { engine_requests: engine.requests, engine_replays: engine.replays, mean_squared_relative_error: engine.loss } : {},
  };
  const fittedReplicas: ReplicasConfig = { ...exp.replicas, ...(calibration.replicas ?? {}) };
  const after = [...engineReports(engines, fittedReplicas), ...hosted.map((e) => providerReport(e, calibration.providers[endpointName(e.endpointId)]))];
  const out = opts.out ?? `${opts.logs[0]!.replace(/\.duckdb$/, '')}.calibration.yaml`;
  writeCalibrationFile(out, calibration);
  print('');
  if (engine) {
    const o = engine.overheads;
    const a = engine.apiServer;
    print(
      `fitted on ${engine.requests} engine requests (${engine.replays} replays): API server ${a.requestMs.toFixed(2)} ms + ${a.perPromptTokenMs.toFixed(5)} ms/prompt token, ${a.perOutputTokenMs.toFixed(4)} ms/output token` +
        (o ? `; step overhead ${o.stepOverheadMs.toFixed(4)} ms + ${o.perSequenceOverheadMs.toFixed(5)} ms/sequence` : '; step overheads not fitted (legacy profile replicas)'),
    );
  }
  print('with the fitted terms:');
  print(formatLatencyComparisons(after));
  print('');
  print(`calibration: ${out}  (use it: calibration: ${basename(out)} in an experiment beside it)`);
  return { before, fit: { engine, after, calibration, out } };
}

/** `switchyard calibrate`. */
export const calibrateCommand: CliCommand = {
  name: 'calibrate',
  summary: 'replay a gateway request log on the engine models: predicted vs measured TTFT/TPOT/E2E; --fit writes a calibration file',
  usage: USAGE,
  async run(args) {
    const { values, positionals } = parseArgs({
      args,
      allowPositionals: true,
      options: { experiment: { type: 'string' }, fit: { type: 'boolean', default: false }, out: { type: 'string' } },
    });
    if (positionals.length === 0) throw new UsageError('calibrate needs a request log (<request-log.duckdb>)');
    if (!values.experiment) throw new UsageError('calibrate needs --experiment <exp.yaml> (its replicas:/providers: model the endpoints)');
    await calibrate({ logs: positionals, experiment: values.experiment, fit: values.fit, ...(values.out !== undefined && { out: values.out }) });
    return 0;
  },
};
