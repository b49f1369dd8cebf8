/**
 * GET /api/receipts a page at a time (DESIGN.md "Integrator API", Lists): starting_after, status,
 * created_gte, created_lte and has_more, on keyset pagination that neither repeats nor skips a
 * receipt when others are created between pages.
 */
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { randomWallet, type Res, type TestApp, useTestApp } from './helpers/app.ts';
import { testReceipt } from './helpers/receipt-views.ts';

let t: TestApp;
useTestApp({}, (app) => (t = app));

const T0 = 1_767_225_600_000;
const ids = (res: Res) => res.body.receipts.map((r: { receiptId: string }) => r.receiptId);

/** A merchant's key with receipts stored as given (id, createdAt, status), straight into the store. */
async function merchantWith(rows: { id: string; at: number; status?: 'pending' | 'generated' }[]): Promise<{ key: string; wallet: string }> {
  const wallet = randomWallet();
  const key = await t.key(wallet);
  for (const r of rows) {
    await t.deps.stores.receipts.insertOne(t.deps.database.db, testReceipt({ wallet, id: r.id, createdAt: r.at, status: r.status ?? 'pending' }));
  }
  return { key, wallet };
}

/** Every page from the first, `limit` at a time: the ids in the order seen, and each page's has_more. */
async function allPages(key: string, limit: number, query = '', from?: string): Promise<{ seen: string[]; hasMore: boolean[] }> {
  const seen: string[] = [];
  const hasMore: boolean[] = [];
  for (let cursor = from; ; ) {
    const res = await t.call(key, 'GET', `/api/receipts?limit=${limit}${query}${cursor === undefined ? '' : `&starting_after=${cursor}`}`);
    assert.equal(res.status, 200, JSON.stringify(res.body));
    seen.push(...ids(res));
    hasMore.push(res.body.has_more);
    if (!res.body.has_more) return { seen, hasMore };
    cursor = seen.at(-1);
    assert.ok(hasMore.length < 100, 'pagination does not end');
  }
}

describe('GET /api/receipts pages', () => {
  test('every receipt is seen exactly once, newest first, ties broken by id; has_more is false only on the last page', async () => {
    // 11 receipts, some created in the same millisecond: the id breaks the tie.
    const rows = Array.from({ length: 11 }, (_, i) => ({ id: `r${String(i).padStart(2, '0')}`, at: T0 + Math.floor(i / 3) * 1000 }));
    const { key } = await merchantWith(rows);
    const expected = [...rows].sort((a, b) => b.at - a.at || (a.id < b.id ? 1 : -1)).map((r) => r.id);
    const { seen, hasMore } = await allPages(key, 3);
    assert.deepEqual(seen, expected);
    assert.deepEqual(hasMore, [true, true, true, false]);
    // A page that ends exactly on the last receipt says so.
    const whole = await t.call(key, 'GET', '/api/receipts?limit=11');
    assert.equal(whole.body.has_more, false);
    assert.equal((await t.call(key, 'GET', '/api/receipts?limit=10')).body.has_more, true);
    // The plain list still answers as before, with has_more beside it.
    const plain = await t.call(key, 'GET', '/api/receipts');
    assert.deepEqual(ids(plain), expected);
    assert.equal(plain.body.has_more, false);
  });

  test('receipts created between pages neither repeat nor shift what is left', async () => {
    const rows = Array.from({ length: 6 }, (_, i) => ({ id: `k${i}`, at: T0 + i }));
    const { key, wallet } = await merchantWith(rows);
    const first = await t.call(key, 'GET', '/api/receipts?limit=2');
    assert.deepEqual(ids(first), ['k5', 'k4']);
    // Newer receipts arrive (as with OFFSET, they would push k4 onto the next page again).
    for (const id of ['n1', 'n2', 'n3']) await t.deps.stores.receipts.insertOne(t.deps.database.db, testReceipt({ wallet, id, createdAt: T0 + 100 }));
    const rest = await allPages(key, 2, '', 'k4');
    assert.deepEqual(rest.seen, ['k3', 'k2', 'k1', 'k0']);
  });

  test('status and created range filter, and page together', async () => {
    const rows = Array.from({ length: 9 }, (_, i) => ({ id: `f${i}`, at: T0 + i * 10, status: i % 3 === 0 ? ('generated' as const) : ('pending' as const) }));
    const { key } = await merchantWith(rows);
    assert.deepEqual(ids(await t.call(key, 'GET', '/api/receipts?status=generated')), ['f6', 'f3', 'f0']);
    assert.deepEqual(ids(await t.call(key, 'GET', '/api/receipts?status=completed')), []);
    const range = `&created_gte=${T0 + 20}&created_lte=${T0 + 60}`;
    assert.deepEqual(ids(await t.call(key, 'GET', `/api/receipts?limit=100${range}`)), ['f6', 'f5', 'f4', 'f3', 'f2']);
    assert.deepEqual((await allPages(key, 2, range)).seen, ['f6', 'f5', 'f4', 'f3', 'f2']);
    assert.deepEqual((await allPages(key, 1, `${range}&status=pending`)).seen, ['f5', 'f4', 'f2']);
    // The last matching receipt ends the list even when non-matching ones follow it.
    const last = await t.call(key, 'GET', `/api/receipts?limit=2&status=generated&starting_after=f3`);
    assert.deepEqual(ids(last), ['f0']);
    assert.equal(last.body.has_more, false);
  });

  test('each bad value is 400 invalid_input', async () => {
    const { key } = await merchantWith([{ id: 'b0', at: T0 }]);
    for (const bad of ['status=paid', 'status=', 'status=refund_', 'created_gte=abc', 'created_gte=-1', 'created_lte=1.5', 'starting_after=', 'starting_after=a%20b', 'starting_after=nope']) {
      const res = await t.call(key, 'GET', `/api/receipts?${bad}`);
      assert.equal(res.status, 400, bad);
      assert.equal(res.body.error, 'invalid_input', bad);
    }
    const unknown = await t.call(key, 'GET', '/api/receipts?starting_after=nope');
    assert.match(unknown.body.message, /starting_after.*nope/);
    assert.equal((await t.call(key, 'GET', '/api/receipts?status=refund_partial')).status, 200);
  });

  test("another merchant's receipt is no cursor, and no filter shows another merchant's receipts", async () => {
    const a = await merchantWith([{ id: 'shared', at: T0 }, { id: 'a-only', at: T0 + 1 }]);
    const b = await merchantWith([{ id: 'b-only', at: T0 + 5 }, { id: 'b-old', at: T0 - 5 }]);
    const refused = await t.call(b.key, 'GET', '/api/receipts?starting_after=a-only');
    assert.equal(refused.status, 400);
    assert.equal(refused.body.error, 'invalid_input');
    assert.deepEqual(ids(await t.call(a.key, 'GET', `/api/receipts?created_gte=${T0 - 10}`)), ['a-only', 'shared']);
    assert.deepEqual(ids(await t.call(b.key, 'GET', '/api/receipts?starting_after=b-only')), ['b-old']);
  });
});
