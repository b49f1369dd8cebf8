/**
 * Automatic payouts (DESIGN.md "Recipients: payouts"). A merchant sets a threshold in USD and an
 * interval in hours; the payout loop (src/payments/payout-worker.ts) releases, with the service's
 * deployer paying the gas, every recipient whose releasable amount reaches the threshold, at most
 * once per interval.
 *
 * Once per interval, across instances: the loop runs under a lease, but a lease can change hands
 * in the middle of a pass, so the lease is not what guarantees it. A run first claims the
 * interval in the database with one conditional update of `split_payouts.last_run_at` (set to
 * now only where it is null or at least one interval old); the row lock makes a second claimant
 * re-read the row and find it taken. Only the winner sends anything. An interval in which no
 * recipient reached the threshold is not claimed, so the first time one does, it is paid.
 */
import { and, eq, isNotNull, isNull, lte, or, sql } from 'drizzle-orm';
import type { Logger } from 'pino';
import type { ChainDeps } from '../chain/client.ts';
import type { Deployer } from '../chain/deployer.ts';
import { release } from '../chain/split-contract.ts';
import type { Db, Tx } from '../db/client.ts';
import { splitPayouts, splitVersions } from '../db/schema.ts';
import { centsToUsd, usdToCents } from '../lib/money.ts';
import { InvalidInput } from '../lib/errors.ts';
import { normalizeWallet } from '../domain/wallet.ts';
import { readSplitBalances } from './split-balances.ts';

export const HOUR_MS = 3_600_000;
/** A year: a longer interval is a payout that never comes. */
export const MAX_PAYOUT_INTERVAL_HOURS = 8_760;
/** The largest threshold: a million dollars (above it nothing would ever be paid out automatically). */
export const MAX_PAYOUT_THRESHOLD_CENTS = 100_000_000n;

export interface PayoutSettings {
  payoutThresholdUsd: number;
  payoutIntervalHours: number;
  /** Unix ms of the last automatic run that released something; null before the first. */
  lastRunAt: number | null;
}

export async function getPayoutSettings(db: Tx, wallet: string): Promise<PayoutSettings | null> {
  const [row] = await db.select().from(splitPayouts).where(eq(splitPayouts.wallet, normalizeWallet(wallet)));
  if (row === undefined) return null;
  return { payoutThresholdUsd: centsToUsd(BigInt(row.thresholdCents)), payoutIntervalHours: row.intervalHours, lastRunAt: row.lastRunAt };
}

/**
 * Turns automatic payouts on (or changes them), or off with null. Changing the settings keeps the
 * last run: a shorter interval never allows a second run sooner than the new interval allows.
 */
export async function setPayoutSettings(
  db: Tx,
  wallet: string,
  input: { payoutThresholdUsd: number; payoutIntervalHours: number } | null,
  now = Date.now(),
): Promise<PayoutSettings | null> {
  const owner = normalizeWallet(wallet);
  if (input === null) {
    await db.delete(splitPayouts).where(eq(splitPayouts.wallet, owner));
    return null;
  }
  const cents = usdToCents(input.payoutThresholdUsd, 'payoutThresholdUsd');
  if (cents === 0n) throw new InvalidInput('payoutThresholdUsd must be above 0');
  if (cents > MAX_PAYOUT_THRESHOLD_CENTS) throw new InvalidInput(`payoutThresholdUsd must be at most ${centsToUsd(MAX_PAYOUT_THRESHOLD_CENTS)}`);
  const hours = input.payoutIntervalHours;
  if (!Number.isInteger(hours) || hours < 1 || hours > MAX_PAYOUT_INTERVAL_HOURS) {
    throw new InvalidInput(`payoutIntervalHours must be a whole number from 1 to ${MAX_PAYOUT_INTERVAL_HOURS}`);
  }
  const values = { wallet: owner, thresholdCents: Number(cents), intervalHours: hours, updatedAt: now };
  await db.insert(splitPayouts).values(values).onConflictDoUpdate({ target: splitPayouts.wallet, set: { thresholdCents: values.thresholdCents, intervalHours: hours, updatedAt: now } });
  return getPayoutSettings(db, owner);
}

/** USD cents as token base units of a dollar stablecoin (USDC: 6 decimals, so 1 cent is 10,000). */
export function centsToUnits(cents: bigint, decimals: number): bigint {
  return decimals >= 2 ? cents * 10n ** BigInt(decimals - 2) : cents / 10n ** BigInt(2 - decimals);
}

/**
 * Claims the interval for `wallet`'s automatic run at `now`: true for exactly one caller per
 * interval, whichever instance it runs on.
 */
export async function claimPayoutRun(db: Db, wallet: string, now: number): Promise<boolean> {
  const [row] = await db.select({ hours: splitPayouts.intervalHours }).from(splitPayouts).where(eq(splitPayouts.wallet, wallet));
  if (row === undefined) return false;
  const claimed = await db
    .update(splitPayouts)
    .set({ lastRunAt: now })
    .where(
      and(
        eq(splitPayouts.wallet, wallet),
        eq(splitPayouts.intervalHours, row.hours),
        or(isNull(splitPayouts.lastRunAt), lte(splitPayouts.lastRunAt, now - row.hours * HOUR_MS)),
      ),
    )
    .returning({ wallet: splitPayouts.wallet });
  return claimed.length === 1;
}

export interface AutoPayout {
  wallet: string;
  split: string;
  account: string;
  amount: bigint;
  transactionHash: string;
}

export interface AutoPayoutDeps {
  db: Db;
  chain: ChainDeps;
  deployer: Deployer;
  logger: Logger;
}

/**
 * One run over every merchant with automatic payouts and a split contract: releases what is due
 * from every version of the merchant's split (receipts of an earlier version still pay into it),
 * each merchant on its own (one merchant's failure is logged and never holds back another's).
 */
export async function runAutoPayouts(d: AutoPayoutDeps, now: number): Promise<AutoPayout[]> {
  const due = await d.db
    .select({ wallet: splitPayouts.wallet, split: splitVersions.address, thresholdCents: splitPayouts.thresholdCents })
    .from(splitPayouts)
    .innerJoin(splitVersions, eq(splitVersions.wallet, splitPayouts.wallet))
    .where(and(isNotNull(splitVersions.address), or(isNull(splitPayouts.lastRunAt), sql`${splitPayouts.lastRunAt} <= ${now} - ${splitPayouts.intervalHours}::bigint * ${HOUR_MS}`)))
    .orderBy(splitPayouts.wallet, splitVersions.version);
  const merchants = new Map<string, { splits: string[]; thresholdCents: number }>();
  for (const m of due) {
    if (m.split === null) continue;
    const entry = merchants.get(m.wallet) ?? { splits: [], thresholdCents: m.thresholdCents };
    entry.splits.push(m.split);
    merchants.set(m.wallet, entry);
  }
  const paid: AutoPayout[] = [];
  for (const [wallet, m] of merchants) {
    try {
      paid.push(...(await payOutMerchant(d, { wallet, splits: m.splits, threshold: centsToUnits(BigInt(m.thresholdCents), d.chain.usdc.decimals) }, now)));
    } catch (err) {
      d.logger.warn({ err, wallet, splits: m.splits }, 'automatic payout failed; tried again next interval');
    }
  }
  return paid;
}

async function payOutMerchant(d: AutoPayoutDeps, m: { wallet: string; splits: string[]; threshold: bigint }, now: number): Promise<AutoPayout[]> {
  const token = d.chain.usdc.address;
  const owed: { split: string; address: string }[] = [];
  for (const split of m.splits) {
    const balances = await readSplitBalances({ publicClient: d.chain.publicClient, split, token });
    owed.push(...balances.recipients.filter((r) => r.releasable > 0n && r.releasable >= m.threshold).map((r) => ({ split, address: r.address })));
  }
  if (owed.length === 0) return [];
  // One claim per merchant and interval, whichever versions owe something.
  if (!(await claimPayoutRun(d.db, m.wallet, now))) return [];
  const paid: AutoPayout[] = [];
  // One after another: the deployer's nonces are kept in order anyway, and a failure stops
  // nothing else (the next interval pays whoever is still owed).
  for (const r of owed) {
    try {
      const done = await release({ walletClient: d.chain.walletClient!, publicClient: d.chain.publicClient, split: r.split, token, account: r.address, deployer: d.deployer });
      paid.push({ wallet: m.wallet, split: r.split, account: r.address, amount: done.amount, transactionHash: done.transactionHash.toLowerCase() });
      d.logger.info({ wallet: m.wallet, split: r.split, account: r.address, amount: done.amount.toString(), tx: done.transactionHash }, 'automatic payout released');
    } catch (err) {
      d.logger.warn({ err, wallet: m.wallet, split: r.split, account: r.address }, 'automatic payout of one recipient failed');
    }
  }
  return paid;
}
