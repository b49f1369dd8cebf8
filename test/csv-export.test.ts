/**
 * CSV exports (DESIGN.md "Integrator API", CSV): GET /api/receipts?format=csv and
 * GET /api/split/transactions?format=csv. Each body is parsed with a CSV library (csv-parse), not
 * the writer's own rules, and compared row by row with the JSON answers of the same filters.
 */
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { parse } from 'csv-parse/sync';
import { recordSplitTransaction, splitTransactionPages } from '../src/domain/split-transactions.ts';
import type { Receipt } from '../src/contract/receipts.ts';
import { ReceiptStore } from '../src/db/receipt-store.ts';
import { ReceiptService } from '../src/domain/receipt-service.ts';
import { SplitService } from '../src/payments/split-service.ts';
import type { SplitTransaction } from '../src/contract/split.ts';
import { splitTransfer } from './helpers/split-transactions.ts';
import { appWithDatabaseAway, randomWallet, type Res, type TestApp, useTestApp } from './helpers/app.ts';
import { testReceipt } from './helpers/receipt-views.ts';

let t: TestApp;
useTestApp({}, (app) => (t = app));

const T0 = 1_767_225_600_000;

/** The body as a header row and records, parsed strictly (every row as wide as the header). */
function parseCsv(res: Res): { header: string[]; rows: Record<string, string>[] } {
  assert.equal(res.status, 200, String(res.body));
  assert.match(String(res.headers['content-type']), /^text\/csv; charset=utf-8$/);
  assert.match(String(res.headers['content-disposition']), /^attachment; filename="[a-z-]+-\d+\.csv"$/);
  const text = String(res.body);
  assert.ok(text.endsWith('\r\n'), 'CRLF after the last row');
  const records: string[][] = parse(text, { record_delimiter: '\r\n' });
  const [header, ...rest] = records;
  const rows = rest.map((cells) => {
    assert.equal(cells.length, header!.length);
    return Object.fromEntries(header!.map((h, i) => [h, cells[i]!]));
  });
  return { header: header!, rows };
}

/** Every page of the JSON list for `query`, 200 at a time. */
async function allReceipts(key: string, query: string): Promise<Receipt[]> {
  const out: Receipt[] = [];
  for (let cursor: string | undefined; ; ) {
    const res = await t.call(key, 'GET', `/api/receipts?limit=200${query}${cursor === undefined ? '' : `&starting_after=${cursor}`}`);
    assert.equal(res.status, 200);
    out.push(...res.body.receipts);
    if (!res.body.has_more) return out;
    cursor = out.at(-1)!.receiptId;
  }
}

/** What a spreadsheet would run as a formula gets an apostrophe in front. */
const defused = (s: string) => (/^[=+\-@\t\r]/.test(s) ? `'${s}` : s);

/** The row the export must hold for a receipt of the JSON list, written out independently of the writer. */
function receiptRow(r: Receipt): Record<string, string> {
  return {
    receipt_id: defused(r.receiptId),
    created_at: String(r.createdAt),
    created_at_iso: new Date(r.createdAt).toISOString(),
    status: r.status,
    exception: r.exception ?? '',
    currency: r.currency,
    total_usd: String(r.totalUsd),
    total_cents: String(Math.round(r.totalUsd * 100)),
    refunded_usd: String(r.refundedUsd),
    refunded_cents: String(Math.round(r.refundedUsd * 100)),
    amount_paid: r.amountPaid,
    amount_due: r.amountDue,
    expires_at: String(r.expiresAt),
    brand_name: r.brandName,
    return_url: r.returnUrl ?? '',
    line_items: JSON.stringify(r.lineItems),
    metadata: defused(JSON.stringify(r.metadata)),
  };
}

describe('GET /api/receipts?format=csv', () => {
  test('every page of the filtered list, one row per receipt, equal to the JSON; text that needs it quoted or defused', async () => {
    const wallet = randomWallet();
    const key = await t.key(wallet);
    // 205 receipts: more than the JSON list's largest page, so the export must walk pages.
    for (let i = 0; i < 205; i++) {
      await t.deps.stores.receipts.insertOne(
        t.deps.database.db,
        testReceipt({ wallet, id: `c${String(i).padStart(3, '0')}`, createdAt: T0 + i * 1000, status: i % 4 === 0 ? 'generated' : 'pending' }),
      );
    }
    // The shop's own text: commas, quotes, a line break, and a formula.
    await t.deps.stores.receipts.insertOne(
      t.deps.database.db,
      testReceipt({ wallet, id: '=cmd', createdAt: T0 + 999_000, metadata: { order: 'A, "B"\nC', formula: '=1+1' } }),
    );
    // Another merchant's receipt is never in this merchant's export.
    await t.deps.stores.receipts.insertOne(t.deps.database.db, testReceipt({ wallet: randomWallet(), id: 'c-other', createdAt: T0 }));

    const all = parseCsv(await t.call(key, 'GET', '/api/receipts?format=csv'));
    assert.deepEqual(all.header, Object.keys(receiptRow((await allReceipts(key, ''))[0]!)));
    const json = await allReceipts(key, '');
    assert.equal(json.length, 206);
    assert.deepEqual(all.rows, json.map(receiptRow));
    const odd = all.rows.find((r) => r.receipt_id === "'=cmd")!;
    assert.deepEqual(JSON.parse(odd.metadata!), { order: 'A, "B"\nC', formula: '=1+1' });
    assert.equal(all.rows.find((r) => r.receipt_id === 'c001')!.total_cents, '974');

    // The same filters as the JSON list, starting_after included; limit does not cut the export.
    for (const query of ['&status=generated', `&created_gte=${T0 + 10_000}&created_lte=${T0 + 190_000}`, '&starting_after=c150', '&limit=1&status=pending']) {
      const csv = parseCsv(await t.call(key, 'GET', `/api/receipts?format=csv${query}`));
      const expected = await allReceipts(key, query.replace('&limit=1', ''));
      assert.ok(expected.length > 1, query);
      assert.deepEqual(csv.rows, expected.map(receiptRow), query);
    }
    // format=json is the list as before.
    const page = await t.call(key, 'GET', '/api/receipts?format=json&limit=2');
    assert.deepEqual(
      page.body.receipts.map((r: Receipt) => r.receiptId),
      json.slice(0, 2).map((r) => r.receiptId),
    );
  });

  test('no receipts: the header row alone', async () => {
    const res = await t.call(await t.key(randomWallet()), 'GET', '/api/receipts?format=csv');
    assert.equal(parseCsv(res).rows.length, 0);
    assert.match(String(res.body), /^receipt_id,created_at,/);
  });

  test('a bad format, an unknown starting_after: 400 invalid_input naming it, as JSON', async () => {
    const key = await t.key(randomWallet());
    for (const [url, names] of [
      ['/api/receipts?format=xml', /format/],
      ['/api/receipts?format=CSV', /format/],
      ['/api/receipts?format=csv&starting_after=nope', /starting_after/],
      ['/api/split/transactions?format=xlsx', /format/],
    ] as const) {
      const res = await t.call(key, 'GET', url);
      assert.equal(res.status, 400, url);
      assert.equal(res.body.error, 'invalid_input', url);
      assert.match(res.body.message, names, url);
    }
  });

  test('no key: 401; a key without receipts:read or split:read: 403', async () => {
    assert.equal((await t.call(null, 'GET', '/api/receipts?format=csv')).status, 401);
    const key = await t.key(randomWallet(), { scopes: ['receipts:write'] });
    assert.equal((await t.call(key, 'GET', '/api/receipts?format=csv')).status, 403);
    assert.equal((await t.call(key, 'GET', '/api/split/transactions?format=csv')).status, 403);
  });

  test('the database unreachable: 503 database_unavailable, not an empty export', async () => {
    const { app, close } = await appWithDatabaseAway(t, (unreachable) => ({
      receipts: new ReceiptService({
        db: unreachable,
        store: new ReceiptStore(unreachable),
        journal: t.deps.journal,
        siteUrl: t.config.siteUrl,
        brandName: t.config.brandName,
        receiptTtlMinutes: t.config.receiptTtlMinutes,
        payTokenSecret: new Uint8Array(32),
      }),
      splits: new SplitService({ db: unreachable, config: t.config, chain: t.deps.chain, deployer: t.deps.deployer, approvals: t.deps.auth }),
    }));
    try {
      const key = await t.key(randomWallet());
      for (const url of ['/api/receipts?format=csv', '/api/split/transactions?format=csv']) {
        const res = await app.inject({ method: 'GET', url, headers: { 'ocp-apim-subscription-key': key } });
        assert.equal(res.statusCode, 503, url);
        assert.equal(res.json().error, 'database_unavailable', url);
      }
    } finally {
      await close();
    }
  });
});

function transactionRow(x: SplitTransaction): Record<string, string> {
  return {
    id: x.id,
    timestamp: x.timestamp,
    status: x.status,
    receipt_id: x.receiptId === null ? '' : defused(x.receiptId),
    transaction_hash: x.transactionHash,
    currency: x.currency,
    amount_base_units: x.amountBaseUnits,
    fees_base_units: x.feesBaseUnits,
    amount: String(x.amount),
    fees: String(x.fees),
  };
}

describe('GET /api/split/transactions?format=csv', () => {
  test('every transaction past the JSON cap, in the JSON order; the address filter applies', async () => {
    const wallet = randomWallet();
    const key = await t.key(wallet);
    const split = randomWallet();
    const payer = randomWallet();
    const db = t.deps.database.db;
    // 203 transfers, past the JSON list's 200; several in one block and one millisecond.
    for (let i = 0; i < 203; i++) {
      await recordSplitTransaction(
        db,
        splitTransfer(wallet, {
          splitAddress: split,
          counterparty: i % 10 === 0 ? payer : randomWallet(),
          receiptId: i === 7 ? '+SUM(A1)' : i % 2 === 0 ? `r${i}` : null,
          amountUnits: String(1_000_000 + i * 333),
          feeUnits: String(5000 + i),
          blockNumber: BigInt(100 + Math.floor(i / 3)),
          logIndex: i % 3,
          timestamp: T0 + Math.floor(i / 3) * 2000,
        }),
      );
    }
    await recordSplitTransaction(db, splitTransfer(randomWallet(), { timestamp: T0, splitAddress: split }));

    const csv = parseCsv(await t.call(key, 'GET', '/api/split/transactions?format=csv'));
    assert.deepEqual(csv.header, ['id', 'timestamp', 'status', 'receipt_id', 'transaction_hash', 'currency', 'amount_base_units', 'fees_base_units', 'amount', 'fees']);
    assert.equal(csv.rows.length, 203);
    const json = (await t.call(key, 'GET', '/api/split/transactions')).body as SplitTransaction[];
    assert.equal(json.length, 200);
    assert.deepEqual(csv.rows.slice(0, 200), json.map(transactionRow), 'the first 200 rows are the JSON list');
    assert.equal(csv.rows.find((r) => r.receipt_id?.includes('SUM'))!.receipt_id, "'+SUM(A1)");

    // Read a few at a time, the pages hold the same rows in the same order, none twice.
    const small: SplitTransaction[] = [];
    for await (const page of splitTransactionPages(db, wallet, undefined, null, 7)) small.push(...page);
    assert.deepEqual(small.map(transactionRow), csv.rows);

    const filtered = parseCsv(await t.call(key, 'GET', `/api/split/transactions?format=csv&address=${payer}`));
    const filteredJson = (await t.call(key, 'GET', `/api/split/transactions?address=${payer}`)).body as SplitTransaction[];
    assert.equal(filteredJson.length, 21);
    assert.deepEqual(filtered.rows, filteredJson.map(transactionRow));
  });
});
