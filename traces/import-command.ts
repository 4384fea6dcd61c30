/**
 * `switchyard trace import <format> <src> <dst> [options]`: converts a trace to Switchyard's
 * Arrow format — `mooncake` and `azure` by their own converters, `jsonl`/`csv`/`json` by the
 * generic importer with a column map or a preset (`traces/import/`).
 */
import { parseArgs } from 'node:util';
import { UsageError, type CliCommand } from '../bin/command.ts';
import { GENERIC_FORMATS, importGeneric, parseColumnMap, type GenericFormat, type GenericImportOptions } from './import/generic-import.ts';
import { GENERIC_PRESETS, isPresetName } from './import/generic-presets.ts';
import { importTrace, isTraceFormat, IMPORT_USAGE, TRACE_FORMATS } from './import.ts';
import { statSync } from 'node:fs';
import { mkdir } from 'node:fs/promises';
import { dirname } from 'node:path';

const isGeneric = (s: string): s is GenericFormat => (GENERIC_FORMATS as readonly string[]).includes(s);

const USAGE = `${IMPORT_USAGE}

Any other JSON Lines, CSV or JSON file (generic importer):
  switchyard trace import jsonl|csv|json <src> <dst> --map arrival=COL,input=COL,output=COL[,session=COL,round=COL,prefix_hashes=COL,model=COL,ttft=COL,e2e=COL,itl=COL]
      [--time-unit s|ms] [--arrivals absolute|relative] [--block-size N] [--source-note FILE] [--licence SPDX]
  switchyard trace import <format> <src> <dst> --preset NAME   (options above override the preset's)
  --time-unit     unit of numeric arrival/ttft/e2e/itl values (default ms); date-time text is read as such
  --arrivals      absolute: subtract the earliest (Unix times); relative: already from the start (default)
  --block-size    tokens per prefix_hashes block (required with prefix_hashes)
  --source-note   a note on where the data came from, stored as the file's 'source' metadata
                  (default: SOURCE.txt beside <src>, else the preset's)
  presets:
${Object.entries(GENERIC_PRESETS)
  .map(([name, p]) => `    ${name.padEnd(11)} ${p.format}: ${p.describes}`)
  .join('\n')}`;

/** The `trace import` command; prints the import statistics as one JSON line. */
export const traceImportCommand: CliCommand = {
  name: 'trace import',
  summary: `convert a trace to Switchyard's Arrow format (${TRACE_FORMATS.join(', ')}, or jsonl/csv/json with --map or --preset)`,
  usage: USAGE,
  async run(args) {
    const { values, positionals } = parseArgs({
      args,
      allowPositionals: true,
      options: {
        map: { type: 'string' },
        preset: { type: 'string' },
        'time-unit': { type: 'string' },
        arrivals: { type: 'string' },
        'block-size': { type: 'string' },
        'source-note': { type: 'string' },
        licence: { type: 'string' },
      },
    });
    const [format, src, dst, ...extra] = positionals;
    if (!format || !src || !dst || extra.length > 0) throw new UsageError('trace import takes <format> <src> <dst>');
    if (isPresetName(format)) throw new UsageError(`'${format}' is a preset, not a format; write: switchyard trace import ${GENERIC_PRESETS[format].format} <src> <dst> --preset ${format}`);
    if (!isTraceFormat(format) && !isGeneric(format)) throw new UsageError(`unknown trace format '${format}'; known formats: ${[...TRACE_FORMATS, ...GENERIC_FORMATS].join(', ')}`);
    const srcStat = statSync(src, { throwIfNoEntry: false });
    if (!srcStat) throw new UsageError(`<src> ${src}: no such file; give the path of the ${format} trace to convert`);
    if (!srcStat.isFile()) throw new UsageError(`<src> ${src} is a directory; give the ${format} trace file inside it`);
    if (isTraceFormat(format)) {
      if (Object.keys(values).length > 0) throw new UsageError(`--map, --preset and the other options are for the generic formats (${GENERIC_FORMATS.join(', ')}), not ${format}`);
      const { meta: _meta, ...stats } = await importTrace(format, src, dst);
      process.stdout.write(`${JSON.stringify(stats)}\n`);
      return 0;
    }
    let base: Partial<GenericImportOptions> = {};
    if (values.preset !== undefined) {
      if (!isPresetName(values.preset)) throw new UsageError(`unknown preset '${values.preset}'; presets: ${Object.keys(GENERIC_PRESETS).join(', ')}`);
      const p = GENERIC_PRESETS[values.preset];
      if (p.format !== format) throw new UsageError(`preset ${values.preset} reads ${p.format} files; write: switchyard trace import ${p.format} <src> <dst> --preset ${values.preset}`);
      base = { ...p.options, map: p.map, timeUnit: p.timeUnit, arrivals: p.arrivals };
    }
    let map = base.map;
    if (values.map !== undefined) {
      try {
        map = parseColumnMap(values.map);
      } catch (e) {
        throw new UsageError((e as Error).message);
      }
    }
    if (map === undefined) throw new UsageError(`${format} needs --map arrival=…,input=…,output=… or --preset NAME`);
    const unit = values['time-unit'] ?? base.timeUnit ?? 'ms';
    if (unit !== 's' && unit !== 'ms') throw new UsageError(`--time-unit must be s or ms, got '${unit}'`);
    const arrivals = values.arrivals ?? base.arrivals ?? 'relative';
    if (arrivals !== 'absolute' && arrivals !== 'relative') throw new UsageError(`--arrivals must be absolute or relative, got '${arrivals}'`);
    const blockSize = values['block-size'] === undefined ? undefined : Number(values['block-size']);
    if (blockSize !== undefined && !(Number.isInteger(blockSize) && blockSize > 0)) throw new UsageError(`--block-size must be a positive integer (tokens), got '${values['block-size']}'`);
    await mkdir(dirname(dst), { recursive: true });
    const { meta: _meta, ...stats } = await importGeneric(format, src, dst, {
      ...base,
      map,
      timeUnit: unit,
      arrivals,
      ...(blockSize !== undefined && { blockSize }),
      ...(values['source-note'] !== undefined && { sourceNote: values['source-note'] }),
      ...(values.licence !== undefined && { licence: values.licence }),
    });
    process.stdout.write(`${JSON.stringify(stats)}\n`);
    return 0;
  },
};
