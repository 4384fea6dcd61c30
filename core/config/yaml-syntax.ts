/**
 * A YAML syntax error as a reader can act on it: the line and column where the parser gave up,
 * its reason on one line, and the offending source line with a caret under the column. The
 * `yaml` package reports the position as `linePos` (1-based line and column) and repeats it in
 * its message ("… at line L, column C:" plus a code frame); the reason is kept, the repetition
 * dropped, so callers print `file:line:column: reason` followed by the snippet.
 */

/** What a YAML parser error carries that this module reads (`yaml`'s `YAMLError` fits). */
export interface YamlErrorLike {
  readonly message: string;
  /** Start (and end) of the error, 1-based; absent when the parser could not place it. */
  readonly linePos?: readonly [{ readonly line: number; readonly col: number }, ...{ readonly line: number; readonly col: number }[]] | undefined;
}

/** A located YAML syntax error. */
export interface YamlSyntaxReport {
  /** 1-based line, or null when the parser gave no position. */
  readonly line: number | null;
  /** 1-based column, or null when the parser gave no position. */
  readonly column: number | null;
  /** The parser's reason, one line, without its own position or code frame. */
  readonly reason: string;
  /** `  L | <source line>` and a caret line under the column; null without a position. */
  readonly snippet: string | null;
}

/**
 * Locates `err` in `text` (the source the parser read).
 * @param text the whole YAML source.
 * @param err the parser's error (`doc.errors[i]`, or a thrown `YAMLParseError`).
 */
export function yamlSyntaxReport(text: string, err: YamlErrorLike): YamlSyntaxReport {
  const reason = err.message.split('\n')[0]!.replace(/ at line \d+, column \d+:?$/, '');
  const pos = err.linePos?.[0];
  if (!pos) return { line: null, column: null, reason, snippet: null };
  const source = (text.split(/\r?\n/)[pos.line - 1] ?? '').replace(/\t/g, ' ');
  const gutter = `  ${pos.line} | `;
  const caret = `${' '.repeat(gutter.length - 2)}| ${' '.repeat(Math.max(0, pos.col - 1))}^`;
  return { line: pos.line, column: pos.col, reason, snippet: `${gutter}${source}\n${caret}` };
}

/** `file:line:column: reason` and the snippet below it, for errors printed as a block. */
export function formatYamlSyntaxError(file: string, report: YamlSyntaxReport): string {
  const where = report.line === null ? file : `${file}:${report.line}:${report.column}`;
  return `${where}: YAML syntax error: ${report.reason}${report.snippet ? `\n${report.snippet}` : ''}`;
}
