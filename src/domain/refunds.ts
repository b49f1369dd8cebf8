/**
 * Refunds: each is logged as an entry and in the receipt's status history and sent as
 * `receipt.refund_recorded`; the refunds of a receipt never add up to more than what it took (its
 * total, or what arrived when more arrived: an overpaid receipt's surplus can be refunded), and
 * refunds reaching the total leave it `refunded` and send `receipt.refunded`.
 *
 * A refund that names its transaction (`txHash`) is checked on the chain before it is stored: the
 * transaction is mined and succeeded, and one of its ERC-20 Transfer logs (decoded by the event's
 * signature, so an Approval or any other log never counts) moves the receipt's token to the buyer,
 * from the merchant's wallet, split or the receipt's payment address, at least the refunded
 * amount, and no other refund used that log. A transfer to the buyer from anyone else is recorded
 * unverified, never verified. The log is stored with the refund, by its place in the transaction
 * (a unique index on the transaction and that place keeps it to one refund, whoever races, and
 * wherever a reorganisation moves the transaction), with the block that holds it.
 *
 * The refund is verified once that transfer is CONFIRMATIONS deep: at once when it already is,
 * else by the chain worker (src/payments/refund-proofs.ts), which also withdraws `verified` when a
 * reorganisation removes the transfer and verifies it again if it is mined again, telling the
 * merchant each time (`receipt.refund_verified`, `receipt.refund_unverified`).
 * Without `txHash` the refund is recorded unverified, as the specification allows.
 */
import { and, eq, isNotNull, sum } from 'drizzle-orm';
import { erc20Abi, parseEventLogs, TransactionReceiptNotFoundError, type Hex } from 'viem';
import type { ChainDeps } from '../chain/client.ts';
import { ChainUnavailable } from '../chain/split-setup-chain.ts';
import type { Db, Tx } from '../db/client.ts';
import { receipts, receiptStatusHistory, refunds, splitVersions, type RefundItem } from '../db/schema.ts';
import { newId } from '../lib/ids.ts';
import { enqueueEvent } from '../webhooks/outbox.ts';
import { AppError, InvalidInput, NotFound } from '../lib/errors.ts';
import { centsToTokenUnits, centsToUsd, usdToCents } from '../lib/money.ts';
import { isAddress, normalizeWallet } from './wallet.ts';
import { claimWrite } from '../db/write-claims.ts';
import type { ReceiptStatus, RefundVerification } from '../contract/receipts.ts';
import { freshWrite, type Write } from './writes.ts';

export interface RefundInput {
  receiptId?: unknown;
  wallet?: unknown;
  buyer?: unknown;
  usd?: unknown;
  items?: unknown;
  txHash?: unknown;
}

export interface RefundResult {
  refundId: string;
  refundedUsd: number;
  status: ReceiptStatus;
  /** True when the refund's transfer from the merchant's own addresses is CONFIRMATIONS deep. */
  verified: boolean;
  verification: RefundVerification;
}

/** One ERC-20 Transfer log of a transaction. Addresses in lower case; `value` in token base units. */
export interface TokenTransfer {
  logIndex: number;
  /** Its place among its transaction's logs (0 for the first): the same in whichever block the transaction is. */
  position: number;
  token: string;
  from: string;
  to: string;
  value: bigint;
}

/** What the chain says about a refund's transaction. */
export type RefundTransaction =
  | { state: 'not_mined' }
  | { state: 'reverted' }
  | { state: 'mined'; blockNumber: bigint; blockHash: string; transfers: TokenTransfer[] };

/** The chain as refunds need it: the receipts' token, a transaction's Transfer logs and how deep is deep. */
export interface RefundChain {
  /** The token receipts are paid in, on which chain: lower-case address, decimals and symbol. */
  token: { chainId: number; address: string; decimals: number; symbol: string };
  /** CONFIRMATIONS: the depth at which a refund's transfer verifies it. */
  confirmations: number;
  readTransaction(hash: Hex): Promise<RefundTransaction>;
  /** The newest block's number. */
  head(): Promise<bigint>;
}

/** Why a refund's transaction does not prove it; `reason` travels in the 400 answer beside the message. */
export type RefundRefusal = 'not_mined' | 'reverted' | 'no_transfer' | 'too_little' | 'already_used';

export class RefundNotVerified extends AppError {
  constructor(
    readonly reason: RefundRefusal,
    message: string,
  ) {
    super(400, 'invalid_input', message, { reason });
  }
}

/** A refund with txHash on an instance without a chain: nothing was stored; retry where the chain is. */
export class RefundChainMissing extends AppError {
  constructor() {
    super(
      503,
      'chain_unavailable',
      'This instance runs without a chain, so the refund transaction cannot be checked; nothing was recorded. ' +
        'Record the refund without txHash, or retry on an instance with a chain',
    );
  }
}

const TX_HASH = /^0x[0-9a-fA-F]{64}$/;

/**
 * The most a receipt's refunds may add up to, in cents: its total, or what arrived when more
 * arrived (token base units, floored to the cent).
 */
export function refundCapCents(totalCents: bigint, paidUnits: bigint, decimals: number): bigint {
  const arrived = decimals >= 2 ? paidUnits / 10n ** BigInt(decimals - 2) : paidUnits * 10n ** BigInt(2 - decimals);
  return arrived > totalCents ? arrived : totalCents;
}

/** Checks a refund body in the spec's order of error codes. */
export function parseRefund(input: RefundInput) {
  const { receiptId, wallet, buyer, usd, items, txHash } = input;
  if (typeof receiptId !== 'string' || receiptId.trim() === '') {
    throw new InvalidInput('receiptId is required', 'missing_receipt_id');
  }
  if (!isAddress(wallet)) throw new InvalidInput('wallet must be a 0x-prefixed 40-hex address', 'invalid_wallet');
  if (!isAddress(buyer)) throw new InvalidInput('buyer must be a 0x-prefixed 40-hex address', 'invalid_buyer');
  let cents: bigint;
  try {
    cents = usdToCents(usd as number, 'usd');
  } catch (err) {
    throw new InvalidInput(err instanceof Error ? err.message : 'usd is invalid', 'invalid_usd');
  }
  if (cents === 0n) throw new InvalidInput('usd must be greater than zero', 'invalid_usd');
  const parsedItems: RefundItem[] = [];
  if (items !== undefined) {
    if (!Array.isArray(items) || items.length > 200) throw new InvalidInput('items must be an array of at most 200 items');
    items.forEach((raw: unknown, i) => {
      const it = (typeof raw === 'object' && raw !== null ? raw : {}) as Record<string, unknown>;
      if (typeof it.label !== 'string' || it.label.trim() === '' || it.label.length > 200) {
        throw new InvalidInput(`items[${i}].label must be 1-200 characters`);
      }
      const qty = it.qty ?? 1;
      if (typeof qty !== 'number' || !Number.isInteger(qty) || qty < 1) {
        throw new InvalidInput(`items[${i}].qty must be an integer >= 1`);
      }
      parsedItems.push({ label: it.label.trim(), priceCents: usdToCents(it.priceUsd as number, `items[${i}].priceUsd`).toString(), qty });
    });
  }
  if (txHash !== undefined && txHash !== null && (typeof txHash !== 'string' || !TX_HASH.test(txHash))) {
    throw new InvalidInput('txHash must be a 0x-prefixed 64-hex transaction hash');
  }
  return {
    receiptId,
    wallet: normalizeWallet(wallet),
    buyer: normalizeWallet(buyer),
    cents,
    items: parsedItems,
    txHash: typeof txHash === 'string' ? txHash.toLowerCase() : null,
  };
}

/** Why no log of a mined transaction proves the refund; `largest`: the most any log sent the buyer. */
export type TransferRefusal = { ok: false; reason: 'no_transfer' | 'too_little' | 'already_used'; largest?: bigint };

/**
 * Picks the Transfer log of `transfers` that proves a refund: the token, to the buyer, from one of
 * the merchant's own `senders` (its wallet, its split, the receipt's payment address) and never
 * from the buyer itself, at least `minUnits`, not `used` by another refund (by its place in the
 * transaction); the first such log. `transfer: null`: the transaction does send the token to the buyer, but only from someone
 * else (another merchant, a stranger, the buyer, a mint): the refund is recorded unverified, never
 * verified, and the transfer stays free for its sender's own refund. A refusal names the first
 * condition no log meets.
 */
export function matchRefundTransfer(p: {
  transfers: readonly TokenTransfer[];
  token: string;
  buyer: string;
  minUnits: bigint;
  used: ReadonlySet<number>;
  senders: ReadonlySet<string>;
}): { ok: true; transfer: TokenTransfer | null } | TransferRefusal {
  const toBuyer = p.transfers.filter((t) => t.token === p.token && t.to === p.buyer && t.from !== t.to);
  if (toBuyer.length === 0) return { ok: false, reason: 'no_transfer' };
  const own = toBuyer.filter((t) => p.senders.has(t.from));
  if (own.length === 0) return { ok: true, transfer: null };
  const enough = own.filter((t) => t.value >= p.minUnits);
  if (enough.length === 0) return { ok: false, reason: 'too_little', largest: own.reduce((m, t) => (t.value > m ? t.value : m), 0n) };
  const free = enough.filter((t) => !p.used.has(t.position)).sort((a, b) => a.position - b.position);
  return free.length === 0 ? { ok: false, reason: 'already_used' } : { ok: true, transfer: free[0]! };
}

/**
 * The chain side of refunds on `chain`, or undefined without one. Reads the token at each call:
 * the dev chain's token is checked again after an anvil restart.
 */
export function refundChainOf(chain: ChainDeps | undefined, confirmations: number): RefundChain | undefined {
  if (chain === undefined) return undefined;
  return {
    get token() {
      return { chainId: chain.chainId, address: chain.usdc.address.toLowerCase(), decimals: chain.usdc.decimals, symbol: chain.usdc.symbol };
    },
    confirmations,
    async head() {
      try {
        return await chain.publicClient.getBlockNumber({ cacheTime: 0 });
      } catch (err) {
        throw new ChainUnavailable('reading the newest block', err);
      }
    },
    async readTransaction(hash) {
      let receipt;
      try {
        receipt = await chain.publicClient.getTransactionReceipt({ hash });
      } catch (err) {
        // A pending or unknown transaction has no receipt yet.
        if (err instanceof TransactionReceiptNotFoundError) return { state: 'not_mined' };
        throw new ChainUnavailable('checking the refund transaction', err);
      }
      if (receipt.status !== 'success') return { state: 'reverted' };
      // By the event's signature and strictly: an Approval, or an ERC-721 Transfer (same topic, no data), is skipped.
      const logs = parseEventLogs({ abi: erc20Abi, eventName: 'Transfer', logs: receipt.logs, strict: true });
      // A transaction's logs are consecutive in its block: the first one's index is its offset.
      const first = receipt.logs[0]?.logIndex ?? 0;
      return {
        state: 'mined',
        blockNumber: receipt.blockNumber,
        blockHash: receipt.blockHash.toLowerCase(),
        transfers: logs.map((l) => ({
          logIndex: l.logIndex,
          position: l.logIndex - first,
          token: l.address.toLowerCase(),
          from: l.args.from.toLowerCase(),
          to: l.args.to.toLowerCase(),
          value: l.args.value,
        })),
      };
    },
  };
}

type ParsedRefund = ReturnType<typeof parseRefund>;

type MinedTransaction = Extract<RefundTransaction, { state: 'mined' }>;

/** A refund's transaction as mined, with the newest block, or its refusal when it is not mined or reverted. */
async function minedTransaction(chain: RefundChain, txHash: string): Promise<MinedTransaction & { head: bigint }> {
  const [tx, head] = await Promise.all([chain.readTransaction(txHash as Hex), chain.head()]);
  if (tx.state === 'not_mined') {
    throw new RefundNotVerified('not_mined', `Transaction ${txHash} is not mined yet (or this chain does not know it); record the refund once it is`);
  }
  if (tx.state === 'reverted') throw new RefundNotVerified('reverted', `Transaction ${txHash} reverted: it moved no money`);
  // A node behind the one that answered the receipt: the block counts as the head.
  return { ...tx, head: head > tx.blockNumber ? head : tx.blockNumber };
}

/** Whether a transfer in `block` is `confirmations` deep at `head`. */
export function deepEnough(block: bigint, head: bigint, confirmations: number): boolean {
  return head - block + 1n >= BigInt(confirmations);
}

/** The addresses a merchant's refund may come from: its wallet, its splits (every version), the receipt's payment address. */
export async function refundSenders(tx: Tx, wallet: string, payAddress: string | null): Promise<Set<string>> {
  const splits = await tx.select({ address: splitVersions.address }).from(splitVersions).where(eq(splitVersions.wallet, wallet));
  return new Set([wallet, ...splits.map((s) => s.address?.toLowerCase()), payAddress?.toLowerCase()].filter((a): a is string => a != null));
}

type RefundRow = typeof refunds.$inferSelect;

/** How far a refund's transfer is proven (REFUND_VERIFICATIONS); refunds verified before positions were kept stay verified. */
export function verificationOf(r: Pick<RefundRow, 'verifiedAt' | 'logPosition' | 'removedAt'>): RefundVerification {
  if (r.verifiedAt !== null) return 'verified';
  if (r.logPosition === null) return 'none';
  return r.removedAt !== null ? 'removed' : 'confirming';
}

/** The refused refund's message, naming what the transaction lacks. */
function refusalMessage(p: ParsedRefund & { txHash: string }, chain: RefundChain, refusal: TransferRefusal, minUnits: bigint): string {
  const what = `${chain.token.symbol} (${chain.token.address})`;
  switch (refusal.reason) {
    case 'no_transfer':
      return `Transaction ${p.txHash} has no transfer of ${what} to the buyer ${p.buyer}`;
    case 'too_little':
      return (
        `Transaction ${p.txHash} transfers too little to the buyer: ${refusal.largest} base units of ${what}, ` +
        `and a refund of ${centsToUsd(p.cents)} USD needs at least ${minUnits}`
      );
    case 'already_used':
      return `The transfer to the buyer in transaction ${p.txHash} is already used by another refund`;
  }
}

export async function refundReceipt(
  db: Db,
  p: ParsedRefund & { by: string },
  chain?: RefundChain,
  now = Date.now(),
  write: Write = freshWrite(),
): Promise<RefundResult> {
  const refundId = newId('rfd');
  let mined: (MinedTransaction & { head: bigint }) | null = null;
  if (p.txHash !== null) {
    if (chain === undefined) throw new RefundChainMissing();
    // The receipt is looked for first, so a wrong id answers 404 without asking the chain.
    const [exists] = await db
      .select({ id: receipts.id })
      .from(receipts)
      .where(and(eq(receipts.wallet, p.wallet), eq(receipts.id, p.receiptId)));
    if (exists === undefined) throw new NotFound(`Receipt ${p.receiptId} not found`);
    // Read outside the transaction: no row stays locked while the chain answers.
    mined = await minedTransaction(chain, p.txHash);
  }
  return db.transaction(async (tx) => {
    // The same write again (a retry whose first answer was lost) answers with the refund it made.
    const claim = await claimWrite(tx, write, { wallet: p.wallet, kind: 'refund', ref: refundId }, now);
    if (!claim.fresh) return refundResultOf(tx, p.wallet, claim.ref ?? '');
    const [receipt] = await tx
      .select()
      .from(receipts)
      .where(and(eq(receipts.wallet, p.wallet), eq(receipts.id, p.receiptId)))
      .for('update');
    if (receipt === undefined) throw new NotFound(`Receipt ${p.receiptId} not found`);
    const [done] = await tx
      .select({ total: sum(refunds.amountCents) })
      .from(refunds)
      .where(and(eq(refunds.wallet, p.wallet), eq(refunds.receiptId, p.receiptId)));
    const already = BigInt(done?.total ?? '0');
    const cap = refundCapCents(receipt.totalCents, BigInt(receipt.paidUnits), chain?.token.decimals ?? 6);
    if (already + p.cents > cap) {
      const what = cap > receipt.totalCents ? `what arrived, ${centsToUsd(cap)} (its total is ${centsToUsd(receipt.totalCents)})` : `the receipt's ${centsToUsd(cap)}`;
      throw new InvalidInput(`Refunds would total ${centsToUsd(already + p.cents)}, more than ${what} (already refunded ${centsToUsd(already)})`, 'invalid_usd');
    }
    let proof: TokenTransfer | null = null;
    if (mined !== null && chain !== undefined && p.txHash !== null) {
      // Any merchant's refund counts: one transfer never proves two refunds. Refunds stored before
      // positions were kept name the log by its index in the block they saw.
      const usedRows = await tx
        .select({ logIndex: refunds.logIndex, logPosition: refunds.logPosition })
        .from(refunds)
        .where(and(eq(refunds.txHash, p.txHash), isNotNull(refunds.logIndex)));
      const used = new Set(usedRows.filter((r) => r.logPosition !== null).map((r) => r.logPosition!));
      for (const r of usedRows) {
        const legacy = r.logPosition === null ? mined.transfers.find((t) => t.logIndex === r.logIndex) : undefined;
        if (legacy !== undefined) used.add(legacy.position);
      }
      const minUnits = centsToTokenUnits(p.cents, chain.token.decimals);
      const match = matchRefundTransfer({
        transfers: mined.transfers,
        token: chain.token.address,
        buyer: p.buyer,
        minUnits,
        used,
        senders: await refundSenders(tx, p.wallet, receipt.payAddress),
      });
      if (!match.ok) throw new RefundNotVerified(match.reason, refusalMessage({ ...p, txHash: p.txHash }, chain, match, minUnits));
      proof = match.transfer;
    }
    const deep = mined !== null && chain !== undefined && deepEnough(mined.blockNumber, mined.head, chain.confirmations);
    const verification: RefundVerification = proof === null ? 'none' : deep ? 'verified' : 'confirming';
    const inserted = await tx
      .insert(refunds)
      .values({
        wallet: p.wallet,
        id: refundId,
        receiptId: p.receiptId,
        buyer: p.buyer,
        amountCents: p.cents,
        items: p.items,
        txHash: p.txHash,
        logIndex: proof?.logIndex ?? null,
        logPosition: proof?.position ?? null,
        amountUnits: proof?.value.toString() ?? null,
        blockNumber: proof === null || mined === null ? null : mined.blockNumber,
        blockHash: proof === null || mined === null ? null : mined.blockHash,
        verifiedAt: proof !== null && deep ? now : null,
        createdBy: p.by,
        createdAt: now,
      })
      // The transfer's unique indexes (by position, and by block log index for older refunds).
      .onConflictDoNothing()
      .returning({ id: refunds.id });
    if (inserted.length === 0) {
      // Another refund took the same transfer between our read and our insert.
      throw new RefundNotVerified('already_used', `The transfer to the buyer in transaction ${p.txHash} is already used by another refund`);
    }
    // Refunds reaching the total make it refunded, once; a refund of the surplus beyond is recorded as such.
    const full = already < receipt.totalCents && already + p.cents >= receipt.totalCents;
    const status = full ? 'refunded' : receipt.status;
    if (full) {
      await tx
        .update(receipts)
        .set({ status: 'refunded', updatedAt: now })
        .where(and(eq(receipts.wallet, p.wallet), eq(receipts.id, p.receiptId)));
    }
    const where =
      p.txHash === null
        ? ' (unverified)'
        : proof === null
          ? ` in ${p.txHash} (unverified: not sent from the merchant's wallet, split or payment address)`
          : ` in ${p.txHash} log ${proof.logIndex} (${deep ? 'verified' : `verified once ${chain?.confirmations} blocks deep`})`;
    await tx.insert(receiptStatusHistory).values({
      wallet: p.wallet,
      receiptId: p.receiptId,
      status: full ? 'refunded' : 'refund_partial',
      source: 'admin',
      note: `refund ${refundId}: ${centsToUsd(p.cents)} USD to ${p.buyer}${where}`,
      at: now,
    });
    // In the same transaction: the refund and its notifications commit together.
    const data = {
      receiptId: p.receiptId,
      merchant: p.wallet,
      status,
      totalUsd: centsToUsd(receipt.totalCents),
      refundedUsd: centsToUsd(already + p.cents),
      currency: receipt.currency,
      metadata: receipt.metadata,
    };
    await enqueueEvent(
      tx,
      {
        wallet: p.wallet,
        type: 'receipt.refund_recorded',
        dedupeKey: refundId,
        data: { ...data, refundId, usd: centsToUsd(p.cents), amountUsd: centsToUsd(p.cents), buyer: p.buyer, txHash: p.txHash, verified: verification === 'verified', verification },
      },
      now,
    );
    if (full) await enqueueEvent(tx, { wallet: p.wallet, type: 'receipt.refunded', dedupeKey: p.receiptId, data }, now);
    return { refundId, refundedUsd: centsToUsd(already + p.cents), status, verified: verification === 'verified', verification };
  });
}

/** What refundReceipt answered for a refund already made: the receipt's refunds and status as they are now. */
async function refundResultOf(tx: Tx, wallet: string, refundId: string): Promise<RefundResult> {
  const [refund] = await tx.select().from(refunds).where(and(eq(refunds.wallet, wallet), eq(refunds.id, refundId)));
  if (refund === undefined) throw new NotFound(`Refund ${refundId} not found`);
  const [receipt] = await tx.select({ status: receipts.status }).from(receipts).where(and(eq(receipts.wallet, wallet), eq(receipts.id, refund.receiptId)));
  // The answer's status is a receipt's (RefundRecorded in src/contract/refunds.ts): a refund whose
  // receipt is gone has none to give.
  if (receipt === undefined) throw new NotFound(`Receipt ${refund.receiptId} not found`);
  const [done] = await tx
    .select({ total: sum(refunds.amountCents) })
    .from(refunds)
    .where(and(eq(refunds.wallet, wallet), eq(refunds.receiptId, refund.receiptId)));
  return { refundId, refundedUsd: centsToUsd(BigInt(done?.total ?? '0')), status: receipt.status, verified: refund.verifiedAt !== null, verification: verificationOf(refund) };
}

export async function listRefunds(db: Db, wallet: string, receiptId: string) {
  const rows = await db
    .select()
    .from(refunds)
    .where(and(eq(refunds.wallet, wallet), eq(refunds.receiptId, receiptId)))
    .orderBy(refunds.createdAt);
  return rows.map((r) => ({
    id: r.id,
    receiptId: r.receiptId,
    buyer: r.buyer,
    usd: centsToUsd(r.amountCents),
    items: r.items.map((i) => ({ label: i.label, priceUsd: centsToUsd(BigInt(i.priceCents)), qty: i.qty })),
    txHash: r.txHash,
    verified: r.verifiedAt !== null,
    verification: verificationOf(r),
    createdBy: r.createdBy,
    createdAt: r.createdAt,
  }));
}
