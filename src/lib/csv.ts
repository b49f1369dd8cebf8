/**
 * The one CSV writer of the API's exports (settlements, receipts, split transactions): RFC 4180,
 * CRLF line ends, a header row. A cell is quoted when it holds a quote, a comma or a line break.
 * Text that came from a shop or a buyer (a receipt id, a label, metadata) and that a spreadsheet
 * would run as a formula (starting with = + - @, a tab or a CR) is defused with a leading
 * apostrophe; numbers, hashes and times are written as they are, so a negative amount stays a
 * number.
 */

/** A cell's value: null and undefined are empty cells. */
export type CsvValue = string | number | bigint | boolean | null | undefined;

export interface CsvColumn<T> {
  name: string;
  value(row: T): CsvValue;
  /** Free text from outside the service: defused if a spreadsheet would run it. */
  text?: boolean;
}

const FORMULA_START = /^[=+\-@\t\r]/;

export function csvCell(value: CsvValue, text = false): string {
  if (value === null || value === undefined) return '';
  const raw = String(value);
  const safe = text && FORMULA_START.test(raw) ? `'${raw}` : raw;
  return /[",\r\n]/.test(safe) ? `"${safe.replaceAll('"', '""')}"` : safe;
}

export function csvHeader<T>(columns: readonly CsvColumn<T>[]): string {
  return columns.map((c) => csvCell(c.name)).join(',') + '\r\n';
}

export function csvRow<T>(columns: readonly CsvColumn<T>[], row: T): string {
  return columns.map((c) => csvCell(c.value(row), c.text === true)).join(',') + '\r\n';
}

/** A whole document: the header and one line per row. */
export function csvDocument<T>(columns: readonly CsvColumn<T>[], rows: Iterable<T>): string {
  let out = csvHeader(columns);
  for (const row of rows) out += csvRow(columns, row);
  return out;
}

/** A document to stream: the header, then the rows of each page as one chunk. */
export async function* csvChunks<T>(columns: readonly CsvColumn<T>[], pages: AsyncIterable<readonly T[]>): AsyncGenerator<string> {
  yield csvHeader(columns);
  for await (const page of pages) {
    if (page.length > 0) yield page.map((row) => csvRow(columns, row)).join('');
  }
}

/** A JSON value in one cell (line items, metadata): its JSON text, or empty when absent. */
export const jsonCell = (value: unknown): string => (value === null || value === undefined ? '' : JSON.stringify(value));
