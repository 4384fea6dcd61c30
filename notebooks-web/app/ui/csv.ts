/**
 * CSV export of a table (RFC 4180: comma-separated, CRLF line ends, fields with a comma, quote
 * or line break quoted with doubled quotes). Pure.
 */

/** One CSV field: null/undefined → empty, numbers as JS prints them, strings quoted as needed. */
export function csvField(v: string | number | boolean | null | undefined): string {
  if (v === null || v === undefined) return '';
  const s = typeof v === 'number' && !Number.isFinite(v) ? '' : String(v);
  // A leading = + - @ would make a spreadsheet evaluate the cell; quote-and-prefix it.
  const safe = typeof v === 'string' && /^[=+\-@]/.test(s) ? `'${s}` : s;
  return /[",\r\n]/.test(safe) || safe !== s ? `"${safe.replace(/"/g, '""')}"` : safe;
}

/**
 * A header row and one row per record, CRLF-terminated.
 * @param header column titles
 * @param rows cell values, one array per row, same length as `header`
 */
export function toCsv(header: readonly string[], rows: readonly (readonly (string | number | boolean | null | undefined)[])[]): string {
  return [header, ...rows].map((r) => r.map(csvField).join(',')).join('\r\n') + '\r\n';
}
