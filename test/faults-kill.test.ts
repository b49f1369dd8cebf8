/**
 * kill -9 of the service while a stream of receipt and order writes runs against it, database up:
 * nothing acknowledged is lost, nothing is stored twice, stock went down by exactly the orders that
 * exist, and the restarted service comes up on the same DATA_DIR with an empty journal.
 *
 * Runs on the embedded default (PGlite in DATA_DIR: the case where the database dies with the
 * process) and, with DATABASE_URL set, on a fresh PostgreSQL database. The outage variant (database
 * down, writes in the journal, then kill -9) is test/degraded.test.ts.
 */
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { after, describe, test } from 'node:test';
import { openDatabase, type Database } from '../src/db/client.ts';
import { freshPostgresDatabase } from './helpers/app.ts';
import { http, startService, stopAllServices, TEST_EDGE_SECRET } from './helpers/service.ts';
import { assertLanded, BULK, orderBody, receiptBody, SCARCE, WriteLedger } from './helpers/write-ledger.ts';
import { keyedMerchant } from './helpers/merchant.ts';
import { until } from './helpers/wait.ts';

const SITE = 'http://pay.test';
const PLATFORM = '0x000000000000000000000000000000000000beef';
const cleanups: (() => Promise<void>)[] = [];

after(async () => {
  await stopAllServices();
  for (const c of cleanups.reverse()) await c();
});

describe('kill -9 during a stream of receipt and order writes', { timeout: 150_000 }, () => {
  test('every acknowledged write survives, exactly once, and stock matches the stored orders', async () => {
    const dataDir = mkdtempSync(path.join(tmpdir(), 'splitline-kill-'));
    cleanups.push(async () => rmSync(dataDir, { recursive: true, force: true }));
    const fresh = process.env.DATABASE_URL ? await freshPostgresDatabase(process.env.DATABASE_URL) : undefined;
    if (fresh) cleanups.push(() => fresh.drop());
    const open = (): Promise<Database> =>
      fresh ? openDatabase({ databaseUrl: fresh.url, poolSize: 2 }) : openDatabase({ dataDir });
    const env: Record<string, string> = {
      DATA_DIR: dataDir,
      // /healthz's details for http(), which carries it.
      EDGE_SECRET: TEST_EDGE_SECRET,
      SITE_URL: SITE,
      PLATFORM_RECIPIENT_ADDRESS: PLATFORM,
      ...(fresh ? { DATABASE_URL: fresh.url } : {}),
      ...(process.env.REDIS_URL ? { REDIS_URL: process.env.REDIS_URL } : {}),
    };

    // The merchant is set up before the service opens the database (PGlite has one owner at a time).
    let wallet: string;
    let key: string;
    {
      const db = await open();
      try {
        ({ wallet, key } = await keyedMerchant(db.db, PLATFORM));
      } finally {
        await db.close();
      }
    }

    const a = await startService('first', env);
    for (const item of [BULK, SCARCE]) {
      const res = await http(a.base, 'POST', '/api/inventory', { key, body: item });
      assert.equal(res.status, 201, JSON.stringify(res.body));
    }

    const ledger = new WriteLedger();
    let killed = false;
    let sent = 0;
    const writer = async (w: number) => {
      for (let i = 0; !killed; i++) {
        const id = `k-${w}-${i}`;
        const n = w * 100_000 + i;
        ledger.unacked.receipts.add(id);
        try {
          ledger.receipt(id, await http(a.base, 'POST', '/api/receipts', { key, body: receiptBody(id, 100 + i) }));
          ledger.unacked.receipts.delete(id);
        } catch (err) {
          if (!killed) throw err;
          return; // in flight at the kill: not acknowledged, so stored or not, both are right
        }
        ledger.unacked.orders++;
        try {
          ledger.order(n, await http(a.base, 'POST', '/api/orders', { key, body: orderBody(n) }));
          ledger.unacked.orders--;
        } catch (err) {
          if (!killed) throw err;
          return;
        }
        sent += 2;
      }
    };
    const writers = Promise.all([0, 1, 2, 3].map(writer));
    try {
      await until(() => ledger.orders.size >= 120 && ledger.receipts.size >= 120, 60_000, 'writes before the kill');
    } finally {
      killed = true;
      await a.kill();
      await writers;
    }
    assert.deepEqual(ledger.failures, []);
    assert.ok(ledger.outOfStock > 0, 'the scarce item sold out under concurrent orders');

    const b = await startService('restarted', env);
    await until(
      async () => {
        const h = await http(b.base, 'GET', '/healthz');
        return h.body.database === 'up' && h.body.journalPending === 0;
      },
      30_000,
      'the restarted service to be healthy with an empty journal',
    );
    // The restarted service answers every acknowledged write the same way again.
    const sample = [...ledger.receipts].slice(-20);
    for (const [id, url] of sample) {
      const n = Number(id.split('-')[2]);
      const again = await http(b.base, 'POST', '/api/receipts', { key, body: receiptBody(id, 100 + n) });
      assert.equal(again.status, 201);
      assert.equal(again.body.paymentUrl, url, `re-sending ${id} answers as the first call did`);
    }
    const exit = await b.stop();
    assert.equal(exit.code, 0, 'the restarted service shuts down cleanly');

    const db = await open();
    try {
      const report = await assertLanded(db.db, wallet, ledger, SITE);
      console.log(
        `kill -9 after ${sent} acknowledged writes (${ledger.receipts.size} receipts, ${ledger.orders.size} orders, ` +
          `${ledger.outOfStock} out of stock): stored ${report.receipts} receipts, ${report.orders} orders ` +
          `(${report.unacknowledgedOrdersStored} of ${ledger.unacked.orders} unanswered orders had committed), ` +
          `stock sold ${report.bulkSold} bulk / ${report.scarceSold} scarce; database ${fresh ? 'PostgreSQL' : 'PGlite'}`,
      );
    } finally {
      await db.close();
    }
  });
});
