/**
 * Inserts many rows in one statement: the rows travel as a single JSON parameter and
 * jsonb_to_recordset turns them back into typed columns. Thousands of bound parameters per
 * statement cost more to send and plan than the insert itself, on node-postgres and PGlite alike.
 */
import { getTableColumns, sql, type InferInsertModel } from 'drizzle-orm';
import type { PgTable } from 'drizzle-orm/pg-core';
import type { Tx } from '../src/db/client.ts';

export async function bulkInsert<T extends PgTable>(db: Tx, table: T, rows: InferInsertModel<T>[]): Promise<void> {
  const first = rows[0];
  if (first === undefined) return;
  // Every row must carry the same fields: the columns are the first row's, so a field missing
  // from the first would be dropped from every row, and one missing elsewhere would become NULL.
  const fields = Object.keys(first).sort().join();
  const odd = rows.find((row) => Object.keys(row).sort().join() !== fields);
  if (odd !== undefined) throw new Error(`bulkInsert: every row must carry the same fields as the first (${fields}); one carries ${Object.keys(odd).sort().join()}`);
  const columns = Object.entries(getTableColumns(table)).filter(([field]) => field in first);
  const names = sql.join(columns.map(([, c]) => sql.identifier(c.name)), sql`, `);
  const types = sql.join(columns.map(([, c]) => sql`${sql.identifier(c.name)} ${sql.raw(c.getSQLType())}`), sql`, `);
  const records = rows.map((row) => {
    const values = row as Record<string, unknown>;
    return Object.fromEntries(columns.map(([field, c]) => [c.name, values[field]]));
  });
  const json = JSON.stringify(records, (_key, v: unknown) => (typeof v === 'bigint' ? v.toString() : v));
  await db.execute(sql`insert into ${table} (${names}) select ${names} from jsonb_to_recordset(${json}::jsonb) as r(${types})`);
}
