/**
 * The shape of one `switchyard` subcommand. Each command lives beside the code it drives
 * (`simulator/sim-command.ts`, `traces/import-command.ts`, …) and is listed once in `bin/cli.ts`.
 */
export interface CliCommand {
  /** The word after `switchyard` (may contain a space for a two-word command, e.g. `trace import`). */
  readonly name: string;
  /** One line for the command list. */
  readonly summary: string;
  /** Usage line(s) shown with `--help` and on a usage error. */
  readonly usage: string;
  /** Runs the command with the arguments after its name. Resolves to the exit code. */
  run(args: string[]): Promise<number>;
}

/** A mistake in the command line: printed with the command's usage, exit code 2. */
export class UsageError extends Error {}
