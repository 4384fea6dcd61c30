/**
 * Line access and error messages shared by the source-format converters (JSONL, CSV).
 */
import { readFile } from 'node:fs/promises';

/** One line of a source file. */
export interface SourceLine {
  /** 1-based line number in the file. */
  lineNo: number;
  /** The line without its terminator (`\n` or `\r\n`). */
  text: string;
}

/**
 * Reads a text file as lines. Accepts LF or CRLF endings and a missing final newline (the
 * Azure CSVs have CRLF and none); one final terminator does not make an extra empty line.
 * Empty lines elsewhere are returned as they are, for the converter to reject.
 * @throws the file system's error (ENOENT etc.) when the file cannot be read.
 */
export async function readSourceLines(path: string): Promise<SourceLine[]> {
  const text = await readFile(path, 'utf8');
  const parts = text.split(/\r?\n/);
  if (parts.length > 0 && parts[parts.length - 1] === '') parts.pop();
  return parts.map((t, i) => ({ lineNo: i + 1, text: t }));
}

/**
 * The error for a malformed source row: `<file>: line <N> (1-based), field <field>: <problem>`.
 * @param field the source's own field name (`input_length`, `ContextTokens`, …), or a
 *   description such as `(whole line)` when no single field is at fault.
 */
export function sourceError(file: string, lineNo: number, field: string, problem: string): Error {
  return new Error(`${file}: line ${lineNo} (1-based), field ${field}: ${problem}`);
}

/**
 * Parses a token count: a JSON number, or (for CSV) decimal digits.
 * @returns the count, or null when it is not an integer in [0, 2^31 − 1] (the Int32 column).
 */
export function parseTokenCount(value: number | string): number | null {
  const n = typeof value === 'string' ? (/^\d+$/.test(value) ? Number(value) : NaN) : value;
  return Number.isInteger(n) && n >= 0 && n <= 2 ** 31 - 1 ? n : null;
}
