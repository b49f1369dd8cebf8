/**
 * The chain worker's expiry pass on the real dev chain: receipts that can never expire (no money
 * awaited, nothing received, long past their time) neither hold back a receipt that is really
 * due nor are touched by the pass, however many there are; and the statuses that expire are
 * exactly those isAwaitingMoney names, so the index, the query and the state machine agree.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { and, eq, inArray } from 'drizzle-orm';
import { receipts, receiptStatusHistory } from '../../src/db/schema.ts';
import { RECEIPT_STATUSES, isAwaitingMoney } from '../../src/contract/receipts.ts';
import { ChainWorker, EXPIRE_PER_PASS } from '../../src/payments/worker.ts';
import { randomWallet } from '../helpers/app.ts';
import { PLATFORM, useChainApp } from './helpers.ts';
import type { ReceiptStatus } from '../../src/contract/receipts.ts';

// No background workers: each test runs its passes itself.
const f = useChainApp({ CONFIRMATIONS: '1', PLATFORM_RECIPIENT_ADDRESS: PLATFORM });

const DAY = 86_400_000;
type ReceiptRow = typeof receipts.$inferSelect;

/** A merchant without a split: the worker gives its receipts no payment address. */
async function merchant(): Promise<{ wallet: string; key: string }> {
  const wallet = randomWallet();
  return { wallet, key: await f.t.key(wallet) };
}

/** A receipt made through the API, as stored. */
async function receipt(m: { wallet: string; key: string }, id: string): Promise<ReceiptRow> {
  const res = await f.t.call(m.key, 'POST', '/api/receipts', { id, lineItems: [{ label: 'Item', priceUsd: 2 }], totalUsd: 2 });
  assert.equal(res.status, 201, JSON.stringify(res.body));
  const [row] = await f.t.deps.database.db.select().from(receipts).where(and(eq(receipts.wallet, m.wallet), eq(receipts.id, id)));
  return row!;
}

/** Copies of a stored receipt with the given ids, statuses and expiry, inserted as they are. */
async function insertCopies(from: ReceiptRow, rows: { id: string; status: ReceiptStatus; exception?: ReceiptRow['exception']; expiresAt: number }[]): Promise<void> {
  // Without the summary and write id of the receipt they copy: those name it.
  const values = rows.map((r) => ({ ...from, ...r, exception: r.exception ?? null, payToken: `${from.payToken}-${r.id}`, summaryJson: null, stateJson: null, detailJson: null, writeId: null }));
  // In batches: PostgreSQL takes at most 65,535 parameters in one statement.
  for (let i = 0; i < values.length; i += 200) await f.t.deps.database.db.insert(receipts).values(values.slice(i, i + 200));
}

const worker = () => new ChainWorker({ db: f.t.deps.database.db, chain: f.tc.chain, logger: f.t.deps.logger, confirmations: 1, platformRecipient: PLATFORM, startBlock: 0n });

test('more receipts that can never expire than a pass expires do not hold back one that is due, and stay as they were', async () => {
  const now = Date.now();
  const m = await merchant();
  const from = await receipt(m, 'template');
  const never = Array.from({ length: EXPIRE_PER_PASS + 50 }, (_, i) =>
    // Only another token arrived, or refunded while unpaid: nothing received, no money awaited.
    i % 2 === 0
      ? { id: `never-${i}`, status: 'tx_mismatch' as const, exception: 'wrong_token' as const, expiresAt: now - 30 * DAY + i }
      : { id: `never-${i}`, status: 'refunded' as const, expiresAt: now - 30 * DAY + i },
  );
  await insertCopies(from, never);
  // Made after them and due after them, so that they come first whichever way the rows are read.
  await receipt(m, 'due-1');
  const { db } = f.t.deps.database;
  await db.update(receipts).set({ expiresAt: now - 1 }).where(and(eq(receipts.wallet, m.wallet), eq(receipts.id, 'due-1')));
  const ids = never.map((r) => r.id);
  const neverRows = () => db.select().from(receipts).where(and(eq(receipts.wallet, m.wallet), inArray(receipts.id, ids))).orderBy(receipts.id);
  const before = await neverRows();

  const pass = await worker().pass(now);

  assert.equal(pass.expired, 1, 'the due receipt and nothing else expired');
  const [expired] = await db.select().from(receipts).where(and(eq(receipts.wallet, m.wallet), eq(receipts.id, 'due-1')));
  assert.equal(expired!.status, 'failed');
  assert.equal(expired!.exception, 'expired');
  assert.deepEqual(await neverRows(), before, 'the receipts that can never expire are untouched');
  const history = await db
    .select({ id: receiptStatusHistory.receiptId })
    .from(receiptStatusHistory)
    .where(and(eq(receiptStatusHistory.wallet, m.wallet), inArray(receiptStatusHistory.receiptId, ids)));
  assert.deepEqual(history, [], 'and have no history of their own');
});

test('the receipts that expire are exactly those whose status awaits money', async () => {
  const now = Date.now();
  const m = await merchant();
  const from = await receipt(m, 'template');
  const statuses: ReceiptStatus[] = [...RECEIPT_STATUSES, 'refund_partial', 'refund_requested'];
  await insertCopies(from, statuses.map((status) => ({ id: `st-${status}`, status, expiresAt: now - DAY })));

  await worker().pass(now);

  const rows = await f.t.deps.database.db.select({ id: receipts.id, status: receipts.status, expiredAt: receipts.expiredAt }).from(receipts).where(eq(receipts.wallet, m.wallet));
  const expired = rows.filter((r) => r.expiredAt !== null).map((r) => r.id).sort();
  assert.deepEqual(expired, statuses.filter(isAwaitingMoney).map((s) => `st-${s}`).sort());
  assert.ok(expired.includes('st-refund_partial') && expired.includes('st-pending') && !expired.includes('st-tx_mismatch'));
});
