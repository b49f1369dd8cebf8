/**
 * The rows of raw statements (node-postgres and PGlite both answer `{rows}`), checked as they are
 * read: a statement written as SQL text has no column types for the compiler to check.
 */
export function rowsOf(result: unknown): Record<string, unknown>[] {
  const rows = (result as { rows?: unknown } | null)?.rows;
  if (!Array.isArray(rows)) throw new Error('the database answered a statement without rows');
  return rows as Record<string, unknown>[];
}

export const text = (v: unknown): string => {
  if (typeof v !== 'string') throw new Error(`expected text from the database, got ${typeof v}`);
  return v;
};

export const int = (v: unknown): number => {
  const n = typeof v === 'string' ? Number(v) : v;
  if (typeof n !== 'number' || !Number.isInteger(n)) throw new Error(`expected an integer from the database, got ${String(v)}`);
  return n;
};

export const json = <T>(v: unknown): T => JSON.parse(text(v)) as T;
