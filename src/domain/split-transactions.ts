/**
 * Split transactions: the USDC transfers into a merchant's split contract and the releases out
 * of it, as the chain worker indexes them. Amounts are stored in token base units as decimal
 * strings and shown as numbers in token units.
 */
import { and, desc, eq, or, sql } from 'drizzle-orm';
import type { Tx } from '../db/client.ts';
import { splitTransactions } from '../db/schema.ts';
import { USDC_DECIMALS } from '../lib/money.ts';
import { normalizeWallet } from './wallet.ts';

/** A merchant's history can grow without bound; the list shows the newest 200. */
import { SPLIT_TRANSACTIONS_CAP, type SPLIT_TRANSACTION_KINDS } from '../contract/split.ts';
export { SPLIT_TRANSACTIONS_CAP };

/** received: a transfer into the split; released: a payout from it (the contract's closed set). */
export type SplitTransactionStatus = (typeof SPLIT_TRANSACTION_KINDS)[number];

/**
 * One split transaction as the API shows it. `receiptId` is null for a transfer that settled
 * no receipt (a payment sent to the split directly, or any release).
 */
export interface SplitTransactionView {
  id: string;
  receiptId: string | null;
  amount: number;
  currency: string;
  status: SplitTransactionStatus;
  timestamp: string;
  transactionHash: string;
  fees: number;
  /** The exact amount and fees, token base units as decimal strings (the numbers above round past ~9e15 units). */
  amountBaseUnits: string;
  feesBaseUnits: string;
  /** The token the base units are in (the chain's; null on an instance without one) and its decimals. */
  token: string | null;
  decimals: number;
}

const BASE_UNITS = /^(0|[1-9]\d*)$/;

/**
 * Base units as a decimal string to the JSON number of token units, by moving the decimal
 * point in the text: "1500000" with 6 decimals is 1.5, with no floating-point division.
 */
export function unitsToTokens(units: string, decimals = USDC_DECIMALS): number {
  if (!BASE_UNITS.test(units)) throw new RangeError(`not a base-unit amount: "${units}"`);
  const padded = units.padStart(decimals + 1, '0');
  const whole = padded.slice(0, padded.length - decimals);
  const frac = padded.slice(padded.length - decimals).replace(/0+$/, '');
  return Number(frac === '' ? whole : `${whole}.${frac}`);
}

type Row = typeof splitTransactions.$inferSelect;

function toView(r: Row, token: string | null): SplitTransactionView {
  return {
    id: r.id,
    receiptId: r.receiptId,
    amount: unitsToTokens(r.amountUnits),
    currency: r.currency,
    status: r.status,
    timestamp: new Date(r.timestamp).toISOString(),
    transactionHash: r.transactionHash,
    fees: unitsToTokens(r.feeUnits),
    amountBaseUnits: r.amountUnits,
    feesBaseUnits: r.feeUnits,
    token,
    decimals: USDC_DECIMALS,
  };
}

/**
 * The merchant's split transactions, newest first. With `address`, only rows where it is the
 * split contract or the counterparty (payer of a payment, payee of a release).
 */
export async function listSplitTransactions(
  db: Tx,
  wallet: string,
  address?: string,
  token: string | null = null,
): Promise<SplitTransactionView[]> {
  const addr = address === undefined ? undefined : normalizeWallet(address);
  const rows = await db
    .select()
    .from(splitTransactions)
    .where(
      and(
        eq(splitTransactions.wallet, wallet),
        addr === undefined ? undefined : or(eq(splitTransactions.splitAddress, addr), eq(splitTransactions.counterparty, addr)),
      ),
    )
    // NULLS LAST matches split_transactions_wallet_time_idx, so the newest rows come off the index.
    .orderBy(
      sql`${splitTransactions.timestamp} desc nulls last`,
      desc(splitTransactions.blockNumber),
      desc(splitTransactions.logIndex),
    )
    .limit(SPLIT_TRANSACTIONS_CAP);
  return rows.map((r) => toView(r, token));
}

/** How many rows an export reads at a time. */
const EXPORT_PAGE = 500;

/**
 * Every one of the merchant's split transactions that `address` selects (all without it), newest
 * first in the list's order, a page at a time: for format=csv, which has no cap. Keyset pages on
 * (timestamp, block, log index, id), so rows indexed meanwhile neither repeat nor shift the rest.
 */
export async function* splitTransactionPages(db: Tx, wallet: string, address?: string, token: string | null = null, pageSize = EXPORT_PAGE): AsyncGenerator<SplitTransactionView[]> {
  const addr = address === undefined ? undefined : normalizeWallet(address);
  let after: Row | undefined;
  for (;;) {
    const t = splitTransactions;
    const rows = await db
      .select()
      .from(t)
      .where(
        and(
          eq(t.wallet, wallet),
          addr === undefined ? undefined : or(eq(t.splitAddress, addr), eq(t.counterparty, addr)),
          after === undefined
            ? undefined
            : sql`(${t.timestamp}, ${t.blockNumber}, ${t.logIndex}, ${t.id}) < (${after.timestamp}::bigint, ${after.blockNumber.toString()}::bigint, ${after.logIndex}::integer, ${after.id}::text)`,
        ),
      )
      .orderBy(sql`${t.timestamp} desc nulls last`, desc(t.blockNumber), desc(t.logIndex), desc(t.id))
      .limit(pageSize);
    yield rows.map((r) => toView(r, token));
    if (rows.length < pageSize) return;
    after = rows[rows.length - 1];
  }
}

export interface NewSplitTransaction {
  wallet: string;
  /** Defaults to `<transactionHash>:<logIndex>`, which is unique on the chain. */
  id?: string;
  kind: 'payment' | 'release';
  splitAddress: string;
  counterparty: string;
  receiptId?: string | null;
  /** Token base units, decimal string. */
  amountUnits: string;
  feeUnits: string;
  currency: string;
  status: SplitTransactionStatus;
  transactionHash: string;
  logIndex: number;
  blockNumber: bigint;
  /** Unix ms of the block. */
  timestamp: number;
}

/**
 * Stores one indexed transfer. Re-indexing the same log (a restarted worker, a reorg replay)
 * is a no-op; returns whether a row was written.
 */
export async function recordSplitTransaction(tx: Tx, row: NewSplitTransaction): Promise<boolean> {
  for (const [field, value] of [
    ['amountUnits', row.amountUnits],
    ['feeUnits', row.feeUnits],
  ] as const) {
    if (!BASE_UNITS.test(value)) throw new RangeError(`${field} must be a base-unit decimal string, got "${value}"`);
  }
  const hash = row.transactionHash.toLowerCase();
  const inserted = await tx
    .insert(splitTransactions)
    .values({
      wallet: normalizeWallet(row.wallet),
      id: row.id ?? `${hash}:${row.logIndex}`,
      kind: row.kind,
      splitAddress: normalizeWallet(row.splitAddress),
      counterparty: normalizeWallet(row.counterparty),
      receiptId: row.receiptId ?? null,
      amountUnits: row.amountUnits,
      feeUnits: row.feeUnits,
      currency: row.currency,
      status: row.status,
      transactionHash: hash,
      logIndex: row.logIndex,
      blockNumber: row.blockNumber,
      timestamp: row.timestamp,
    })
    .onConflictDoNothing({ target: [splitTransactions.transactionHash, splitTransactions.logIndex] })
    .returning({ id: splitTransactions.id });
  return inserted.length > 0;
}

/**
 * Sets the fees of a split's payments from `from` on (block number, log index) as differences of
 * cumulative floors, as PaymentSplitter computes a payee's share: floor(total received × bps /
 * 10,000) after the payment minus the same before it. The fees of any run of payments then add up
 * to the contract's figure for them to the base unit, where flooring each payment alone would fall
 * short (1 + 4,999,999 units at 50 bps: 0 + 24,999 instead of 25,000). The running total is taken
 * in log order, whatever order rows were inserted in; a reorganisation removes only the newest
 * rows, so the older rows' fees stay right.
 */
export async function applyCumulativeFees(
  tx: Tx,
  s: { wallet: string; splitAddress: string; platformBps: number; from: { blockNumber: bigint; logIndex: number } },
): Promise<void> {
  const mine = and(eq(splitTransactions.wallet, s.wallet), eq(splitTransactions.splitAddress, s.splitAddress), eq(splitTransactions.kind, 'payment'));
  const before = sql`(${splitTransactions.blockNumber}, ${splitTransactions.logIndex}) < (${s.from.blockNumber}, ${s.from.logIndex})`;
  const [prior] = await tx
    .select({ total: sql<string | null>`sum(${splitTransactions.amountUnits}::numeric)::text` })
    .from(splitTransactions)
    .where(and(mine, before));
  const rows = await tx
    .select({ id: splitTransactions.id, amountUnits: splitTransactions.amountUnits, feeUnits: splitTransactions.feeUnits })
    .from(splitTransactions)
    .where(and(mine, sql`not ${before}`))
    .orderBy(splitTransactions.blockNumber, splitTransactions.logIndex);
  let total = BigInt(prior?.total ?? '0');
  const bps = BigInt(s.platformBps);
  for (const r of rows) {
    const next = total + BigInt(r.amountUnits);
    const fee = ((next * bps) / 10_000n - (total * bps) / 10_000n).toString();
    total = next;
    if (fee !== r.feeUnits) {
      await tx.update(splitTransactions).set({ feeUnits: fee }).where(and(eq(splitTransactions.wallet, s.wallet), eq(splitTransactions.id, r.id)));
    }
  }
}
