/**
 * `switchyard` command dispatcher: finds the command by name, runs it, and prints errors as one
 * line (no stack trace unless SWITCHYARD_DEBUG is set). Commands are listed in `commands.ts`.
 */
import { runCommand, runProgram, UsageError } from './command.ts';
import { COMMANDS } from './commands.ts';

function usage(): string {
  const width = Math.max(...COMMANDS.map((c) => c.name.length));
  return `usage: switchyard <command> [options]\n\ncommands:\n${COMMANDS.map((c) => `  ${c.name.padEnd(width)}  ${c.summary}`).join('\n')}\n\n'switchyard <command> --help' shows a command's options.\n`;
}

/**
 * Usage of a command group such as `trace` (the first word of two-word commands): its
 * subcommands with their summaries, or null when no command starts with `word`.
 */
function groupUsage(word: string | undefined): string | null {
  if (word === undefined) return null;
  const subs = COMMANDS.filter((c) => c.name.split(' ').length > 1 && c.name.split(' ')[0] === word);
  if (subs.length === 0) return null;
  const width = Math.max(...subs.map((c) => c.name.length));
  return `usage: switchyard ${word} <${subs.map((c) => c.name.split(' ').slice(1).join(' ')).join('|')}> [options]\n\ncommands:\n${subs.map((c) => `  ${c.name.padEnd(width)}  ${c.summary}`).join('\n')}\n\n'switchyard ${word} <command> --help' shows a command's options.\n`;
}

async function main(argv: string[]): Promise<number> {
  if (argv.length === 0 || argv[0] === '-h' || argv[0] === '--help' || argv[0] === 'help') {
    process.stdout.write(usage());
    return argv.length === 0 ? 2 : 0;
  }
  // Longest name first, so `trace import` wins over a hypothetical `trace`.
  const entry = [...COMMANDS].sort((a, b) => b.name.length - a.name.length).find((c) => argv.slice(0, c.name.split(' ').length).join(' ') === c.name);
  if (!entry) {
    // `switchyard trace`, `switchyard trace --help`: list the group's subcommands.
    const group = groupUsage(argv[0]);
    if (group !== null) {
      const rest = argv.slice(1);
      if (rest.length === 0 || rest.every((a) => a === '--help' || a === '-h')) {
        process.stdout.write(group);
        return rest.length === 0 ? 2 : 0;
      }
      throw new UsageError(`unknown command '${argv[0]} ${rest[0]}'\n\n${group.trimEnd()}`);
    }
    throw new UsageError(`unknown command '${argv[0]}'`);
  }
  const cmd = await entry.load();
  return runCommand(cmd, argv.slice(cmd.name.split(' ').length));
}

await runProgram(() => main(process.argv.slice(2)), usage);
