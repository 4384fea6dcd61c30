/**
 * `switchyard` command dispatcher. Each command lives beside the code it drives; this file only
 * parses arguments (node's parseArgs) and prints errors without stack traces.
 */
import { parseArgs } from 'node:util';
import { runExperiment } from '../simulator/sim-command.ts';
import { importTrace, IMPORT_USAGE } from '../traces/import.ts';

const USAGE = `usage: switchyard <command>

commands:
  sim <experiment.yaml> [--seed N] [--output FILE] [--no-progress]
      replay a trace through the routing strategies of an experiment; results in DuckDB
  trace import <format> <src> <dst>
      convert a public trace to Switchyard's Arrow format (formats: mooncake, azure)
`;

async function main(argv: string[]): Promise<number> {
  const [command, ...rest] = argv;
  switch (command) {
    case 'sim': {
      const { values, positionals } = parseArgs({
        args: rest,
        allowPositionals: true,
        options: { seed: { type: 'string' }, output: { type: 'string' }, 'no-progress': { type: 'boolean' } },
      });
      const file = positionals[0];
      if (!file || positionals.length > 1) throw new UsageError('sim takes one experiment file');
      let seed: number | undefined;
      if (values.seed !== undefined) {
        seed = Number(values.seed);
        if (!Number.isInteger(seed)) throw new UsageError(`--seed must be an integer, got '${values.seed}'`);
      }
      await runExperiment(file, {
        ...(seed !== undefined && { seed }),
        ...(values.output !== undefined && { output: values.output }),
        ...(values['no-progress'] && { progress: false }),
      });
      return 0;
    }
    case 'trace': {
      const [sub, format, src, dst, ...extra] = rest;
      if (sub !== 'import' || !format || !src || !dst || extra.length > 0) throw new UsageError(IMPORT_USAGE);
      const stats = await importTrace(format as never, src, dst);
      process.stdout.write(`${JSON.stringify(stats)}\n`);
      return 0;
    }
    case undefined:
    case '-h':
    case '--help':
    case 'help':
      process.stdout.write(USAGE);
      return command === undefined ? 2 : 0;
    default:
      throw new UsageError(`unknown command '${command}'`);
  }
}

class UsageError extends Error {}

try {
  process.exitCode = await main(process.argv.slice(2));
} catch (err) {
  const e = err as Error;
  process.stderr.write(`switchyard: ${e.message}\n`);
  if (e instanceof UsageError) process.stderr.write(`\n${USAGE}`);
  if (process.env.SWITCHYARD_DEBUG) process.stderr.write(`${e.stack}\n`);
  process.exitCode = e instanceof UsageError ? 2 : 1;
}
