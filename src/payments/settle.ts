/**
 * Settles a receipt from the facts the chain holds about its payment address: sums its transfers,
 * asks the state machine (src/domain/receipt-states.ts) what that means, and stores the answer with its
 * history entries (applyReceiptEvent, src/db/receipt-events.ts), its webhook and its effect on
 * stock, in one transaction.
 */
import { and, eq, sql } from 'drizzle-orm';
import type { Logger } from 'pino';
import { getAddress } from 'viem';
import type { Tx } from '../db/client.ts';
import { inventoryItems, receipts, receiptTransfers, receiptWatch, type StoredLineItem } from '../db/schema.ts';
import { appendHistory, applyReceiptEvent, type ReceiptChange, type ReceiptUpdate } from '../db/receipt-events.ts';
import { centsToTokenUnits, centsToUsd } from '../lib/money.ts';
import { enqueueEvent, type WebhookEventType } from '../webhooks/outbox.ts';
import { wrongTokenByBalance } from './other-money.ts';
import type { ReceiptKey } from './scanner.ts';
import { watchFrom } from './watch.ts';
import { chainEvent, dueOf, exceptionOf, transition, type PaymentFacts, type ReceiptEvent, type ReceiptException, type ReceiptStatus, type Transition } from '../domain/receipt-states.ts';

type ReceiptRow = typeof receipts.$inferSelect;
type TransferRow = typeof receiptTransfers.$inferSelect;

export interface SettleContext {
  /** The receipt's token (lower-case address) and its decimals. */
  token: string;
  decimals: number;
  head: bigint;
  confirmations: number;
  now: number;
  logger: Logger;
}

export interface SettleOutcome {
  /** Token base units at the payment address that still have to be swept into the split. */
  unswept: bigint;
  payAddress: string | null;
}

/** The receipt's total in token base units. */
export function amountOf(row: Pick<ReceiptRow, 'totalCents'>, decimals: number): bigint {
  return centsToTokenUnits(row.totalCents, decimals);
}

/**
 * What a receipt learnt from balances rather than logs: another token or native ETH found at its
 * payment address (`balanceOf`, `eth_getBalance`). A log is a claim any contract can emit; only a
 * balance says that something other than the receipt's token is there.
 */
export interface BalanceFacts {
  wrongToken: boolean;
}

export const NO_BALANCE_FACTS: BalanceFacts = Object.freeze({ wrongToken: false });

/** Log order: block, then log index. */
function byLogOrder(a: TransferRow, b: TransferRow): number {
  return a.blockNumber === b.blockNumber ? a.logIndex - b.logIndex : a.blockNumber < b.blockNumber ? -1 : 1;
}

/**
 * The receipt's money: transfers of its token, of more than zero, into its payment address, in
 * log order. Nothing else (another contract's Transfer log, a zero-value transfer) changes its
 * status, depth, expiry, payer or events.
 */
export function countedTransfers(transfers: readonly TransferRow[], token: string): TransferRow[] {
  return transfers.filter((t) => t.kind === 'in' && t.token === token && BigInt(t.amountUnits) > 0n).sort(byLogOrder);
}

/** The receipt's sweeps of its token into the split, of more than zero, in log order. */
function countedSweeps(transfers: readonly TransferRow[], token: string): TransferRow[] {
  return transfers.filter((t) => t.kind === 'sweep' && t.token === token && BigInt(t.amountUnits) > 0n).sort(byLogOrder);
}

export function factsOf(
  row: ReceiptRow,
  transfers: TransferRow[],
  c: Pick<SettleContext, 'token' | 'decimals' | 'head' | 'confirmations'>,
  balance: BalanceFacts = NO_BALANCE_FACTS,
): PaymentFacts & { swept: boolean; sweptUnits: bigint } {
  const deep = (t: TransferRow) => c.head - t.blockNumber + 1n >= BigInt(c.confirmations);
  const counted = countedTransfers(transfers, c.token);
  const sweeps = countedSweeps(transfers, c.token);
  const paid = counted.reduce((s, t) => s + BigInt(t.amountUnits), 0n);
  const sweptUnits = sweeps.reduce((s, t) => s + BigInt(t.amountUnits), 0n);
  return {
    amount: amountOf(row, c.decimals),
    paid,
    wrongToken: balance.wrongToken,
    atDepth: counted.every(deep),
    swept: paid > 0n && sweptUnits >= paid,
    sweptUnits,
    sweptAtDepth: sweeps.every(deep),
    expiredBefore: row.expiredAt !== null,
  };
}

/** The key of the transfer an event reports: its transaction and log index. */
function transferKey(t: Pick<TransferRow, 'transactionHash' | 'logIndex'> | undefined): string {
  return t === undefined ? 'none' : `${t.transactionHash}:${t.logIndex}`;
}

/**
 * The webhook payload of a receipt's payment. `currency` is the receipt's (the currency it is
 * priced in, USD, as the receipt's own field); amount, amountPaid and amountDue are token base
 * units, kept as they were for consumers that read them, and named by their unit beside them:
 * totalBaseUnits, amountPaidBaseUnits, amountDueBaseUnits with token and decimals
 * (docs/decisions.md "Units").
 */
export function paymentEventData(
  row: ReceiptRow,
  f: Pick<PaymentFacts, 'amount' | 'paid'>,
  status: ReceiptStatus,
  exception: ReceiptException | null,
  c: Pick<SettleContext, 'token' | 'decimals'>,
) {
  const due = dueOf(f.amount, f.paid).toString();
  return {
    receiptId: row.id,
    merchant: row.wallet,
    status,
    exception,
    totalUsd: centsToUsd(row.totalCents),
    currency: row.currency,
    payTo: row.payAddress,
    amount: f.amount.toString(),
    amountPaid: f.paid.toString(),
    amountDue: due,
    transactionHash: row.transactionHash,
    transactionTimestamp: row.transactionTimestamp,
    metadata: row.metadata,
    totalBaseUnits: f.amount.toString(),
    amountPaidBaseUnits: f.paid.toString(),
    amountDueBaseUnits: due,
    token: getAddress(c.token),
    decimals: c.decimals,
  };
}

const EVENT_OF_STATUS: Partial<Record<ReceiptStatus, WebhookEventType>> = {
  completed: 'receipt.completed',
  tx_mismatch: 'receipt.tx_mismatch',
};

/**
 * What settling finds for a locked receipt: its facts, the event they amount to, and the change
 * the state machine makes of it; `set` only when something changed (else nothing is stored).
 */
interface Settlement extends ReceiptChange {
  facts: ReturnType<typeof factsOf>;
  event: ReceiptEvent;
  exception: ReceiptException | null;
  transfers: TransferRow[];
  /** The newest counted transfer, the one an event reports. */
  newest: TransferRow | undefined;
}

/** The settlement of a receipt from its transfers, read under the receipt's lock. */
async function settlementOf(tx: Tx, row: ReceiptRow, c: SettleContext): Promise<Settlement> {
  const transfers = await tx
    .select()
    .from(receiptTransfers)
    .where(and(eq(receiptTransfers.wallet, row.wallet), eq(receiptTransfers.receiptId, row.id)));
  const f = factsOf(row, transfers, c, balanceFactsOf(row));
  const initial = row.source === 'terminal' ? 'generated' : 'pending';
  // No money of the token (never any, or a reorganisation withdrew it all): back where it began.
  const event: ReceiptEvent = chainEvent(f) ?? { type: 'withdrawn', initial };
  const status = row.status;
  // Several steps at once (with CONFIRMATIONS=1 a transfer is deep when first seen): the history
  // still shows each one the receipt went through.
  const moved = transition(status, event);
  const exception = exceptionOf(f);
  const newest = countedTransfers(transfers, c.token).at(-1);
  const paidBefore = BigInt(row.paidUnits);
  const settlement = { facts: f, event, exception, transfers, newest, transition: moved, note: null };
  if (moved === null && exception === row.exception && f.paid === paidBefore) return settlement;
  const set: ReceiptUpdate = {
    exception,
    paidUnits: f.paid.toString(),
    transactionHash: newest?.transactionHash ?? null,
    transactionTimestamp: newest?.timestamp ?? null,
  };
  // Nothing is rewritten after completion: the completed payment keeps its transaction.
  if (status === 'completed' && (moved?.to ?? status) === 'completed') {
    delete set.transactionHash;
    delete set.transactionTimestamp;
  }
  const reversal = f.paid < paidBefore ? `payment reversed: ${paidBefore - f.paid} base units left the chain in a reorganisation; ` : '';
  return { ...settlement, set, note: `${reversal}${f.paid} of ${f.amount} base units received${exception === null ? '' : `; ${exception}`}` };
}

/** Brings one receipt in line with its transfers. */
export async function settleReceipt(tx: Tx, key: ReceiptKey, c: SettleContext): Promise<SettleOutcome> {
  const { row, change: settled } = await applyReceiptEvent(tx, {
    wallet: key.wallet,
    receiptId: key.receiptId,
    source: 'chain',
    at: c.now,
    columns: 'all',
    decide: (locked) => (locked === undefined ? null : settlementOf(tx, locked, c)),
  });
  if (row === undefined || settled === null) {
    await unwatch(tx, key);
    return { unswept: 0n, payAddress: null };
  }
  const { facts: f, event, exception, transfers, newest } = settled;
  const status = row.status;
  const to = settled.transition?.to ?? status;
  const paidBefore = BigInt(row.paidUnits);
  const chainEntry = { wallet: row.wallet, receiptId: row.id, source: 'chain', at: c.now } as const;

  if (status === 'completed' && event.type !== 'confirmed' && paidBefore > 0n && f.paid < paidBefore) {
    // Completed at depth, then money withdrawn: a reorganisation deeper than CONFIRMATIONS.
    c.logger.error({ wallet: row.wallet, receiptId: row.id, paid: f.paid.toString(), before: paidBefore.toString() }, 'a completed payment left the chain in a reorganisation deeper than CONFIRMATIONS');
    await appendHistory(tx, chainEntry, 'completed', `warning: a reorganisation deeper than the confirmation depth removed payments; ${f.paid} of ${f.amount} base units remain on chain`);
  }

  if (settled.set !== undefined) {
    const updated = { ...row, ...settled.set, status: to, updatedAt: c.now };
    if (f.paid > paidBefore) {
      // Keyed by the transfer it reports, not by the sum: a new payment of the same amount after a
      // reversal is news again.
      await enqueueEvent(tx, {
        wallet: row.wallet,
        type: 'receipt.payment_received',
        dedupeKey: `${row.id}:${transferKey(newest)}`,
        data: paymentEventData(updated, f, to, exception, c),
      }, c.now);
    }
    if (f.paid < paidBefore && status !== 'completed' && to === status) {
      // The status stayed: the history still says the money left (a moved status's entry says it).
      // Money the receipt had left the chain (a reorganisation): the merchant may have shipped.
      // Once per change of the stored sum, which this transaction moves under the row's lock.
      await appendHistory(tx, chainEntry, to, `payment reversed: ${paidBefore - f.paid} base units left the chain in a reorganisation; ${f.paid} of ${f.amount} remain`);
    }
    if (f.paid < paidBefore) {
      await enqueueEvent(tx, {
        wallet: row.wallet,
        type: 'receipt.payment_reversed',
        dedupeKey: `${row.id}:${paidBefore}>${f.paid}:${c.now}`,
        data: { ...paymentEventData(updated, f, to, exception, c), amountReversed: (paidBefore - f.paid).toString(), amountReversedBaseUnits: (paidBefore - f.paid).toString() },
      }, c.now);
    }
    const type = to !== status ? EVENT_OF_STATUS[to] : undefined;
    if (type !== undefined) {
      await enqueueEvent(tx, {
        wallet: row.wallet,
        type,
        dedupeKey: type === 'receipt.completed' ? row.id : `${row.id}:${to}:${transferKey(newest)}`,
        data: paymentEventData(updated, f, to, exception, c),
      }, c.now);
    }
    // Expired with none of its token (exception expired, or wrong_token for other money), now paid.
    if (row.expiredAt !== null && paidBefore === 0n && exception === 'paid_late' && row.source === 'order') await takeStockAgain(tx, row, c.now);
  }

  const unswept = f.paid > f.sweptUnits ? f.paid - f.sweptUnits : 0n;
  const settledAtDepth = event.type === 'withdrawn' || event.type === 'confirmed' || event.type === 'short';
  if (unswept === 0n && settledAtDepth) await unwatch(tx, key);
  else await watchFrom(tx, key, dueBlockOf(event, f, transfers, c));
  return { unswept, payAddress: row.payAddress };
}

/**
 * The block from which settling a watched receipt again can change something, when only depth is
 * awaited: money short of the total, or covered and swept, whose newest transfer or sweep is not
 * yet CONFIRMATIONS deep. Null (every pass) when a sweep is owed or anything else may happen; new
 * money and reorganisations reach the receipt through the scanner whatever this says.
 */
function dueBlockOf(event: ReceiptEvent, f: PaymentFacts, transfers: readonly TransferRow[], c: Pick<SettleContext, 'token' | 'confirmations'>): bigint | null {
  const waitsForDepth = event.type === 'covered' || (event.type === 'money_seen' && f.paid < f.amount);
  if (!waitsForDepth) return null;
  const blocks = [...countedTransfers(transfers, c.token), ...countedSweeps(transfers, c.token)].map((t) => t.blockNumber);
  const newest = blocks.reduce((a, b) => (b > a ? b : a), 0n);
  return newest + BigInt(Math.max(1, c.confirmations)) - 1n;
}

/** What balances said about the receipt's payment address: ETH or another token found there (other-money.ts). */
function balanceFactsOf(row: ReceiptRow): BalanceFacts {
  return { wrongToken: wrongTokenByBalance(row) };
}

async function unwatch(tx: Tx, key: ReceiptKey): Promise<void> {
  await tx.delete(receiptWatch).where(and(eq(receiptWatch.wallet, key.wallet), eq(receiptWatch.receiptId, key.receiptId)));
}

/** The limited-stock lines of an order: sku and quantity. */
function stockLines(items: StoredLineItem[]): { sku: string; qty: number }[] {
  return items.filter((i) => i.sku !== undefined && (i.kind ?? 'item') === 'item').map((i) => ({ sku: i.sku!, qty: i.qty ?? 1 }));
}

/**
 * Expires a receipt that received none of its token in time: failed, exception expired (or
 * wrong_token when other money was found at its address); an order's reserved stock returns to
 * inventory. Returns false when the receipt was no longer expirable.
 */
export async function expireReceipt(tx: Tx, key: ReceiptKey, now: number, token: string): Promise<boolean> {
  const { row, change: expiry } = await applyReceiptEvent(tx, {
    wallet: key.wallet,
    receiptId: key.receiptId,
    source: 'chain',
    at: now,
    columns: 'all',
    decide: (locked) => (locked === undefined ? null : expiryOf(tx, locked, now, token)),
  });
  if (row === undefined || expiry === null) return false;
  if (row.source === 'order') {
    for (const line of stockLines(row.lineItems)) {
      await tx
        .update(inventoryItems)
        .set({ stockQty: sql`${inventoryItems.stockQty} + ${line.qty}`, updatedAt: now })
        .where(and(eq(inventoryItems.wallet, row.wallet), eq(inventoryItems.sku, line.sku), sql`${inventoryItems.stockQty} <> -1`));
    }
  }
  const { to } = expiry.transition;
  const amount = amountOf(row, 6);
  await enqueueEvent(tx, {
    wallet: row.wallet,
    type: 'receipt.expired',
    dedupeKey: row.id,
    data: paymentEventData({ ...row, status: to, exception: expiry.exception }, { amount, paid: 0n }, to, expiry.exception, { token, decimals: 6 }),
  }, now);
  return true;
}

/**
 * A receipt's expiry, decided under its lock: null when it is no longer expirable (expired
 * already, paid, not yet due, money recorded but not yet settled, or a status that cannot fail).
 */
async function expiryOf(tx: Tx, row: ReceiptRow, now: number, token: string): Promise<(ReceiptChange & { transition: Transition; exception: ReceiptException | null }) | null> {
  if (row.expiredAt !== null || row.paidUnits !== '0' || row.expiresAt > now) return null;
  // Money recorded but not yet settled keeps it open; a log of another contract or a zero-value
  // transfer does not (a stranger could otherwise hold an order's stock forever).
  const transfers = await tx
    .select()
    .from(receiptTransfers)
    .where(and(eq(receiptTransfers.wallet, row.wallet), eq(receiptTransfers.receiptId, row.id), eq(receiptTransfers.kind, 'in')));
  if (countedTransfers(transfers, token).length > 0) return null;
  const expired = transition(row.status, { type: 'expired' });
  if (expired === null) return null;
  // Other money found by balance never stops expiry; the receipt keeps wrong_token so the merchant
  // still sees it there and can sweep it.
  const exception = exceptionOf({ amount: 0n, paid: 0n, wrongToken: wrongTokenByBalance(row), expiredBefore: true });
  let note = exception === 'wrong_token' ? 'expired with none of its token received (other money is at its address; sweep it from the admin app)' : 'expired with nothing received';
  // The order's reserved stock returns to inventory (expireReceipt, in the same transaction).
  if (row.source === 'order') note += '; reserved stock returned to inventory';
  return { transition: expired, set: { exception, expiredAt: now }, note, exception };
}

/** An expired order paid after all: its stock is taken again where it can be, and the merchant told where not. */
async function takeStockAgain(tx: Tx, row: ReceiptRow, now: number): Promise<void> {
  const short: string[] = [];
  for (const line of stockLines(row.lineItems)) {
    const taken = await tx
      .update(inventoryItems)
      .set({ stockQty: sql`case when ${inventoryItems.stockQty} = -1 then -1 else ${inventoryItems.stockQty} - ${line.qty} end`, updatedAt: now })
      .where(and(eq(inventoryItems.wallet, row.wallet), eq(inventoryItems.sku, line.sku), sql`(${inventoryItems.stockQty} = -1 or ${inventoryItems.stockQty} >= ${line.qty})`))
      .returning({ sku: inventoryItems.sku });
    if (taken.length === 0) short.push(`${line.qty} × ${line.sku}`);
  }
  const note =
    short.length === 0
      ? 'paid after expiry: stock taken again'
      : `paid after expiry: not enough stock to take again for ${short.join(', ')}; nothing was oversold, fulfil or refund by hand`;
  await appendHistory(tx, { wallet: row.wallet, receiptId: row.id, source: 'chain', at: now }, row.status, note);
}
