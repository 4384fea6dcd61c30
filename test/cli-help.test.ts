// `switchyard` help output: command groups (`trace`) list their subcommands; `sim --help`
// documents every option; a negative `--seed` parses; the lazy command list matches each module.
import { spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { plainUsageMessage } from '../bin/command.ts';
import { COMMANDS } from '../bin/commands.ts';

const repoRoot = join(import.meta.dirname, '..');

function cli(...args: string[]) {
  const r = spawnSync(process.execPath, [join(repoRoot, 'bin', 'switchyard.mjs'), ...args], { cwd: repoRoot, encoding: 'utf8', timeout: 60_000 });
  return { code: r.status, stdout: r.stdout, stderr: r.stderr };
}

describe('switchyard CLI help', () => {
  it("the command list's names and summaries are the modules' own (the list loads no module)", async () => {
    for (const entry of COMMANDS) {
      const cmd = await entry.load();
      expect({ name: cmd.name, summary: cmd.summary }).toEqual({ name: entry.name, summary: entry.summary });
    }
  }, 60_000);

  it('trace --help lists trace import and trace export (exit 0); bare trace lists them too (exit 2)', () => {
    const help = cli('trace', '--help');
    expect(help.code).toBe(0);
    expect(help.stdout).toMatch(/usage: switchyard trace <import\|export>/);
    expect(help.stdout).toMatch(/^ {2}trace import {2}\S/m);
    expect(help.stdout).toMatch(/^ {2}trace export {2}\S/m);
    expect(help.stderr).not.toMatch(/unknown command/);
    const bare = cli('trace');
    expect(bare.code).toBe(2);
    expect(bare.stdout).toMatch(/trace import[\s\S]*trace export/);
  }, 60_000);

  it('sim --help has one line per option saying what it does', () => {
    const { code, stdout } = cli('sim', '--help');
    expect(code).toBe(0);
    expect(stdout).toMatch(/^usage: switchyard sim <experiment\.yaml>/);
    for (const opt of ['--seed N', '--output FILE', '--jobs N', '--no-progress']) {
      expect(stdout).toMatch(new RegExp(`^ {2}${opt} +\\S`, 'm'));
    }
    expect(stdout).toMatch(/--seed=-1/);
  }, 60_000);

  it('--seed -1 parses as a negative seed (not "argument is ambiguous")', () => {
    const dir = mkdtempSync(join(tmpdir(), 'switchyard-cli-'));
    const file = join(dir, 'x.yaml');
    // A missing trace stops the run right after the arguments are parsed.
    writeFileSync(file, `name: x\ntrace: missing.arrow\nmodel: m\nreplicas: { count: 1, profile: llama2-70b-h100-tp4 }\nruns:\n  - strategy: fixed\noutput: ${join(dir, 'x.duckdb')}\n`);
    const r = cli('sim', file, '--seed', '-1', '--no-progress');
    expect(r.stderr).not.toMatch(/ambiguous/);
    expect(r.stdout).toMatch(/^seed -1 /);
    expect(r.stderr).toMatch(/trace: file not found: .*missing\.arrow \(paths are relative to the experiment file\)/);
    expect(r.code).toBe(1);
  }, 60_000);

  it('an unknown option is named plainly, with the usage and exit 2 (not node\'s advice on positionals)', () => {
    const r = cli('sim', 'x.yaml', '--bogus');
    expect(r.code).toBe(2);
    expect(r.stderr).toMatch(/^switchyard: unknown option '--bogus'; the command's options are listed below/);
    expect(r.stderr).toMatch(/usage: switchyard sim <experiment\.yaml>/);
    expect(r.stderr).not.toMatch(/To specify a positional argument/);
    // The rewrite touches only that message.
    expect(plainUsageMessage("Option '--seed <value>' argument missing")).toBe("Option '--seed <value>' argument missing");
    expect(plainUsageMessage(`Unknown option '--x'. To specify a positional argument starting with a '-', place it at the end of the command after '--', as in '-- "--x"`)).toMatch(/^unknown option '--x';/);
  }, 60_000);

  it('a reader that closes the pipe early ends the command quietly (no EPIPE stack, exit 0)', () => {
    // `| true` closes the read end at once, before validate prints.
    const r = spawnSync('bash', ['-c', `"${process.execPath}" bin/switchyard.mjs validate gateway/example | true; echo "exit=\${PIPESTATUS[0]}"`], { cwd: repoRoot, encoding: 'utf8', timeout: 60_000 });
    expect(r.stderr).not.toMatch(/EPIPE/);
    expect(r.stdout.trim()).toBe('exit=0');
  }, 60_000);

  it('trace import names a missing source, a directory, and a preset given as the format', () => {
    const missing = cli('trace', 'import', 'mooncake', '/nonexistent/trace.jsonl', join(tmpdir(), 'never.arrow'));
    expect(missing.code).toBe(2);
    expect(missing.stderr).toContain('<src> /nonexistent/trace.jsonl: no such file');
    expect(cli('trace', 'import', 'mooncake', 'traces', join(tmpdir(), 'never.arrow')).stderr).toContain('<src> traces is a directory');
    expect(cli('trace', 'import', 'burstgpt', 'x.csv', join(tmpdir(), 'never.arrow')).stderr).toContain('write: switchyard trace import csv <src> <dst> --preset burstgpt');
  }, 60_000);

  it('emulate --help lists every endpoint the emulator serves', () => {
    const help = cli('emulate', '--help').stdout;
    const src = readFileSync(join(repoRoot, 'simulator', 'emulator', 'emulator.ts'), 'utf8');
    const paths = [...src.matchAll(/app\.(?:post|get)\('(\/(?:v1|tokenize)[^'*]*)/g)].map((m) => m[1]!.replace(/^\/v1\/videos\/$/, '/v1/videos/{id}'));
    expect(paths.length).toBeGreaterThan(10);
    for (const p of paths) expect(help, p).toContain(p);
  });
});
