/**
 * A transaction's COMMIT on PostgreSQL (src/db/client.ts, releasingTransaction): one the server
 * refuses is that refusal, a definite rollback; only one it never answers leaves the outcome
 * unknown. The timeout case runs on a private cluster in test/faults-exactly-once.test.ts.
 */
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { sql } from 'drizzle-orm';
import { CommitOutcomeUnknown } from '../src/lib/errors.ts';
import { useFreshPostgres } from './helpers/app.ts';

const serverUrl = process.env.DATABASE_URL;

describe('a COMMIT the server refuses', { skip: serverUrl ? false : 'DATABASE_URL is not set' }, () => {
  // A uniqueness checked at COMMIT, so the COMMIT itself is what fails.
  const database = useFreshPostgres(serverUrl!, { poolSize: 2, setup: sql`create table commit_probe (k int, constraint commit_probe_k unique (k) deferrable initially deferred)` });

  test('is that refusal, not an unknown outcome, and the pool keeps working', async () => {
    const err = await database().db
      .transaction(async (tx) => {
        await tx.execute(sql`insert into commit_probe values (1), (1)`);
      })
      .then(
        () => undefined,
        (e: unknown) => e,
      );
    assert.ok(err instanceof Error, 'the transaction failed');
    assert.ok(!(err instanceof CommitOutcomeUnknown), `a refused COMMIT is not an unknown outcome: ${String(err)}`);
    const codes: unknown[] = [];
    for (let e: unknown = err; e instanceof Error; e = e.cause) codes.push((e as { code?: unknown }).code);
    assert.ok(codes.includes('23505'), `the unique violation reaches the caller (codes ${codes.join(', ')})`);
    const rows: unknown = await database().db.execute(sql`select count(*)::int as n from commit_probe`);
    assert.deepEqual((rows as { rows: unknown[] }).rows, [{ n: 0 }], 'nothing was stored');
  });
});
