/**
 * The `switchyard` command list. Each command's module is imported only when it runs, so a
 * gateway process never loads the simulator, Arrow, Vite or DuckDB's client (about 45 MB of
 * resident memory, and a slower start). `name` and `summary` repeat the module's own so the list
 * prints without loading anything; `test/bin/commands.test.ts` keeps them equal.
 */
import type { CliCommand } from './command.ts';

/** A command as the dispatcher lists it. */
export interface CommandEntry {
  /** As `CliCommand.name`. */
  readonly name: string;
  /** As `CliCommand.summary`. */
  readonly summary: string;
  /** Imports the command's module. */
  load(): Promise<CliCommand>;
}

/** Every command, in the order `switchyard --help` lists them. Add a command here. */
export const COMMANDS: readonly CommandEntry[] = [
  {
    name: 'sim',
    summary: 'replay a trace through the routing strategies (and sweep grid) of an experiment; results in DuckDB',
    load: async () => (await import('../simulator/sim-command.ts')).simCommand,
  },
  {
    name: 'compare',
    summary: 'paired comparison of runs against a baseline, with bootstrap intervals over seeds',
    load: async () => (await import('../simulator/compare-command.ts')).compareCommand,
  },
  {
    name: 'merge',
    summary: 'merge the Parquet files of a sharded sweep (sim --shard) or plan round (plan --shard) into one results DuckDB file',
    load: async () => (await import('../simulator/results/merge.ts')).mergeCommand,
  },
  {
    name: 'plan',
    summary: 'capacity planner: max rate, fewest replicas and cheapest offload settings that hold an SLO, with intervals',
    load: async () => (await import('../simulator/plan/plan-command.ts')).planCommand,
  },
  {
    name: 'trace import',
    summary: "convert a trace to Switchyard's Arrow format (mooncake, azure, or jsonl/csv/json with --map or --preset)",
    load: async () => (await import('../traces/import-command.ts')).traceImportCommand,
  },
  {
    name: 'trace export',
    summary: 'write the gateway request log (DuckDB) as an Arrow trace the simulator replays',
    load: async () => (await import('../gateway/request-log/export-command.ts')).traceExportCommand,
  },
  {
    name: 'calibrate',
    summary: 'replay a gateway request log on the engine models: predicted vs measured TTFT/TPOT/E2E; --fit writes a calibration file',
    load: async () => (await import('../simulator/calibrate/calibrate-command.ts')).calibrateCommand,
  },
  {
    name: 'dashboard',
    summary: 'serve the results dashboard (Vite + d3) over DuckDB results files, and with --gateway URL the operator console of a running gateway',
    load: async () => (await import('../notebooks-web/dashboard-command.ts')).dashboardCommand,
  },
  {
    name: 'gateway',
    summary: 'run the OpenAI-compatible gateway (uWebSockets.js + undici) on a configuration',
    load: async () => (await import('../gateway/gateway-command.ts')).gatewayCommand,
  },
  {
    name: 'demo',
    summary: 'run the example gateway over three engine emulators (what `npm run gateway` starts)',
    load: async () => (await import('./demo-command.ts')).demoCommand,
  },
  {
    name: 'emulate',
    summary: 'run an engine emulator: an OpenAI-compatible upstream on the simulated vLLM model, with fault knobs',
    load: async () => (await import('../simulator/emulator/emulate-command.ts')).emulateCommand,
  },
  {
    name: 'validate',
    summary: 'check a gateway configuration directory; exits non-zero naming file, field and fix',
    load: async () => (await import('../gateway/gateway-command.ts')).validateCommand,
  },
  {
    name: 'validate-sim',
    summary: 'replay measured GPU serving points on the engine models; writes simulator/VALIDATION.md',
    load: async () => (await import('../simulator/engine/validate-sim-command.ts')).validateSimCommand,
  },
];
