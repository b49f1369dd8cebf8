/**
 * Reconciliation: for each merchant's split contract, what the chain says it received and
 * released in the service's token against what Splitline indexed in split_transactions.
 *
 *   chain    received = token balanceOf(split) + totalReleased(token); released = totalReleased(token)
 *   indexed  received = sum of its 'payment' rows;                    released = sum of its 'release' rows
 *
 * Both sides are taken at the block the chain worker has indexed through (its cursor), so a worker
 * that is a few blocks behind, or a payment landing while this runs, is no difference. Without a
 * cursor (the worker never ran) the chain's newest block is used, and everything is a difference.
 *
 * The worker indexes from where it started (block 0 on the dev chain, about a day back elsewhere),
 * and only for splits it knew when it read a block: a split that received money before that shows
 * the missing transfers as a difference, which is what this is for.
 */
import { and, eq, isNotNull, lte, sql } from 'drizzle-orm';
import { erc20Abi, getAddress, type Address } from 'viem';
import type { ChainDeps } from '../chain/client.ts';
import type { Tx } from '../db/client.ts';
import { chainCursors, splitTransactions, splitVersions } from '../db/schema.ts';
import { NotFound } from '../lib/errors.ts';
import { normalizeWallet } from '../domain/wallet.ts';
import { CURSOR } from './scanner.ts';
import { totalReleasedAbi } from './split-balances.ts';

export interface Totals {
  /** Token base units. */
  received: bigint;
  released: bigint;
}

export interface SplitReconciliation {
  merchant: string;
  split: string;
  chain: Totals;
  indexed: Totals & { payments: number; releases: number };
  /** chain − indexed: positive when the chain shows more than Splitline indexed. */
  difference: Totals;
  matches: boolean;
}

export interface ReconcileReport {
  token: string;
  tokenSymbol: string;
  tokenDecimals: number;
  /** The block both sides were compared at. */
  blockNumber: bigint;
  /** Where the chain worker's cursor stood; null when it never ran on this database. */
  indexedThrough: bigint | null;
  splits: SplitReconciliation[];
  /** True when every split matches (and vacuously when there is none). */
  ok: boolean;
}

export interface ReconcileParams {
  db: Tx;
  chain: ChainDeps;
  /** Only this merchant's split; NotFound when it has none. */
  wallet?: string | undefined;
}

export async function reconcileSplits(p: ReconcileParams): Promise<ReconcileReport> {
  const splits = await splitsToReconcile(p.db, p.wallet);
  const [indexedThrough, head] = await Promise.all([cursorBlock(p.db), p.chain.publicClient.getBlockNumber({ cacheTime: 0 })]);
  // A cursor past the head means the chain lost blocks (a reset dev chain): compare at the head.
  const blockNumber = indexedThrough !== null && indexedThrough < head ? indexedThrough : head;
  const token = getAddress(p.chain.usdc.address);
  const results: SplitReconciliation[] = [];
  for (const s of splits) {
    const [chain, indexed] = await Promise.all([
      chainTotals(p.chain, s.split, token, blockNumber),
      indexedTotals(p.db, s.merchant, s.split, blockNumber),
    ]);
    const difference = { received: chain.received - indexed.received, released: chain.released - indexed.released };
    results.push({ ...s, chain, indexed, difference, matches: difference.received === 0n && difference.released === 0n });
  }
  const { symbol: tokenSymbol, decimals: tokenDecimals } = p.chain.usdc;
  return { token: token.toLowerCase(), tokenSymbol, tokenDecimals, blockNumber, indexedThrough, splits: results, ok: results.every((r) => r.matches) };
}

async function splitsToReconcile(db: Tx, wallet: string | undefined): Promise<{ merchant: string; split: string }[]> {
  const merchant = wallet === undefined ? undefined : normalizeWallet(wallet);
  const rows = await db
    // Every version: an earlier split keeps receiving its receipts' money and paying it out.
    .select({ merchant: splitVersions.wallet, split: splitVersions.address })
    .from(splitVersions)
    .where(and(isNotNull(splitVersions.address), merchant === undefined ? undefined : eq(splitVersions.wallet, merchant)))
    .orderBy(splitVersions.wallet, splitVersions.version);
  if (merchant !== undefined && rows.length === 0) throw new NotFound(`Merchant ${merchant} has no split contract`);
  return rows.flatMap((r) => (r.split === null ? [] : [{ merchant: r.merchant, split: r.split }]));
}

async function cursorBlock(db: Tx): Promise<bigint | null> {
  const [row] = await db.select({ block: chainCursors.block }).from(chainCursors).where(eq(chainCursors.name, CURSOR));
  return row?.block ?? null;
}

/** What the contract says at `blockNumber`; a split not yet deployed there has released nothing. */
async function chainTotals(chain: ChainDeps, split: string, token: Address, blockNumber: bigint): Promise<Totals> {
  const address = getAddress(split);
  const code = await chain.publicClient.getCode({ address, blockNumber });
  const deployed = code !== undefined && code !== '0x';
  const [balance, released] = await Promise.all([
    chain.publicClient.readContract({ address: token, abi: erc20Abi, functionName: 'balanceOf', args: [address], blockNumber }),
    deployed
      ? chain.publicClient.readContract({ address, abi: totalReleasedAbi, functionName: 'totalReleased', args: [token], blockNumber })
      : Promise.resolve(0n),
  ]);
  return { received: balance + released, released };
}

/** What Splitline indexed for this merchant's split up to `blockNumber`, summed exactly (numeric). */
async function indexedTotals(db: Tx, merchant: string, split: string, blockNumber: bigint): Promise<SplitReconciliation['indexed']> {
  const rows = await db
    .select({
      kind: splitTransactions.kind,
      total: sql<string>`coalesce(sum(${splitTransactions.amountUnits}::numeric), 0)::text`,
      count: sql<number>`count(*)::int`,
    })
    .from(splitTransactions)
    .where(
      and(
        eq(splitTransactions.wallet, merchant),
        eq(splitTransactions.splitAddress, split.toLowerCase()),
        lte(splitTransactions.blockNumber, blockNumber),
      ),
    )
    .groupBy(splitTransactions.kind);
  const of = (kind: 'payment' | 'release') => rows.find((r) => r.kind === kind);
  return {
    received: BigInt(of('payment')?.total ?? '0'),
    released: BigInt(of('release')?.total ?? '0'),
    payments: Number(of('payment')?.count ?? 0),
    releases: Number(of('release')?.count ?? 0),
  };
}
