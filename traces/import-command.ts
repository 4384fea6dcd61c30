/** `switchyard trace import <format> <src> <dst>`: converts a public trace to Switchyard's Arrow format. */
import { UsageError, type CliCommand } from '../bin/command.ts';
import { importTrace, isTraceFormat, IMPORT_USAGE, TRACE_FORMATS } from './import.ts';

/** The `trace import` command; prints the import statistics as one JSON line. */
export const traceImportCommand: CliCommand = {
  name: 'trace import',
  summary: `convert a public trace to Switchyard's Arrow format (${TRACE_FORMATS.join(', ')})`,
  usage: IMPORT_USAGE,
  async run(args) {
    const [format, src, dst, ...extra] = args;
    if (!format || !src || !dst || extra.length > 0) throw new UsageError('trace import takes <format> <src> <dst>');
    if (!isTraceFormat(format)) throw new UsageError(`unknown trace format '${format}'; known formats: ${TRACE_FORMATS.join(', ')}`);
    const { meta: _meta, ...stats } = await importTrace(format, src, dst);
    process.stdout.write(`${JSON.stringify(stats)}\n`);
    return 0;
  },
};
