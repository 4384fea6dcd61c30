// The one-CPU GC advice: given only when the process may use one CPU and node runs without the
// flag; and the flag it names is one this node accepts on its command line.
import { execFileSync } from 'node:child_process';
import { describe, expect, it } from 'vitest';
import { SINGLE_THREADED_GC_FLAG, singleCoreGcAdvice } from '../../gateway/single-core-gc.ts';

describe('singleCoreGcAdvice', () => {
  it('advises the flag on one CPU without it, and says nothing otherwise', () => {
    expect(singleCoreGcAdvice(1, [])).toContain(SINGLE_THREADED_GC_FLAG);
    expect(singleCoreGcAdvice(1, ['--max-old-space-size=512'])).toContain('node --single-threaded-gc bin/switchyard.mjs gateway');
    expect(singleCoreGcAdvice(1, [SINGLE_THREADED_GC_FLAG])).toBeNull();
    expect(singleCoreGcAdvice(1, ['--single_threaded_gc'])).toBeNull();
    expect(singleCoreGcAdvice(1, ['--single-threaded'])).toBeNull();
    expect(singleCoreGcAdvice(2, [])).toBeNull();
    expect(singleCoreGcAdvice(16, [])).toBeNull();
  });

  it('names a flag this node accepts', () => {
    const seen = execFileSync(process.execPath, [SINGLE_THREADED_GC_FLAG, '-p', `process.execArgv.includes('${SINGLE_THREADED_GC_FLAG}')`], { encoding: 'utf8' });
    expect(seen.trim()).toBe('true');
  });
});
