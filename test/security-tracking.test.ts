/**
 * The credential-free tracking routes (POST /api/receipts/status and POST /api/pay/:id/status):
 * they answer a receipt nobody has exactly as they answer an unpaid one, so they tell a stranger
 * nothing about which receipts exist, and a receipt keeps one history entry per tracking status,
 * repeats counted on it, however many a stranger sends. Also migration 0007's data step, which
 * collapses the repeats already stored and counts the existing subscriptions and endpoints.
 */
import assert from 'node:assert/strict';
import { cpSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { AsyncLocalStorage } from 'node:async_hooks';
import { after, before, describe, test } from 'node:test';
import { PgPreparedQuery } from 'drizzle-orm/pg-core';
import { and, eq, sql } from 'drizzle-orm';
import { MIGRATIONS_DIR } from '../src/db/client.ts';
import { receiptStatusHistory } from '../src/db/schema.ts';
import { TRACKING_STATUSES } from '../src/contract/receipts.ts';
import { freshPostgresDatabase, randomWallet, startTestApp, type Res, type TestApp } from './helpers/app.ts';

let t: TestApp;
let wallet: string;
let key: string;
before(async () => {
  t = await startTestApp({ PUBLIC_RATE_LIMIT_PER_MINUTE: '1000000' });
  wallet = randomWallet();
  key = await t.key(wallet);
});
after(async () => {
  await t.close();
});

async function createReceipt(id: string): Promise<string> {
  const res = await t.call(key, 'POST', '/api/receipts', { id, lineItems: [{ label: 'Tea', priceUsd: 2 }], totalUsd: 2 });
  assert.equal(res.status, 201, JSON.stringify(res.body));
  const url = new URL(res.body.paymentUrl);
  return url.pathname.replace(/^\/pay\//, '') + url.search;
}

/** What a stranger can observe of an answer: status, body, and which headers it carries. */
const observable = (res: Res) => ({
  status: res.status,
  body: res.body,
  headers: Object.keys(res.headers)
    .filter((h) => !['x-correlation-id', 'date', 'content-length', 'x-ratelimit-remaining', 'x-ratelimit-reset'].includes(h))
    .sort(),
});

describe('no existence oracle', () => {
  test('POST /api/receipts/status answers a missing receipt, or an unknown merchant, as it answers an existing one', async () => {
    await createReceipt('oracle-1');
    const track = (receiptId: string, w: string) => t.call(null, 'POST', '/api/receipts/status', { receiptId, wallet: w, status: 'link_opened' });
    const existing = observable(await track('oracle-1', wallet));
    assert.deepEqual(existing.body, { ok: true });
    assert.deepEqual(observable(await track('oracle-missing', wallet)), existing);
    assert.deepEqual(observable(await track('oracle-1', randomWallet())), existing);
    // Nothing was written for the receipt that does not exist.
    const db = t.deps.database.db;
    const rows = await db.select().from(receiptStatusHistory).where(eq(receiptStatusHistory.receiptId, 'oracle-missing'));
    assert.equal(rows.length, 0);
  });

  test('POST /api/pay/:id/status answers a wrong payment URL as it answers an unpaid receipt', async () => {
    const pay = await createReceipt('oracle-2');
    const [id, query] = pay.split('?') as [string, string];
    const real = observable(await t.call(null, 'POST', `/api/pay/${id}/status?${query}`, { status: 'checkout_initialized' }));
    assert.deepEqual(real, { ...real, status: 200, body: { status: 'checkout_initialized' } });
    for (const url of [
      `/api/pay/${id}/status?t=${'A'.repeat(24)}`,
      `/api/pay/oracle-nope/status?${query}`,
      `/api/pay/oracle-nope/status?t=${'B'.repeat(24)}`,
      `/api/pay/${id}/status`,
    ]) {
      assert.deepEqual(observable(await t.call(null, 'POST', url, { status: 'checkout_initialized' })), real, url);
    }
  });
});

describe('no timing oracle: a known and an unknown receipt cost the same work', () => {
  /**
   * The statements one request sends, in order, with the outcome of each transaction: every
   * statement of both drivers goes through drizzle's PgPreparedQuery.queryWithCache, and only
   * the request's own (its async context) are kept, not the service's background work.
   */
  async function statementsOf(send: () => Promise<Res>): Promise<{ res: Res; work: string[] }> {
    const db = t.deps.database.db;
    const mine = new AsyncLocalStorage<string[]>();
    const proto = PgPreparedQuery.prototype as unknown as { queryWithCache: (text: string, ...rest: unknown[]) => Promise<unknown> };
    const query = proto.queryWithCache;
    const transaction = db.transaction.bind(db);
    proto.queryWithCache = function (this: unknown, text: string, ...rest: unknown[]) {
      // BEGIN, COMMIT and ROLLBACK go through here on PostgreSQL only (PGlite sends its own): the
      // transaction's outcome is recorded below, the same way for both.
      if (!/^(begin|commit|rollback)\b/i.test(text.trim())) mine.getStore()?.push(text.replace(/\s+/g, ' ').trim());
      return query.call(this, text, ...rest);
    };
    db.transaction = (async (run: Parameters<typeof transaction>[0], config?: Parameters<typeof transaction>[1]) => {
      const work = mine.getStore();
      work?.push('begin');
      try {
        const result = await transaction.call(db, run, config);
        work?.push('commit');
        return result;
      } catch (err) {
        work?.push(`rollback (${(err as Error).name})`);
        throw err;
      }
    }) as typeof transaction;
    try {
      const work: string[] = [];
      const res = await mine.run(work, send);
      return { res, work };
    } finally {
      proto.queryWithCache = query;
      db.transaction = transaction;
    }
  }

  test('POST /api/receipts/status sends the same statements and commits for an existing receipt, a missing one and an unknown merchant', async () => {
    await createReceipt('timing-1');
    const track = (receiptId: string, w: string) => () => t.call(null, 'POST', '/api/receipts/status', { receiptId, wallet: w, status: 'checkout_initialized' });
    // The first status moves the receipt; a repeat is counted; a missing receipt or another merchant's.
    const runs = [
      await statementsOf(track('timing-1', wallet)),
      await statementsOf(track('timing-1', wallet)),
      await statementsOf(track('timing-missing', wallet)),
      await statementsOf(track('timing-1', randomWallet())),
    ];
    const [first] = runs;
    assert.ok(first!.work.length >= 5, first!.work.join('\n'));
    assert.equal(first!.work[0], 'begin');
    assert.equal(first!.work.at(-1), 'commit');
    assert.ok(first!.work.some((s) => /^insert into "receipt_status_history"/.test(s)), first!.work.join('\n'));
    assert.ok(first!.work.some((s) => /^update "receipts"/.test(s)), first!.work.join('\n'));
    for (const run of runs) {
      assert.deepEqual(run.work, first!.work);
      assert.deepEqual(observable(run.res), observable(first!.res));
    }
    // The missing receipt's statements matched no row: nothing was written for it.
    const db = t.deps.database.db;
    const rows = await db.select().from(receiptStatusHistory).where(eq(receiptStatusHistory.receiptId, 'timing-missing'));
    assert.equal(rows.length, 0);
    const [entry] = await db
      .select()
      .from(receiptStatusHistory)
      .where(and(eq(receiptStatusHistory.receiptId, 'timing-1'), eq(receiptStatusHistory.status, 'checkout_initialized')));
    assert.equal(entry?.count, 2, 'the first status and its repeat; the one sent under another wallet is not its');
  });
});

describe('bounded tracking history', () => {
  test('300 tracking statuses leave one history entry per status, each counting its repeats', async () => {
    const pay = await createReceipt('chatty-1');
    const [id, query] = pay.split('?') as [string, string];
    const sent = new Map<string, number>();
    for (let i = 0; i < 300; i++) {
      const status = TRACKING_STATUSES[i % TRACKING_STATUSES.length]!;
      sent.set(status, (sent.get(status) ?? 0) + 1);
      const res =
        i % 2 === 0
          ? await t.call(null, 'POST', '/api/receipts/status', { receiptId: 'chatty-1', wallet, status })
          : await t.call(null, 'POST', `/api/pay/${id}/status?${query}`, { status });
      assert.equal(res.status, 200);
    }
    const detail = await t.call(key, 'GET', '/api/receipts/chatty-1');
    assert.equal(detail.status, 200);
    const history = detail.body.statusHistory as { status: string; at: number; source: string; count?: number }[];
    assert.equal(history.length, 1 + TRACKING_STATUSES.length, JSON.stringify(history));
    assert.deepEqual(history[0], { status: 'pending', at: history[0]!.at, source: 'api' });
    for (const entry of history.slice(1)) {
      assert.deepEqual(Object.keys(entry).sort(), ['at', 'count', 'source', 'status']);
      assert.equal(entry.source, 'tracking');
      assert.equal(entry.count, sent.get(entry.status), entry.status);
    }
    // The receipt itself follows the latest status, as before.
    assert.equal(detail.body.status, TRACKING_STATUSES[299 % TRACKING_STATUSES.length]);
    const db = t.deps.database.db;
    const [rows] = await db
      .select({ n: sql<number>`count(*)::int` })
      .from(receiptStatusHistory)
      .where(and(eq(receiptStatusHistory.wallet, wallet), eq(receiptStatusHistory.receiptId, 'chatty-1')));
    assert.equal(rows?.n, 1 + TRACKING_STATUSES.length);
  });

  test('a status sent once has no count, so history entries keep their {status, at, source} shape', async () => {
    await createReceipt('quiet-1');
    await t.call(null, 'POST', '/api/receipts/status', { receiptId: 'quiet-1', wallet, status: 'link_opened' });
    const detail = await t.call(key, 'GET', '/api/receipts/quiet-1');
    assert.deepEqual(
      detail.body.statusHistory.map((h: Record<string, unknown>) => Object.keys(h).sort().join(',')),
      ['at,source,status', 'at,source,status'],
    );
  });
});

describe('migration 0007', () => {
  /** A migrations folder holding the migrations before 0007 only. */
  function migrationsBefore0007(): string {
    const dir = mkdtempSync(path.join(tmpdir(), 'splitline-migrations-'));
    cpSync(MIGRATIONS_DIR, dir, { recursive: true });
    const journalPath = path.join(dir, 'meta', '_journal.json');
    const journal = JSON.parse(readFileSync(journalPath, 'utf8')) as { entries: { idx: number }[] };
    journal.entries = journal.entries.filter((e) => e.idx < 7);
    writeFileSync(journalPath, JSON.stringify(journal));
    return dir;
  }

  test('collapses stored tracking repeats into counted entries and counts existing subscriptions and endpoints', async () => {
    const older = migrationsBefore0007();
    const serverUrl = process.env.DATABASE_URL;
    const fresh = serverUrl ? await freshPostgresDatabase(serverUrl) : undefined;
    let run: (q: string) => Promise<Record<string, unknown>[]>;
    let migrateTo: (folder: string) => Promise<void>;
    let close: () => Promise<void>;
    if (fresh !== undefined) {
      const pg = (await import('pg')).default;
      const { drizzle } = await import('drizzle-orm/node-postgres');
      const { migrate } = await import('drizzle-orm/node-postgres/migrator');
      const pool = new pg.Pool({ connectionString: fresh.url });
      run = async (q) => (await pool.query(q)).rows;
      migrateTo = (folder) => migrate(drizzle(pool), { migrationsFolder: folder });
      close = async () => {
        await pool.end();
        await fresh.drop();
      };
    } else {
      const { PGlite } = await import('@electric-sql/pglite');
      const { drizzle } = await import('drizzle-orm/pglite');
      const { migrate } = await import('drizzle-orm/pglite/migrator');
      const client = await PGlite.create();
      run = async (q) => (await client.query<Record<string, unknown>>(q)).rows;
      migrateTo = (folder) => migrate(drizzle(client), { migrationsFolder: folder });
      close = () => client.close();
    }
    try {
      await migrateTo(older);
      await run(`insert into receipt_status_history (wallet, receipt_id, status, source, at) values
        ('0xa', 'r1', 'pending', 'api', 1), ('0xa', 'r1', 'link_opened', 'tracking', 2), ('0xa', 'r1', 'link_opened', 'tracking', 3),
        ('0xa', 'r1', 'buyer_logged_in', 'tracking', 4), ('0xa', 'r1', 'link_opened', 'tracking', 5), ('0xa', 'r1', 'completed', 'chain', 6),
        ('0xa', 'r1', 'completed', 'chain', 7), ('0xb', 'r1', 'link_opened', 'tracking', 8)`);
      await run(`insert into subscriptions (id, wallet, name, product, scopes, rate_limit_per_minute, status, created_at) values
        ('s1', '0xa', 'n', 'full', '[]', 1, 'active', 1), ('s2', '0xa', 'n', 'full', '[]', 1, 'active', 1),
        ('s3', '0xa', 'n', 'full', '[]', 1, 'revoked', 1), ('s4', '0xb', 'n', 'full', '[]', 1, 'active', 1)`);
      await run(`insert into webhook_endpoints (wallet, id, url, events, secret, created_at, disabled_at) values
        ('0xa', 'w1', 'https://x', '[]', 's', 1, null), ('0xa', 'w2', 'https://x', '[]', 's', 1, 5)`);
      await migrateTo(MIGRATIONS_DIR);
      const history = await run(`select wallet, status, source, at::int as at, count from receipt_status_history order by seq`);
      assert.deepEqual(history, [
        { wallet: '0xa', status: 'pending', source: 'api', at: 1, count: 1 },
        { wallet: '0xa', status: 'link_opened', source: 'tracking', at: 2, count: 3 },
        { wallet: '0xa', status: 'buyer_logged_in', source: 'tracking', at: 4, count: 1 },
        { wallet: '0xa', status: 'completed', source: 'chain', at: 6, count: 1 },
        { wallet: '0xa', status: 'completed', source: 'chain', at: 7, count: 1 },
        { wallet: '0xb', status: 'link_opened', source: 'tracking', at: 8, count: 1 },
      ]);
      const counters = await run(`select wallet, name, n from usage_counters order by wallet, name`);
      assert.deepEqual(counters, [
        { wallet: '0xa', name: 'subscriptions', n: 2 },
        { wallet: '0xa', name: 'webhook_endpoints', n: 1 },
        { wallet: '0xb', name: 'subscriptions', n: 1 },
      ]);
    } finally {
      await close();
      rmSync(older, { recursive: true, force: true });
    }
  });
});
