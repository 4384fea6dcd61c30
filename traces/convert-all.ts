/**
 * Regenerates the committed Arrow traces under `traces/` from the public sources in
 * `../shared/traces/` (beside the repository) and copies each source's SOURCE.txt verbatim.
 * Run: `npx tsx traces/convert-all.ts`. The LICENSE notes in each folder are hand-written.
 */
import { chmod, copyFile, mkdir, rm, stat } from 'node:fs/promises';
import { dirname, join } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { importTrace } from './import.ts';
import type { ImportStats, TraceFormat } from './import.ts';

/** One committed conversion: source folder and file under `shared/traces/`, destination under `traces/`. */
export interface Conversion {
  format: TraceFormat;
  /** Folder under `shared/traces/` (holds the source and its SOURCE.txt). */
  sourceFolder: string;
  /** File name inside `sourceFolder`. */
  sourceFile: string;
  /** Destination path relative to `traces/`. */
  target: string;
}

/** The four committed traces. */
export const CONVERSIONS: readonly Conversion[] = [
  { format: 'mooncake', sourceFolder: 'mooncake-fast25', sourceFile: 'conversation_trace.jsonl', target: 'mooncake/conversation.arrow' },
  { format: 'mooncake', sourceFolder: 'mooncake-fast25', sourceFile: 'synthetic_trace.jsonl', target: 'mooncake/synthetic.arrow' },
  { format: 'azure', sourceFolder: 'azure-llm-2023', sourceFile: 'AzureLLMInferenceTrace_code.csv', target: 'azure-2023/code.arrow' },
  { format: 'azure', sourceFolder: 'azure-llm-2023', sourceFile: 'AzureLLMInferenceTrace_conv.csv', target: 'azure-2023/conv.arrow' },
];

/** `shared/traces/` beside the repository (…/main/../shared/traces). */
export const SHARED_TRACES_DIR = fileURLToPath(new URL('../../shared/traces/', import.meta.url));

/** This folder (`traces/`). */
export const TRACES_DIR = fileURLToPath(new URL('./', import.meta.url));

/**
 * Converts every entry of `CONVERSIONS` from `sharedDir` into `outDir`, copying each
 * source folder's SOURCE.txt next to the Arrow file.
 * @returns one `ImportStats` per conversion, in `CONVERSIONS` order.
 * @throws the errors of `importTrace`, and ENOENT when a source is absent.
 */
export async function convertAll(sharedDir: string = SHARED_TRACES_DIR, outDir: string = TRACES_DIR): Promise<ImportStats[]> {
  const results: ImportStats[] = [];
  for (const c of CONVERSIONS) {
    const src = join(sharedDir, c.sourceFolder, c.sourceFile);
    const dst = join(outDir, c.target);
    await mkdir(dirname(dst), { recursive: true });
    results.push(await importTrace(c.format, src, dst));
    // The shared copies are read-only; replace rather than overwrite, and leave a writable file.
    const note = join(dirname(dst), 'SOURCE.txt');
    await rm(note, { force: true });
    await copyFile(join(sharedDir, c.sourceFolder, 'SOURCE.txt'), note);
    await chmod(note, 0o644);
  }
  return results;
}

if (process.argv[1] !== undefined && import.meta.url === pathToFileURL(process.argv[1]).href) {
  for (const s of await convertAll()) {
    const { size } = await stat(s.dst);
    console.log(
      `${s.dst}: ${s.rows} rows, ${s.sessions} sessions, in ${s.inputTokens} / out ${s.outputTokens} tokens, ` +
        `${s.hashIds} hash ids, span ${(s.spanMs / 1000).toFixed(1)} s, ${(size / 1024).toFixed(0)} KiB`,
    );
  }
}
