// Keeps core/ sans-I/O and deterministic: no clocks, timers, Math.random, environment, I/O, or
// imports of the drivers. A violation names the file and line.
import { readdirSync, readFileSync, statSync } from 'node:fs';
import { join, relative } from 'node:path';
import { describe, expect, it } from 'vitest';

const root = join(import.meta.dirname, '..');

function tsFiles(dir: string): string[] {
  return readdirSync(dir).flatMap((name) => {
    const p = join(dir, name);
    return statSync(p).isDirectory() ? tsFiles(p) : p.endsWith('.ts') ? [p] : [];
  });
}

const FORBIDDEN: Array<[RegExp, string]> = [
  [/Math\.random/, 'Math.random (take an Rng)'],
  [/Date\.now|new Date\(|performance\.now|process\.hrtime/, 'a clock (take nowMs)'],
  [/setTimeout|setInterval|setImmediate|queueMicrotask/, 'a timer (return a wait_until action)'],
  [/process\.env|process\.argv/, 'the environment (drivers pass validated values)'],
  [/from ['"]node:/, 'a node: module (I/O belongs in drivers)'],
  [/\bfetch\(|\brequire\(/, 'I/O or require'],
  [/from ['"]\.\.\/(\.\.\/)*(simulator|gateway|traces|notebooks-web)\//, 'a driver import (dependencies point into core/)'],
  [/from ['"](undici|uWebSockets|@trufflesuite|@duckdb|apache-arrow|pino|prom-client|@opentelemetry)/, 'an I/O library'],
];

describe('core/ is sans-I/O and deterministic', () => {
  const files = tsFiles(join(root, 'core'));
  it('has source files to check', () => expect(files.length).toBeGreaterThan(0));
  for (const file of files) {
    it(relative(root, file), () => {
      const problems: string[] = [];
      readFileSync(file, 'utf8')
        .split('\n')
        .forEach((line, i) => {
          const code = line.replace(/\/\/.*$/, '');
          if (/^\s*\*/.test(code)) return; // docstring line
          for (const [re, what] of FORBIDDEN) if (re.test(code)) problems.push(`${relative(root, file)}:${i + 1}: ${what}: ${line.trim()}`);
        });
      expect(problems).toEqual([]);
    });
  }
});
