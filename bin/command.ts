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

/**
 * Runs one command with its arguments: `--help` / `-h` print its usage (exit 0); a UsageError
 * from it gets its usage appended.
 * @returns the command's exit code.
 */
export async function runCommand(cmd: CliCommand, args: string[]): Promise<number> {
  if (args.includes('--help') || args.includes('-h')) {
    process.stdout.write(`${cmd.usage}\n`);
    return 0;
  }
  try {
    return await cmd.run(args);
  } catch (err) {
    const parseArgsMistake = (err as { code?: unknown }).code;
    if (err instanceof UsageError || (typeof parseArgsMistake === 'string' && parseArgsMistake.startsWith('ERR_PARSE_ARGS'))) {
      throw new UsageError(`${plainUsageMessage((err as Error).message)}\n\n${cmd.usage}`);
    }
    throw err;
  }
}

/**
 * node's `parseArgs` messages, shortened where they mislead: an unknown option is named with
 * where to look, without node's advice on positionals (which ends in an unbalanced quote).
 * Other messages are returned as they are.
 */
export function plainUsageMessage(message: string): string {
  const unknown = /^Unknown option '([^']*)'\. To specify a positional argument/.exec(message);
  if (unknown) return `unknown option '${unknown[1]}'; the command's options are listed below (a file name starting with '-' goes after '--')`;
  return message;
}

/**
 * Runs `main` as the program: its result is the exit code; an error is printed as one line
 * (`switchyard: …`, the stack only with SWITCHYARD_DEBUG set), exit 2 for a UsageError (with
 * `usage()` after a one-line one), else 1.
 */
export async function runProgram(main: () => Promise<number>, usage: (() => string) | null): Promise<void> {
  try {
    process.exitCode = await main();
  } catch (err) {
    const e = err as Error;
    process.stderr.write(`switchyard: ${e.message}\n`);
    if (usage && e instanceof UsageError && !e.message.includes('\n')) process.stderr.write(`\n${usage()}`);
    if (process.env.SWITCHYARD_DEBUG) process.stderr.write(`${e.stack}\n`);
    process.exitCode = e instanceof UsageError ? 2 : 1;
  }
}
