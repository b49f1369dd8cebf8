/**
 * The transaction handle PostgreSQL transactions run on (src/db/client.ts, releasingTransaction):
 * BEGIN carries the transaction's settings, savepoints and `tx.rollback()` work as under drizzle,
 * and a failed transaction rolls back and gives its client back to the pool.
 */
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { sql, TransactionRollbackError } from 'drizzle-orm';
import { useFreshPostgres } from './helpers/app.ts';

const serverUrl = process.env.DATABASE_URL;

describe('transactions on PostgreSQL', { skip: serverUrl ? false : 'DATABASE_URL is not set' }, () => {
  // One connection: a client kept out of the pool, or given back inside a transaction, shows at once.
  const database = useFreshPostgres(serverUrl!, { poolSize: 1, setup: sql`create table tx_probe (k int primary key)` });

  const stored = async (): Promise<number[]> => {
    const res: unknown = await database().db.execute(sql`select k from tx_probe order by k`);
    return (res as { rows: { k: number }[] }).rows.map((r) => r.k);
  };
  const clear = () => database().db.execute(sql`delete from tx_probe`);

  test('BEGIN carries the isolation level, access mode and deferrable setting', async () => {
    const settings = await database().db.transaction(
      async (tx) => {
        const res: unknown = await tx.execute(
          sql`select current_setting('transaction_isolation') as isolation, current_setting('transaction_read_only') as read_only, current_setting('transaction_deferrable') as deferrable`,
        );
        return (res as { rows: unknown[] }).rows[0];
      },
      { isolationLevel: 'serializable', accessMode: 'read only', deferrable: true },
    );
    assert.deepEqual(settings, { isolation: 'serializable', read_only: 'on', deferrable: 'on' });
    const plain = await database().db.transaction(async (tx) => {
      const res: unknown = await tx.execute(sql`select current_setting('transaction_isolation') as isolation, current_setting('transaction_read_only') as read_only`);
      return (res as { rows: unknown[] }).rows[0];
    });
    assert.deepEqual(plain, { isolation: 'read committed', read_only: 'off' }, 'the server defaults without settings');
  });

  test('a failed savepoint rolls back alone; the transaction around it commits', async () => {
    await clear();
    await database().db.transaction(async (tx) => {
      await tx.execute(sql`insert into tx_probe values (1)`);
      const inner = await tx
        .transaction(async (sp) => {
          await sp.execute(sql`insert into tx_probe values (2)`);
          await sp.execute(sql`insert into tx_probe values (1)`);
        })
        .then(
          () => undefined,
          (e: unknown) => e,
        );
      assert.ok(inner instanceof Error, 'the duplicate failed the savepoint');
      await tx.transaction(async (sp) => {
        await sp.execute(sql`insert into tx_probe values (3)`);
      });
    });
    assert.deepEqual(await stored(), [1, 3]);
  });

  test('tx.rollback() stores nothing and throws TransactionRollbackError', async () => {
    await clear();
    const err = await database().db
      .transaction(async (tx) => {
        await tx.execute(sql`insert into tx_probe values (4)`);
        tx.rollback();
      })
      .then(
        () => undefined,
        (e: unknown) => e,
      );
    assert.ok(err instanceof TransactionRollbackError, `rolled back: ${String(err)}`);
    assert.deepEqual(await stored(), []);
  });

  test('an error in the transaction rolls it back, reaches the caller, and the client serves the next one', async () => {
    await clear();
    const failure = new Error('refused by the callback');
    const err = await database().db
      .transaction(async (tx) => {
        await tx.execute(sql`insert into tx_probe values (5)`);
        throw failure;
      })
      .then(
        () => undefined,
        (e: unknown) => e,
      );
    assert.equal(err, failure);
    // On the pool's only client: had it gone back inside the open transaction, this would see 5.
    await database().db.transaction(async (tx) => {
      await tx.execute(sql`insert into tx_probe values (6)`);
    });
    assert.deepEqual(await stored(), [6]);
  });
});
