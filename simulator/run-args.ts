/**
 * Command-line arguments shared by the commands that run experiments (`sim`, `plan`): one
 * experiment file, `--seed N` (any integer, negative included), `--jobs N` (≥ 1), `--output FILE`
 * and `--no-progress`, plus each command's own options.
 */
import { parseArgs, type ParseArgsConfig } from 'node:util';
import { UsageError } from '../bin/command.ts';
import { resolveShard, type Shard } from './sweep/shard.ts';

/** What every experiment-running command reads from its arguments. */
export interface RunArgs {
  /** The one experiment file named. */
  file: string;
  /** `--seed` (integer), when given. */
  seed?: number;
  /** `--jobs` (integer ≥ 1), when given. */
  jobs?: number;
  /** The parsed option values, the command's own options included. */
  values: Record<string, string | boolean | undefined>;
}

const COMMON_OPTIONS = { seed: { type: 'string' }, output: { type: 'string' }, jobs: { type: 'string' }, 'no-progress': { type: 'boolean' } } as const;

/**
 * Rewrites `--seed -1` as `--seed=-1`: node's parseArgs reads a value starting with '-' after a
 * string option as ambiguous, and a negative seed is a valid seed.
 */
function joinNegativeValues(args: readonly string[]): string[] {
  const out: string[] = [];
  for (let i = 0; i < args.length; i++) {
    const a = args[i]!;
    const next = args[i + 1];
    if ((a === '--seed' || a === '--jobs') && next !== undefined && /^-\d/.test(next)) {
      out.push(`${a}=${next}`);
      i++;
    } else out.push(a);
  }
  return out;
}

/**
 * Parses a run command's arguments.
 * @param command the command's name, for messages (`sim takes exactly one experiment file`).
 * @param extra the command's own options (parseArgs' option shapes).
 * @throws UsageError for an unknown option, a missing value, not exactly one file, a
 *   non-integer `--seed` or a `--jobs` below 1.
 */
export function parseRunArgs(command: string, args: readonly string[], extra: NonNullable<ParseArgsConfig['options']> = {}): RunArgs {
  let parsed;
  try {
    parsed = parseArgs({ args: joinNegativeValues(args), allowPositionals: true, options: { ...COMMON_OPTIONS, ...extra } });
  } catch (err) {
    // parseArgs' own mistakes (unknown option, missing value) are usage errors.
    if ((err as { code?: string }).code?.startsWith('ERR_PARSE_ARGS')) throw new UsageError((err as Error).message);
    throw err;
  }
  const { positionals } = parsed;
  const values = parsed.values as RunArgs['values'];
  const file = positionals[0];
  if (!file || positionals.length > 1) throw new UsageError(`${command} takes exactly one experiment file`);
  const out: RunArgs = { file, values };
  if (values.seed !== undefined) {
    const seed = Number(values.seed);
    if (!Number.isInteger(seed)) throw new UsageError(`--seed must be an integer, got '${values.seed}'`);
    out.seed = seed;
  }
  if (values.jobs !== undefined) {
    const jobs = Number(values.jobs);
    if (!Number.isInteger(jobs) || jobs < 1) throw new UsageError(`--jobs must be an integer ≥ 1, got '${values.jobs}'`);
    out.jobs = jobs;
  }
  return out;
}

/** The `--shard i/N|env` and `--shard-count N` options, as `parseRunArgs`' `extra`. */
export const SHARD_OPTIONS = { shard: { type: 'string' }, 'shard-count': { type: 'string' } } as const;

/**
 * The shard named by `--shard` / `--shard-count` in parsed `values` (sweep/shard.ts
 * `resolveShard`, reading the batch engine's variables from `env` for `--shard env`).
 * @returns undefined without `--shard`.
 * @throws UsageError for `--shard-count` without `--shard`, or a shard that does not resolve.
 */
export function shardFromArgs(values: RunArgs['values'], env: NodeJS.ProcessEnv): Shard | undefined {
  if (values['shard-count'] !== undefined && values.shard === undefined) throw new UsageError('--shard-count goes with --shard env');
  if (values.shard === undefined) return undefined;
  try {
    return resolveShard(values.shard as string, values['shard-count'] as string | undefined, env);
  } catch (err) {
    throw new UsageError((err as Error).message);
  }
}
