/**
 * The gateway's request log, off the gateway: what one row costs on each side of the writer
 * thread, and what its prefix hashes cost.
 *
 *   npx tsx bench/request-log.bench.ts [--rows 50000]
 *
 * 1. `append`: the gateway thread's `RequestLog.append` (columns, plus a post to the writer
 *    every 256 rows), ns per row.
 * 2. `writer`: from the first append until `close()` has every row committed, µs per row — the
 *    writer thread's cost (DuckDB data chunks, a commit per 4,000 rows) while the gateway thread
 *    mostly waits, on its own core.
 * 3. `prefix hashes`: `prefixBlockHashes` of a short chat prompt and of a 16 KiB one (8 blocks),
 *    next to the same chain computed with a `createHash` object per block in the same run (what
 *    the gateway did before), ns per prompt.
 * Prints one JSON line per case. Used by `npm run bench` (`runRequestLogBench`).
 */
import { createHash } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { parseArgs } from 'node:util';
import { requestLogMemoryLimitMb } from '../gateway/config/gateway-settings.ts';
import type { RequestLogRow } from '../gateway/request-log/log-row.ts';
import { prefixBlockHashes, PREFIX_BLOCK_BYTES, serializedPrompt } from '../gateway/request-log/prefix-hashes.ts';
import { RequestLog } from '../gateway/request-log/request-log.ts';

/** One printed case. */
export interface RequestLogBenchLine {
  bench: string;
  [k: string]: string | number;
}

/** The same chain as `prefixBlockHashes`, with a `createHash` object per block (the reference). */
function hashesWithObjects(prompt: string): number[] {
  const bytes = Buffer.from(prompt, 'utf8');
  const out: number[] = [];
  const prev = Buffer.alloc(4);
  for (let off = 0; off < bytes.length; off += PREFIX_BLOCK_BYTES) {
    const h = createHash('sha256').update(prev).update(bytes.subarray(off, Math.min(off + PREFIX_BLOCK_BYTES, bytes.length))).digest();
    h.copy(prev, 0, 0, 4);
    out.push(h.readUInt32BE(0) & 0x7fffffff);
  }
  return out;
}

function nsPer(n: number, f: (i: number) => number): number {
  let sink = 0;
  for (let i = 0; i < Math.min(n, 2_000); i++) sink += f(i); // warm-up
  const t = process.hrtime.bigint();
  for (let i = 0; i < n; i++) sink += f(i);
  const ns = Number(process.hrtime.bigint() - t) / n;
  if (sink === -1) console.log(sink);
  return ns;
}

/**
 * Runs the three cases and returns their lines (also printed when `print`).
 * @param rows rows appended in the append/writer cases (≥ 1).
 */
export async function runRequestLogBench(rows = 50_000, print = true): Promise<RequestLogBenchLine[]> {
  const dir = mkdtempSync(join(tmpdir(), 'switchyard-log-bench-'));
  const lines: RequestLogBenchLine[] = [];
  try {
    const prompt = serializedPrompt({ messages: [{ role: 'user', content: 'Say ok.' }] });
    const base: RequestLogRow = {
      arrivalUnixMs: Date.now(),
      requestId: '',
      sessionId: null,
      callerId: 'bench',
      model: 'bench',
      inputTokens: 10,
      outputTokens: 1,
      hashIds: prefixBlockHashes(prompt),
      stream: false,
      ttftMs: 1.25,
      e2eMs: 1.5,
      api: 'chat',
      endpointId: 'bench/0',
      attempts: 1,
      httpStatus: 200,
      status: 'ok',
      fallback: false,
      cachedTokens: 0,
      costUsd: 0,
      prompt: null,
      offloadReason: null,
      strategy: 'fixed',
      attemptLog: [{ endpointId: 'm:local-8000', target: null, outcome: 'ok', reason: 'primary', startOffsetMs: 0, endOffsetMs: 12, inputTokens: 10, outputTokens: 1, cachedTokens: 0, costUsd: 0 }],
    };
    const log = await RequestLog.open({ path: join(dir, 'log.duckdb'), bufferRows: rows + 1, batchRows: 256, flushIntervalMs: 100, memoryLimitMb: requestLogMemoryLimitMb({ log_prompts: false }) });
    const t0 = process.hrtime.bigint();
    let appendNs = 0n;
    for (let i = 0; i < rows; i += 1_000) {
      const a = process.hrtime.bigint();
      for (let j = i; j < Math.min(rows, i + 1_000); j++) log.append({ ...base, requestId: `r-${j}`, arrivalUnixMs: base.arrivalUnixMs + j });
      appendNs += process.hrtime.bigint() - a;
      await new Promise((r) => setImmediate(r)); // lets the writer's acknowledgements in, as a live gateway would
    }
    await log.close();
    const totalNs = Number(process.hrtime.bigint() - t0);
    lines.push({ bench: 'request-log/append', rows, nsPerRow: Math.round(Number(appendNs) / rows), dropped: log.droppedRows });
    lines.push({ bench: 'request-log/writer', rows, usPerRow: +(totalNs / rows / 1000).toFixed(2), rowsPerS: Math.round(rows / (totalNs / 1e9)), lost: log.lostRows });

    const long = 'x'.repeat(16 * 1024);
    for (const [name, p] of [['short chat prompt', prompt], ['16 KiB prompt', long]] as const) {
      const oneShot = nsPer(name === 'short chat prompt' ? 100_000 : 10_000, () => prefixBlockHashes(p)[0]!);
      const objects = nsPer(name === 'short chat prompt' ? 100_000 : 10_000, () => hashesWithObjects(p)[0]!);
      if (hashesWithObjects(p).join() !== prefixBlockHashes(p).join()) throw new Error('prefix hash chains differ');
      lines.push({ bench: 'request-log/prefix-hashes', prompt: name, blocks: prefixBlockHashes(p).length, nsOneShot: Math.round(oneShot), nsHashObjects: Math.round(objects), ratio: +(oneShot / objects).toFixed(2) });
    }
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
  if (print) for (const l of lines) console.log(JSON.stringify(l));
  return lines;
}

if (process.argv[1] !== undefined && resolve(process.argv[1]) === import.meta.filename) {
  const { values } = parseArgs({ options: { rows: { type: 'string', default: '50000' } } });
  await runRequestLogBench(Math.max(1, Number(values.rows)));
}
