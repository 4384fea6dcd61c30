/**
 * Presets of the generic importer for known benchmark and trace outputs: the source layout,
 * column map, time unit, arrival kind and a default source note and licence. Each has a test on
 * a committed sample under `traces/samples/` (a real excerpt where one exists in
 * `shared/traces/`, else a small synthetic file in the format, said so in the sample's README).
 */
import type { ColumnMap, GenericFormat, GenericImportOptions } from './generic-import.ts';

/** A preset: what `--preset NAME` fills in (options on the command line still win). */
export interface GenericPreset {
  readonly format: GenericFormat;
  readonly map: ColumnMap;
  readonly timeUnit: 's' | 'ms';
  readonly arrivals: 'absolute' | 'relative';
  /** What the preset reads, for `--help`. */
  readonly describes: string;
  readonly options: Omit<GenericImportOptions, 'map' | 'timeUnit' | 'arrivals'>;
}

/** The presets by name. */
export const GENERIC_PRESETS = {
  /**
   * LMCache's LMBench multi-round QA benchmark, per-request summary CSV: one row per request
   * with the user (session), question number (round), prompt and generated tokens, TTFT (s) and
   * the Unix time (s) it was launched.
   */
  lmbench: {
    format: 'csv',
    map: { arrival: 'launch_time', input: 'prompt_tokens', output: 'generation_tokens', session: 'user_id', round: 'question_id', ttft: 'ttft' },
    timeUnit: 's',
    arrivals: 'absolute',
    describes: 'LMBench (LMCache) multi-round QA summary CSV: launch_time (Unix s), user_id, question_id, prompt_tokens, generation_tokens, ttft (s)',
    options: { defaultSource: 'LMBench (LMCache, https://github.com/LMCache/LMBench) multi-round QA per-request summary', licence: 'unknown' },
  },
  /**
   * vLLM `benchmark_serving.py --save-result --save-detailed` (also `vllm bench serve`): a JSON
   * object with per-request arrays `input_lens`, `output_lens`, `ttfts` (s) and `itls` (s each).
   * The file does not record when each request was sent: with `request_rate` inf every request
   * was sent at once (arrival 0); for a finite rate the import stops and says so.
   */
  'vllm-bench': {
    format: 'json',
    map: { arrival: 'start_times', input: 'input_lens', output: 'output_lens', ttft: 'ttfts', itl: 'itls' },
    timeUnit: 's',
    arrivals: 'absolute',
    describes: "vLLM benchmark_serving result JSON (--save-detailed): input_lens, output_lens, ttfts, itls (s); arrivals 0 when request_rate is inf",
    options: {
      defaultSource: 'vLLM benchmark_serving result (--save-result --save-detailed)',
      licence: 'unknown',
      engine: 'vllm',
      missingArrivals: (doc) => {
        const rate = doc.request_rate;
        if (rate === 'inf' || rate === Infinity || rate === 'Infinity') return 0;
        return `the result file does not record when each request was sent (request_rate ${JSON.stringify(rate)}); map arrival=<column> if yours has send times, or use a run with --request-rate inf`;
      },
    },
  },
  /** BurstGPT (Wang et al., 2024) CSV: Timestamp (s from the trace start), Model, Request tokens, Response tokens. */
  burstgpt: {
    format: 'csv',
    map: { arrival: 'Timestamp', input: 'Request tokens', output: 'Response tokens', model: 'Model' },
    timeUnit: 's',
    arrivals: 'relative',
    describes: 'BurstGPT CSV: Timestamp (s), Model, Request tokens, Response tokens',
    options: {
      defaultSource: 'BurstGPT (https://github.com/HPMLL/BurstGPT)',
      licence: 'CC-BY-4.0',
      citation: 'Wang et al., "BurstGPT: A Real-world Workload Dataset to Optimize LLM Serving Systems", 2024',
    },
  },
  /** Splitwise / Azure LLM inference traces (CSV TIMESTAMP date-time, ContextTokens, GeneratedTokens). */
  splitwise: {
    format: 'csv',
    map: { arrival: 'TIMESTAMP', input: 'ContextTokens', output: 'GeneratedTokens' },
    timeUnit: 'ms',
    arrivals: 'absolute',
    describes: 'Splitwise / Azure LLM inference trace CSV: TIMESTAMP (date-time), ContextTokens, GeneratedTokens',
    options: {
      defaultSource: 'Azure LLM inference trace (https://github.com/Azure/AzurePublicDataset)',
      licence: 'CC-BY-4.0',
      citation: 'Patel et al., "Splitwise: Efficient generative LLM inference using phase splitting", ISCA 2024',
    },
  },
} as const satisfies Record<string, GenericPreset>;

/** A preset name. */
export type PresetName = keyof typeof GENERIC_PRESETS;

/** Whether `s` names a preset. */
export function isPresetName(s: string): s is PresetName {
  return Object.hasOwn(GENERIC_PRESETS, s);
}
