import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { DuckDBInstance } from '@duckdb/node-api';
import { describe, expect, it } from 'vitest';
import { buildSource, SOURCES } from '../../../simulator/engine-build/build-operator-tables.ts';
import { loadOperatorTables, OPERATOR_TABLES_DIR } from '../../../simulator/engine/operator-tables.ts';
import { statSync, readdirSync } from 'node:fs';

/** The raw A100 operator data and Vidur rows, committed beside the tables (operator-tables/source/SOURCE.txt). */
const source = join(OPERATOR_TABLES_DIR, 'source');

describe('committed operator tables', () => {
  it('stay small and carry their provenance', () => {
    const total = readdirSync(OPERATOR_TABLES_DIR).reduce((s, f) => s + statSync(join(OPERATOR_TABLES_DIR, f)).size, 0);
    expect(total).toBeLessThan(3 * 2 ** 20);
    expect(existsSync(join(OPERATOR_TABLES_DIR, 'SOURCE.txt'))).toBe(true);
    const t = loadOperatorTables('h100_sxm', 'sglang', '0.5.9');
    expect(t.source.license).toBe('Apache-2.0');
    expect(t.device).toBe('NVIDIA H100 80GB HBM3');
  });

  it('a100_sxm-vllm-0.14.0 is what build-operator-tables produces from the committed raw data', async () => {
    const con = await (await DuckDBInstance.create(':memory:')).connect();
    const src = SOURCES.find((s) => s.gpu === 'a100_sxm')!;
    const built = await buildSource(con, source, src);
    con.closeSync();
    expect(JSON.parse(JSON.stringify(built))).toEqual(loadOperatorTables(src.gpu, src.engine, src.engineVersion));
  });
});
