/**
 * `switchyard emulate` — runs one engine emulator (an OpenAI-compatible server backed by the
 * simulator's engine model, or in echo mode) until Ctrl-C. Every fault knob is a flag.
 */
import { parseArgs } from 'node:util';
import { UsageError, type CliCommand } from '../../bin/command.ts';
import { startEmulator } from './emulator.ts';
import { FaultKnobsSchema, type FaultKnobs } from './faults.ts';

const KNOBS = Object.keys(FaultKnobsSchema.shape) as Array<keyof FaultKnobs>;
const flag = (k: string) => k.replaceAll('_', '-');

const USAGE = `usage: switchyard emulate --port N [--host ADDR] [--mode engine|echo] [--engine-profile NAME]
       [--api-key KEY] [--seed N] [--default-output-tokens N] [--max-num-seqs N] [--kv-blocks N]
       [fault knobs]

An OpenAI- and Anthropic-compatible upstream that runs the simulator's vLLM engine model in
wall-clock time and streams one chunk per token; --mode echo answers "ok" at once. It serves
  POST /v1/chat/completions, /v1/completions, /v1/responses, /v1/embeddings, /v1/rerank,
       /v1/messages, /v1/messages/count_tokens, /tokenize,
       /v1/images/generations, /v1/images/edits, /v1/audio/transcriptions,
       /v1/audio/translations, /v1/audio/speech, /v1/videos
  GET  /v1/models, /v1/usage, /v1/videos/{id}[/content]
Knobs can also be changed while it runs: PUT /emulator/faults with JSON; GET /emulator/records
lists what it received.

fault knobs: ${KNOBS.map((k) => `--${flag(k)}`).join(', ')}
  (rates in 0..1; --disconnect-after-tokens 0 drops the stream right after the role preamble)`;

/** `switchyard emulate --port N [--mode echo|engine] [fault knobs…]`: one engine emulator. */
export const emulateCommand: CliCommand = {
  name: 'emulate',
  summary: 'run an engine emulator: an OpenAI-compatible upstream on the simulated vLLM model, with fault knobs',
  usage: USAGE,
  async run(args) {
    const knobOptions = Object.fromEntries(KNOBS.map((k) => [flag(k), { type: 'string' as const }]));
    const { values } = parseArgs({
      args,
      options: {
        port: { type: 'string' },
        host: { type: 'string' },
        mode: { type: 'string' },
        'engine-profile': { type: 'string' },
        'api-key': { type: 'string' },
        seed: { type: 'string' },
        'default-output-tokens': { type: 'string' },
        'max-num-seqs': { type: 'string' },
        'kv-blocks': { type: 'string' },
        ...knobOptions,
      },
    });
    const v = values as Record<string, string | undefined>;
    const num = (name: string): number | undefined => {
      const s = v[name];
      if (s === undefined) return undefined;
      const n = Number(s);
      if (!Number.isFinite(n)) throw new UsageError(`--${name} must be a number, got '${s}'`);
      return n;
    };
    const port = num('port');
    if (port === undefined) throw new UsageError('emulate needs --port (0 picks a free one)');
    const mode = v.mode ?? 'engine';
    if (mode !== 'engine' && mode !== 'echo') throw new UsageError(`--mode must be engine or echo, got '${mode}'`);
    const faults: Record<string, number> = {};
    for (const k of KNOBS) {
      const n = num(flag(k));
      if (n !== undefined) faults[k] = n;
    }
    const engine: Record<string, number> = {};
    if (num('max-num-seqs') !== undefined) engine.max_num_seqs = num('max-num-seqs')!;
    if (num('kv-blocks') !== undefined) engine.kv_blocks = num('kv-blocks')!;
    const em = await startEmulator({
      port,
      mode,
      faults: faults as Partial<FaultKnobs>,
      engine,
      apiKey: v['api-key'] ?? null,
      ...(v.host !== undefined && { host: v.host }),
      ...(v['engine-profile'] !== undefined && { engineProfile: v['engine-profile'] }),
      ...(num('seed') !== undefined && { seed: num('seed')! }),
      ...(num('default-output-tokens') !== undefined && { defaultOutputTokens: num('default-output-tokens')! }),
    });
    process.stdout.write(`switchyard emulator (${em.mode}) on ${em.baseUrl} — Ctrl-C to stop\n`);
    await new Promise<void>((resolve) => {
      process.once('SIGINT', () => resolve());
      process.once('SIGTERM', () => resolve());
    });
    await em.close();
    return 0;
  },
};
