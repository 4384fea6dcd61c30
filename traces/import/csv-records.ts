/**
 * CSV records per RFC 4180: fields separated by commas, records by CRLF or LF; a field in
 * double quotes may hold commas, quotes (doubled: `""`) and line breaks. A final line break is
 * optional. Fields are returned as written (unquoted, not trimmed); the caller decides types.
 */

/** One CSV record: its fields and the 1-based line it starts on. */
export interface CsvRecord {
  readonly lineNo: number;
  readonly fields: readonly string[];
}

/**
 * Splits CSV text into records.
 * @param file the source path, for errors.
 * @throws Error `<file>: line N (1-based): …` for a quote that is never closed or text right
 *   after a closing quote (e.g. `"ab"c`).
 */
export function parseCsv(text: string, file: string): CsvRecord[] {
  const records: CsvRecord[] = [];
  let fields: string[] = [];
  let field = '';
  /** The current field was quoted and its closing quote read: only a separator may follow. */
  let closed = false;
  let line = 1;
  let recordLine = 1;
  const endField = () => {
    fields.push(field);
    field = '';
    closed = false;
  };
  let i = 0;
  while (i < text.length) {
    const c = text[i]!;
    if (c === ',') {
      endField();
      i++;
    } else if (c === '\r' || c === '\n') {
      endField();
      records.push({ lineNo: recordLine, fields });
      fields = [];
      i += c === '\r' && text[i + 1] === '\n' ? 2 : 1;
      recordLine = ++line;
    } else if (closed) {
      throw new Error(`${file}: line ${line} (1-based): text after a closing quote; double a quote inside a quoted field ("")`);
    } else if (c === '"' && field === '') {
      const startLine = line;
      for (i++; ; i++) {
        if (i >= text.length) throw new Error(`${file}: line ${startLine} (1-based): a quoted field is never closed`);
        const d = text[i]!;
        if (d === '"' && text[i + 1] === '"') {
          field += '"';
          i++;
        } else if (d === '"') break;
        else {
          if (d === '\n') line++;
          field += d;
        }
      }
      closed = true;
      i++;
    } else {
      field += c;
      i++;
    }
  }
  // A last record without a final line break.
  if (field !== '' || closed || fields.length > 0) {
    endField();
    records.push({ lineNo: recordLine, fields });
  }
  return records;
}
