// A YAML syntax error keeps its place: line, column, the parser's reason on one line, and the
// offending source line with a caret under the column.
import { parseDocument } from 'yaml';
import { describe, expect, it } from 'vitest';
import { formatYamlSyntaxError, yamlSyntaxReport } from '../../../core/index.ts';

describe('yamlSyntaxReport', () => {
  it('names line and column and shows the offending line with a caret', () => {
    const text = 'name: x\nruns:\n  - strategy: fixed\n    params: { a: 1: 2 }\n';
    const doc = parseDocument(text, { prettyErrors: true });
    expect(doc.errors.length).toBeGreaterThan(0);
    const r = yamlSyntaxReport(text, doc.errors[0]!);
    expect(r.line).toBe(doc.errors[0]!.linePos![0].line);
    expect(r.column).toBe(doc.errors[0]!.linePos![0].col);
    expect(r.reason).not.toMatch(/at line \d+/);
    expect(r.reason).not.toContain('\n');
    const [source, caret] = r.snippet!.split('\n');
    expect(source).toBe(`  ${r.line} | ${text.split('\n')[r.line! - 1]}`);
    // The caret sits under the column.
    expect(caret!.indexOf('^') - caret!.indexOf('|') - 2).toBe(r.column! - 1);
    expect(formatYamlSyntaxError('exp.yaml', r)).toBe(`exp.yaml:${r.line}:${r.column}: YAML syntax error: ${r.reason}\n${r.snippet}`);
  });

  it('without a position: the reason alone, no snippet', () => {
    const r = yamlSyntaxReport('a: 1\n', { message: 'something odd' });
    expect(r).toEqual({ line: null, column: null, reason: 'something odd', snippet: null });
    expect(formatYamlSyntaxError('f.yaml', r)).toBe('f.yaml: YAML syntax error: something odd');
  });
});
