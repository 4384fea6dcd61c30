/**
 * `switchyard demo` — the example set-up in one command: starts the engine emulators listed in
 * `emulators.yaml` beside a gateway configuration (the demo's upstreams), then runs
 * `switchyard gateway` on that configuration as a child process, and stops the emulators after
 * the gateway has drained. The gateway itself knows nothing of emulators: this command, in the
 * CLI layer, is the only place where the simulator's emulator and the gateway meet.
 */
import { spawn } from 'node:child_process';
import { existsSync, readFileSync, statSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parse as parseYaml } from 'yaml';
import { formatYamlSyntaxError, yamlSyntaxReport, type YamlErrorLike } from '../core/index.ts';
import { interpolateEnv } from '../gateway/config/interpolate.ts';
import { startEmulator, type RunningEmulator } from '../simulator/emulator/emulator.ts';
import { EmulatorListSchema, emulatorOptions, type EmulatorSpec } from '../simulator/emulator/emulator-spec.ts';
import { UsageError, type CliCommand } from './command.ts';

const EXAMPLE_DIR = fileURLToPath(new URL('../gateway/example', import.meta.url));

const USAGE = `usage: switchyard demo [--config <dir|models.yaml>] [--emulators <file>] [gateway options…]

Starts the emulators listed in emulators.yaml beside the configuration (default: the bundled
example, gateway/example: two local engine emulators on 8101 and 8102 and an emulated hosted API
on 8103), then 'switchyard gateway' on the configuration; every other option goes to the gateway
(see 'switchyard gateway --help'). Ctrl-C / SIGTERM drain the gateway, then stop the emulators;
SIGHUP is passed on to the gateway (configuration reload).
  --config     gateway configuration (default gateway/example)
  --emulators  emulator list (default emulators.yaml in the configuration's directory)`;

/**
 * Reads and validates an emulator list, `${VAR}`s resolved from `env`.
 * @throws UsageError naming the file and the field of the first problem.
 */
export function loadEmulatorList(file: string, env: Readonly<Record<string, string | undefined>> = process.env): EmulatorSpec[] {
  if (!existsSync(file)) throw new UsageError(`${file}: no such emulator list; give one with --emulators <file>`);
  const text = readFileSync(file, 'utf8');
  let raw: unknown;
  try {
    raw = parseYaml(text);
  } catch (e) {
    throw new UsageError(formatYamlSyntaxError(file, yamlSyntaxReport(text, e as YamlErrorLike)));
  }
  const { value, missing } = interpolateEnv(raw, env);
  if (missing.length > 0) throw new UsageError(`${file}: ${missing[0]!.path.join('.')}: environment variable ${missing[0]!.variable} is not set; set it or write \${${missing[0]!.variable}:-default}`);
  const parsed = EmulatorListSchema.safeParse(value);
  if (!parsed.success) {
    const issue = parsed.error.issues[0]!;
    throw new UsageError(`${file}: ${issue.path.join('.') || '(top level)'}: ${issue.message}`);
  }
  return parsed.data.emulators;
}

/** Splits `--config` and `--emulators` (either `--x v` or `--x=v`) from the options meant for the gateway. */
function splitArgs(args: string[]): { config: string | undefined; emulators: string | undefined; rest: string[] } {
  let config: string | undefined;
  let emulators: string | undefined;
  const rest: string[] = [];
  for (let i = 0; i < args.length; i++) {
    const a = args[i]!;
    const m = /^--(config|emulators)(?:=(.*))?$/.exec(a);
    if (!m) {
      rest.push(a);
      continue;
    }
    const v = m[2] ?? args[++i];
    if (v === undefined) throw new UsageError(`--${m[1]} needs a value`);
    if (m[1] === 'config') config = v;
    else emulators = v;
  }
  return { config, emulators, rest };
}

/** `switchyard demo`: the example's emulators and a gateway over them. */
export const demoCommand: CliCommand = {
  name: 'demo',
  summary: 'run the example gateway over three engine emulators (what `npm run gateway` starts)',
  usage: USAGE,
  async run(args) {
    const { config: given, emulators: listFile, rest } = splitArgs(args);
    const config = given ?? EXAMPLE_DIR;
    if (!existsSync(config)) throw new UsageError(`--config ${config}: no such file or directory`);
    const dir = statSync(config).isDirectory() ? config : dirname(config);
    const specs = loadEmulatorList(listFile ?? join(dir, 'emulators.yaml'));

    const running: RunningEmulator[] = [];
    const closeAll = async () => {
      for (const em of running.splice(0)) await em.close();
    };
    try {
      for (const s of specs) {
        const em = await startEmulator(emulatorOptions(s));
        running.push(em);
        process.stdout.write(`emulator (${em.mode}${s.api_key ? ', key required' : ''}) on ${em.baseUrl}\n`);
      }
    } catch (e) {
      await closeAll();
      throw e;
    }

    // The gateway runs as `switchyard gateway` does on its own (from its bundle, without tsx).
    const child = spawn(process.execPath, [fileURLToPath(new URL('./switchyard.mjs', import.meta.url)), 'gateway', '--config', config, ...rest], { stdio: 'inherit' });
    // Ctrl-C reaches the whole process group; the gateway drains on SIGINT or SIGTERM (once
    // each), so a forwarded SIGTERM is harmless when it already has the SIGINT.
    const stop = () => child.kill('SIGTERM');
    const hup = () => child.kill('SIGHUP');
    process.on('SIGINT', stop);
    process.on('SIGTERM', stop);
    process.on('SIGHUP', hup);
    const code = await new Promise<number>((resolve) => {
      child.once('exit', (c, signal) => resolve(c ?? (signal ? 1 : 0)));
      child.once('error', () => resolve(1));
    });
    process.off('SIGINT', stop);
    process.off('SIGTERM', stop);
    process.off('SIGHUP', hup);
    await closeAll();
    return code;
  },
};
