/**
 * The `source` metadata of a converted trace, taken from the `SOURCE.txt` note that sits
 * beside every public data file under `shared/traces/<folder>/`.
 */
import { readFile } from 'node:fs/promises';
import { basename, dirname, join } from 'node:path';

/**
 * Describes where `srcFile` came from as `<repository> <path in repository> @ <commit>`,
 * read from `notePath` (default: `SOURCE.txt` in the same folder) (lines `Repository:`, `Path:`/`Paths:` with
 * indented or comma-separated continuations, `Commit:`). The path is the listed one whose
 * last segment equals the file's name.
 * Never throws for a missing or incomplete note: a trace imported from a stray file gets
 * `local file <name> (no SOURCE.txt beside it)` or the parts that could be found.
 */
export async function sourceNoteFor(srcFile: string, notePath: string = join(dirname(srcFile), 'SOURCE.txt')): Promise<string> {
  const name = basename(srcFile);
  let text: string;
  try {
    text = await readFile(notePath, 'utf8');
  } catch {
    return `local file ${name} (no SOURCE.txt beside it)`;
  }
  const lines = text.split(/\r?\n/);
  const field = (key: string): string | undefined =>
    lines.find((l) => l.startsWith(`${key}:`))?.slice(key.length + 1).trim();
  const repo = field('Repository') ?? 'unknown repository';
  const commit = field('Commit') ?? 'unknown commit';
  // Path section: the `Path:`/`Paths:` line plus following indented lines.
  const start = lines.findIndex((l) => /^Paths?:/.test(l));
  const pathTokens: string[] = [];
  if (start >= 0) {
    const first = lines[start] ?? '';
    const section = [first.slice(first.indexOf(':') + 1)];
    for (let i = start + 1; i < lines.length && /^\s+\S/.test(lines[i] ?? ''); i++) section.push(lines[i] ?? '');
    for (const s of section) pathTokens.push(...s.split(/[\s,]+/).filter((t) => t.length > 0));
  }
  const path = pathTokens.find((t) => t === name || t.endsWith(`/${name}`)) ?? `${name} (path not listed in SOURCE.txt)`;
  return `${repo} ${path} @ ${commit}`;
}
