/**
 * Entry point of `switchyard trace import <format> <src> <dst>`: picks the converter for a
 * source format and writes an Arrow trace (schema in `traces/README.md`).
 */
import { mkdir } from 'node:fs/promises';
import { dirname } from 'node:path';
import { importAzure } from './import-azure.ts';
import { importMooncake } from './import-mooncake.ts';
import type { ImportStats } from './import-stats.ts';

export type { ImportStats } from './import-stats.ts';

/** Source formats `importTrace` understands. */
export const TRACE_FORMATS = ['mooncake', 'azure'] as const;

/** One source format name. */
export type TraceFormat = (typeof TRACE_FORMATS)[number];

/** Whether `s` names a supported source format (for CLI argument checking). */
export function isTraceFormat(s: string): s is TraceFormat {
  return (TRACE_FORMATS as readonly string[]).includes(s);
}

/** Help text for the CLI command. */
export const IMPORT_USAGE = `Usage: switchyard trace import <format> <src> <dst>

Convert a public request trace into a Switchyard Arrow trace file (schema: traces/README.md).

  <format>  mooncake  Mooncake FAST'25 JSON Lines (timestamp, input_length, output_length,
                      hash_ids); sessions derived from prefix-block hashes
            azure     Azure LLM inference trace 2023 CSV (TIMESTAMP,ContextTokens,
                      GeneratedTokens); no sessions, no hashes
  <src>     source file; a SOURCE.txt beside it supplies the 'source' metadata
  <dst>     Arrow IPC file to write (overwritten; missing folders are created)

Example:
  switchyard trace import mooncake traces/samples/mooncake-fast25/conversation_trace.head-300.jsonl /tmp/conv.arrow`;

/**
 * Converts `src` (in `format`) to the Arrow trace `dst`, creating `dst`'s folder if needed.
 * @returns counts and sums of what was written (rows, sessions, token sums, hash-id count,
 *   time span in ms, and the metadata).
 * @throws Error for an unknown format; for a malformed source row
 *   `<src>: line N (1-based), field <field>: <problem>`; file system errors as raised.
 */
export async function importTrace(format: TraceFormat, src: string, dst: string): Promise<ImportStats> {
  if (!isTraceFormat(format)) {
    throw new Error(`unknown trace format '${String(format)}'; allowed: ${TRACE_FORMATS.join(', ')}`);
  }
  await mkdir(dirname(dst), { recursive: true });
  return format === 'mooncake' ? importMooncake(src, dst) : importAzure(src, dst);
}
