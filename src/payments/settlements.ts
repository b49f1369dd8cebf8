/**
 * Settlement reports (DESIGN.md "Recipients: settlements"): for a period, every transfer into the
 * merchant's splits (every version) with each recipient's share of it, the platform fee, and what each recipient
 * was paid out, from the indexed split transactions.
 *
 * Shares are differences of cumulative floors. PaymentSplitter owes recipient i, once the split
 * has received C in all, floor(C × shares_i / totalShares) (released + releasable). So the share
 * of the k-th transfer is floor(C_k × s_i / T) − floor(C_(k−1) × s_i / T): summed over every
 * transfer up to a block, it is exactly what the contract owes i at that block, never a unit
 * more or less, however the amounts round. What no recipient is owed (less than one unit per
 * recipient in all, the contract's rounding) is `unallocated`, so each line's shares plus its
 * unallocated amount are its gross exactly; a line's unallocated amount can be negative when a
 * transfer completes a unit that earlier ones had left over.
 */
import { and, asc, eq, gte, lt, sql } from 'drizzle-orm';
import type { Tx } from '../db/client.ts';
import { splitTransactions, type SplitRecipient } from '../db/schema.ts';
import { InvalidInput } from '../lib/errors.ts';
import { getSplitConfig } from '../domain/splits.ts';
import { splitAddressesOf } from '../domain/split-versions.ts';
import { normalizeWallet } from '../domain/wallet.ts';
import { csvDocument, type CsvColumn } from '../lib/csv.ts';

const TOTAL_SHARES = 10_000n;
/** The most transfers one report lists: a longer period is asked for in parts. */
export const SETTLEMENT_LINES_CAP = 10_000;

export interface SettlementTransfer {
  receiptId: string | null;
  transactionHash: string;
  logIndex: number;
  blockNumber: bigint;
  timestamp: number;
  gross: bigint;
}

export interface SettlementLine extends SettlementTransfer {
  /** The split contract the transfer went into, and its version (set when a report puts versions together). */
  split?: string;
  version?: number;
  /** Per recipient, in the order of the split's recipients (of the report's, in a report). */
  shares: bigint[];
  platformFee: bigint;
  /** gross − Σ shares: the contract's rounding, owed to nobody. */
  unallocated: bigint;
}

export interface RecipientSettlement {
  address: string;
  /** In the current version; 0 for a recipient of earlier versions only. */
  sharesBps: number;
  platform: boolean;
  /** Σ of this recipient's shares of the period's transfers. */
  share: bigint;
  /** Paid out to the recipient in the period (indexed releases). */
  released: bigint;
  /** Owed to the recipient since the split began, to the period's end: the contract's released + releasable then. */
  accrued: bigint;
  /** Paid out to the recipient since the split began, to the period's end. */
  releasedToDate: bigint;
}

export interface Settlement {
  /** null before the split contract is deployed: nothing was received yet. */
  split: string | null;
  currency: string;
  decimals: number;
  from: number;
  /** null: no end, every transfer indexed so far (block times can run ahead of this server's clock). */
  to: number | null;
  /** The block of the period's last indexed transaction (since the split began); null when there is none. */
  toBlock: bigint | null;
  /** Every version of the split the report covers, oldest first. */
  versions: { version: number; split: string; recipients: SplitRecipient[] }[];
  recipients: RecipientSettlement[];
  lines: SettlementLine[];
  totals: { gross: bigint; platformFee: bigint; unallocated: bigint; released: bigint };
}

/** floor(C × s / T) for every recipient. */
const owed = (cumulative: bigint, recipients: readonly SplitRecipient[]) => recipients.map((r) => (cumulative * BigInt(r.sharesBps)) / TOTAL_SHARES);

/**
 * The lines of transfers `transfers` (in chain order) after `before` base units had already
 * reached the split: each recipient's share as the difference of cumulative floors.
 */
export function settleTransfers(recipients: readonly SplitRecipient[], platform: string | undefined, before: bigint, transfers: readonly SettlementTransfer[]): SettlementLine[] {
  const platformIndex = platform === undefined ? -1 : recipients.findIndex((r) => r.address === platform.toLowerCase());
  let cumulative = before;
  let owedBefore = owed(cumulative, recipients);
  return transfers.map((t) => {
    cumulative += t.gross;
    const owedAfter = owed(cumulative, recipients);
    const shares = owedAfter.map((o, i) => o - owedBefore[i]!);
    owedBefore = owedAfter;
    const allocated = shares.reduce((a, b) => a + b, 0n);
    return { ...t, shares, platformFee: platformIndex < 0 ? 0n : shares[platformIndex]!, unallocated: t.gross - allocated };
  });
}

export interface SettlementQuery {
  from?: number;
  to?: number;
}

/** Transfers into `split` from `from` (inclusive) to `to` (exclusive), in chain order. */
async function transfersIn(db: Tx, wallet: string, split: string, from: number, to: number): Promise<SettlementTransfer[]> {
  const rows = await db
    .select()
    .from(splitTransactions)
    .where(and(eq(splitTransactions.wallet, wallet), eq(splitTransactions.splitAddress, split), eq(splitTransactions.kind, 'payment'), gte(splitTransactions.timestamp, from), lt(splitTransactions.timestamp, to)))
    .orderBy(asc(splitTransactions.blockNumber), asc(splitTransactions.logIndex))
    .limit(SETTLEMENT_LINES_CAP + 1);
  if (rows.length > SETTLEMENT_LINES_CAP) {
    throw new InvalidInput(`The period holds more than ${SETTLEMENT_LINES_CAP} transfers into the split; ask for a shorter one (from, to)`);
  }
  return rows.map((r) => ({ receiptId: r.receiptId, transactionHash: r.transactionHash, logIndex: r.logIndex, blockNumber: r.blockNumber, timestamp: r.timestamp, gross: BigInt(r.amountUnits) }));
}

/** Σ of `kind` rows of `split` before `to` (and from `from`), per counterparty for releases. */
async function sums(db: Tx, wallet: string, split: string, kind: 'payment' | 'release', from: number, to: number) {
  return db
    .select({ counterparty: splitTransactions.counterparty, total: sql<string>`sum(${splitTransactions.amountUnits}::numeric)::text`, lastBlock: sql<string | null>`max(${splitTransactions.blockNumber})::text` })
    .from(splitTransactions)
    .where(and(eq(splitTransactions.wallet, wallet), eq(splitTransactions.splitAddress, split), eq(splitTransactions.kind, kind), gte(splitTransactions.timestamp, from), lt(splitTransactions.timestamp, to)))
    .groupBy(splitTransactions.counterparty);
}

/** One version's part of a report: its lines and per-recipient sums, recipients in the version's order. */
async function settleVersion(db: Tx, wallet: string, v: { version: number; address: string; recipients: SplitRecipient[] }, from: number, to: number, platform: string | undefined) {
  const [transfers, paidBefore, paidToEnd, releasesInPeriod, releasesToEnd] = await Promise.all([
    transfersIn(db, wallet, v.address, from, to),
    sums(db, wallet, v.address, 'payment', 0, from),
    sums(db, wallet, v.address, 'payment', 0, to),
    sums(db, wallet, v.address, 'release', from, to),
    sums(db, wallet, v.address, 'release', 0, to),
  ]);
  const total = (rows: { total: string }[]) => rows.reduce((a, r) => a + BigInt(r.total), 0n);
  const lines = settleTransfers(v.recipients, platform, total(paidBefore), transfers);
  const released = (rows: { counterparty: string; total: string }[], address: string) => BigInt(rows.find((r) => r.counterparty === address)?.total ?? '0');
  const accrued = owed(total(paidToEnd), v.recipients);
  const lastBlocks = [...paidToEnd, ...releasesToEnd].map((r) => r.lastBlock).filter((b): b is string => b !== null).map(BigInt);
  return {
    lines,
    lastBlocks,
    recipients: v.recipients.map((r, i) => ({
      address: r.address,
      share: lines.reduce((a, l) => a + l.shares[i]!, 0n),
      released: released(releasesInPeriod, r.address),
      accrued: accrued[i]!,
      releasedToDate: released(releasesToEnd, r.address),
    })),
  };
}

/**
 * The merchant's settlement for [from, to) (Unix ms; by default from the split's beginning to
 * the last transfer indexed), over every version of its split: each version's contract pays by
 * its own cumulative floors, so shares are computed per version and the report adds them up per
 * recipient. Recipients are the current version's first (with its sharesBps), then those of
 * earlier versions only (sharesBps 0). Without a split contract, nothing was received: an empty report.
 */
export async function merchantSettlement(db: Tx, merchant: string, q: SettlementQuery, platform: string | undefined): Promise<Settlement> {
  const wallet = normalizeWallet(merchant);
  const from = q.from ?? 0;
  if (q.to !== undefined && from > q.to) throw new InvalidInput('from must not be after to');
  const to = q.to ?? Number.MAX_SAFE_INTEGER;
  const config = await getSplitConfig(db, wallet);
  const versions = await splitAddressesOf(db, wallet);
  const platformAddress = platform?.toLowerCase();

  const order: string[] = [];
  for (const v of [...versions].reverse()) for (const r of v.recipients) if (!order.includes(r.address)) order.push(r.address);
  for (const r of config.recipients) if (!order.includes(r.address)) order.push(r.address);
  const current = new Map(config.recipients.map((r) => [r.address, r.sharesBps]));

  const parts = await Promise.all(versions.map((v) => settleVersion(db, wallet, v, from, to, platform)));
  const lineCount = parts.reduce((a, p) => a + p.lines.length, 0);
  if (lineCount > SETTLEMENT_LINES_CAP) {
    throw new InvalidInput(`The period holds more than ${SETTLEMENT_LINES_CAP} transfers into the split; ask for a shorter one (from, to)`);
  }
  const lines: SettlementLine[] = parts
    .flatMap((p, k) =>
      p.lines.map((l) => {
        const v = versions[k]!;
        const shares = order.map((a) => {
          const i = v.recipients.findIndex((r) => r.address === a);
          return i < 0 ? 0n : l.shares[i]!;
        });
        return { ...l, split: v.address, version: v.version, shares };
      }),
    )
    .sort((a, b) => (a.blockNumber === b.blockNumber ? a.logIndex - b.logIndex : a.blockNumber < b.blockNumber ? -1 : 1));
  const sum = (address: string, field: 'share' | 'released' | 'accrued' | 'releasedToDate') =>
    parts.reduce((a, p) => a + (p.recipients.find((r) => r.address === address)?.[field] ?? 0n), 0n);
  const recipientRows = order.map((address) => ({
    address,
    sharesBps: current.get(address) ?? 0,
    platform: address === platformAddress,
    share: sum(address, 'share'),
    released: sum(address, 'released'),
    accrued: sum(address, 'accrued'),
    releasedToDate: sum(address, 'releasedToDate'),
  }));
  const lastBlocks = parts.flatMap((p) => p.lastBlocks);
  return {
    split: config.address,
    currency: 'USDC',
    decimals: 6,
    from,
    to: q.to ?? null,
    toBlock: lastBlocks.length === 0 ? null : lastBlocks.reduce((a, b) => (b > a ? b : a)),
    versions: versions.map((v) => ({ version: v.version, split: v.address, recipients: v.recipients })),
    recipients: recipientRows,
    lines,
    totals: {
      gross: lines.reduce((a, l) => a + l.gross, 0n),
      platformFee: lines.reduce((a, l) => a + l.platformFee, 0n),
      unallocated: lines.reduce((a, l) => a + l.unallocated, 0n),
      released: recipientRows.reduce((a, r) => a + r.released, 0n),
    },
  };
}

/** The report's lines as CSV (src/lib/csv.ts), one column per recipient's share, in base units. */
export function settlementCsv(s: Settlement): string {
  const columns: CsvColumn<SettlementLine>[] = [
    { name: 'timestamp', value: (l) => new Date(l.timestamp).toISOString() },
    { name: 'block_number', value: (l) => l.blockNumber },
    { name: 'transaction_hash', value: (l) => l.transactionHash },
    { name: 'log_index', value: (l) => l.logIndex },
    // Only the receipt id is the shop's own text; every other cell is a number, a hash or a time.
    { name: 'receipt_id', value: (l) => l.receiptId, text: true },
    { name: 'version', value: (l) => l.version },
    { name: 'split', value: (l) => l.split },
    { name: 'gross', value: (l) => l.gross },
    ...s.recipients.map((r, i): CsvColumn<SettlementLine> => ({ name: `share_${r.address}`, value: (l) => l.shares[i] })),
    { name: 'platform_fee', value: (l) => l.platformFee },
    { name: 'unallocated', value: (l) => l.unallocated },
  ];
  return csvDocument(columns, s.lines);
}
