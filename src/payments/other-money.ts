/**
 * Money other than the receipt's token at a payment address: native ETH and a short list of other
 * ERC-20 tokens, found by their balances (eth_getBalance, balanceOf), never by logs, which any
 * contract can emit (DESIGN.md "Only the receipt's token is money").
 *
 * When: the payment page asks for a read while it is open, once the receipt is PAGE_CHECK_EVERY_MS
 * old and then at most once per PAGE_CHECK_EVERY_MS (so page loads cannot flood the RPC node, and
 * without writing the database on the loads in between: pageAsksForBalances), a hint asks when its
 * transaction is mined, and
 * the worker reads once more before a receipt expires. The reads themselves run in the chain
 * worker, a bounded number per pass, each at a block made after its ask (checkRequestedBalances).
 *
 * What it does: the most seen of each such token is kept in receipts.other_money (amounts only
 * grow: money that arrived and was swept since still arrived), and the receipt is settled again:
 * settle.ts turns it into exception wrong_token (wrongTokenByBalance). It never counts toward the
 * total. The merchant sweeps it into the split from the admin app (token=eth or the token's address;
 * native ETH needs a version-2 payment address).
 *
 * Which tokens: ETH always; BALANCE_TOKENS when set, else USDT and DAI on Base and none elsewhere.
 */
import { and, asc, eq, isNotNull, isNull, lt, lte, or, sql } from 'drizzle-orm';
import { erc20Abi, getAddress, type Address } from 'viem';
import type { Logger } from 'pino';
import type { ChainDeps } from '../chain/client.ts';
import type { ChainName } from '../config.ts';
import { NATIVE_TOKEN } from '../chain/payment-address.ts';
import { fromAnyNode, isRateLimited } from '../chain/lagging-nodes.ts';
import { asSpare, isHeldBack } from '../chain/rpc-budget.ts';
import type { Db, Tx } from '../db/client.ts';
import { receipts } from '../db/schema.ts';
import type { RateLimiter } from '../gateway/rate-limit.ts';
import type { ReceiptKey } from './scanner.ts';
import { watch } from './watch.ts';

/** A payment page asks for a read of its address's other balances at most this often. */
export const PAGE_CHECK_EVERY_MS = 60_000;
/** Receipts whose other balances the worker reads per pass at most (asked-for reads and pre-expiry reads each). */
export const BALANCE_CHECKS_PER_PASS = 20;

/** Asked-for reads a pass starts no more of after this long (ms): the rest wait for the next pass. */
export const READS_BUDGET_MS = 300;
/** Asked-for reads made at once: each is mostly a round trip to the provider. */
const READS_AT_ONCE = 4;

/** Other tokens checked by default per chain: Tether USD and Dai on Base. */
export const DEFAULT_BALANCE_TOKENS: Record<ChainName, readonly Address[]> = {
  base: ['0xfde4C96c8593536E31F229EA8f37b2ADa2699bb2', '0x50c5725949A6F0c72E6C4a641F24049A917DB0Cb'],
  'base-sepolia': [],
  dev: [],
};

/** The ERC-20 tokens to check besides ETH: the configured list (or the chain's default), never the receipt's own token. */
export function balanceTokensOf(chain: Pick<ChainDeps, 'name' | 'usdc'>, configured: readonly string[] | undefined): Address[] {
  const list = configured ?? DEFAULT_BALANCE_TOKENS[chain.name];
  const own = chain.usdc.address.toLowerCase();
  return [...new Set(list.map((t) => t.toLowerCase()))].filter((t) => t !== own && t !== NATIVE_TOKEN).map((t) => getAddress(t));
}

/**
 * Asks the worker to read a receipt's other balances soon (one conditional update). A hint forces
 * it (`force`); the payment page goes through pageAsksForBalances, which writes nothing on most loads.
 */
export async function requestBalanceCheck(db: Db | Tx, key: ReceiptKey, now: number, opts: { force?: boolean } = {}): Promise<void> {
  const where = and(eq(receipts.wallet, key.wallet), eq(receipts.id, key.receiptId), isNull(receipts.balancesCheckDue));
  await db
    .update(receipts)
    .set({ balancesCheckDue: now })
    .where(opts.force === true ? where : and(where, lt(sql`coalesce(${receipts.balancesCheckedAt}, ${receipts.createdAt})`, now - PAGE_CHECK_EVERY_MS)));
}

/** The receipt as the payment page read it: its age, and whether a read of its balances is pending or recent. */
export interface BalanceCheckState extends ReceiptKey {
  createdAt: number;
  balancesCheckDue: number | null;
  balancesCheckedAt: number | null;
}

/**
 * A payment-page load asks for a read of the receipt's other balances once the receipt is
 * PAGE_CHECK_EVERY_MS old, then at most once per PAGE_CHECK_EVERY_MS, and a read route writes the
 * database only then.
 *
 * Not at once: a page opens before its buyer sends anything, so a read then finds nothing, and it
 * cost every payment one or two calls (the bench's compute units per payment). ETH sent after the
 * page opened was found by the first load a minute on, as it still is; what waits now is only
 * money sent before the page first opened, found a minute after the receipt's creation instead
 * of at once. A buyer who pays from the page's wallet button sends a hint, which asks at once
 * (src/payments/hints.ts), and every address is read again before its receipt expires.
 *
 * The row the page already read decides first: a read pending, a receipt younger than
 * PAGE_CHECK_EVERY_MS or a read less than that old means nothing to ask (no statement at all).
 * Otherwise the request goes through `throttle` (the gateway's rate limiter: memory per instance,
 * Redis when REDIS_URL is set), one hit per receipt and last read, so concurrent loads on any
 * number of instances send one update between two reads of the worker, not one each. A throttle
 * that fails open costs at most the conditional update it guards. A receipt whose address the
 * worker has not stored yet asks all the same; the read waits for the address. Returns whether it
 * asked.
 */
export async function pageAsksForBalances(db: Db, throttle: RateLimiter, row: BalanceCheckState, now: number): Promise<boolean> {
  if (row.balancesCheckDue !== null) return false;
  if ((row.balancesCheckedAt ?? row.createdAt) >= now - PAGE_CHECK_EVERY_MS) return false;
  const decision = await throttle.hit(`balances:${row.wallet}:${row.receiptId}:${row.balancesCheckedAt ?? 'never'}`, 1, now);
  if (!decision.allowed) return false;
  await requestBalanceCheck(db, row, now);
  return true;
}

/**
 * Reads ETH and each token's balance at `holder` in block `blockNumber` (the newest head any node
 * named): pinned, so a lagging node answers that it lacks the block and is asked again
 * (src/chain/lagging-nodes.ts) instead of showing its older, smaller balance as the last read
 * before expiry. A token that does not answer is skipped (logged).
 */
async function balancesAt(chain: ChainDeps, tokens: readonly Address[], holder: Address, blockNumber: bigint, logger: Logger): Promise<Map<string, bigint>> {
  const { publicClient } = chain;
  const reads = await Promise.allSettled([
    fromAnyNode(() => publicClient.getBalance({ address: holder, blockNumber })),
    ...tokens.map((token) => fromAnyNode(() => publicClient.readContract({ address: token, abi: erc20Abi, functionName: 'balanceOf', args: [holder], blockNumber }))),
  ]);
  const out = new Map<string, bigint>();
  reads.forEach((r, i) => {
    const token = i === 0 ? NATIVE_TOKEN : tokens[i - 1]!.toLowerCase();
    if (r.status === 'fulfilled') out.set(token, r.value);
    // A rate limit skips no token: the whole read waits for the next pass.
    else if (i === 0 || isRateLimited(r.reason)) throw r.reason;
    else logger.warn({ token, holder, err: r.reason }, 'other money: balanceOf failed; the token is skipped this time');
  });
  return out;
}

/**
 * Reads the other balances of one receipt's payment address and records what was found. Returns
 * true when money other than the receipt's token is (or was) there; the receipt is then watched so
 * that the next settle gives it wrong_token.
 */
export async function checkOtherMoney(db: Db, chain: ChainDeps, tokens: readonly Address[], key: ReceiptKey, at: { now: number; block: bigint }, logger: Logger): Promise<boolean> {
  const { now } = at;
  const [row] = await db
    .select({ payAddress: receipts.payAddress, otherMoney: receipts.otherMoney })
    .from(receipts)
    .where(and(eq(receipts.wallet, key.wallet), eq(receipts.id, key.receiptId)));
  // Callers pass receipts whose address is stored; an asked-for read waits for it (checkRequestedBalances).
  if (row === undefined || row.payAddress === null) return false;
  const found = await balancesAt(chain, tokens, getAddress(row.payAddress), at.block, logger);
  const seen: Record<string, string> = { ...(row.otherMoney ?? {}) };
  let grew = false;
  for (const [token, amount] of found) {
    if (amount > BigInt(seen[token] ?? '0')) {
      seen[token] = amount.toString();
      grew = true;
    }
  }
  await db.transaction(async (tx) => {
    await tx
      .update(receipts)
      .set({ balancesCheckedAt: now, balancesCheckDue: null, ...(grew ? { otherMoney: seen } : {}) })
      .where(and(eq(receipts.wallet, key.wallet), eq(receipts.id, key.receiptId)));
    if (grew) await watch(tx, [key], now);
  });
  if (grew) logger.info({ wallet: key.wallet, receiptId: key.receiptId, otherMoney: seen }, 'other money found at a payment address (wrong_token)');
  return Object.keys(seen).length > 0;
}

/**
 * Block times a read asked for waits for a block stamped at or after the ask. Then it runs at the
 * newest head whatever its stamp: a quiet chain (a dev chain mines only when sent a transaction)
 * has no newer block to wait for, and a chain whose clock is behind this service's delays a read
 * by this much, never for good. The newest head is the highest any node named over the passes
 * since, so nodes behind would have to answer every pass of that time to hide a block.
 */
export const STAMP_WAIT_BLOCKS = 5;

/** How long a read waits for a block stamped after its ask, on a chain of `blockTimeSeconds` (1 when unknown). */
export function stampWaitMs(blockTimeSeconds: number | undefined): number {
  return STAMP_WAIT_BLOCKS * (blockTimeSeconds ?? 1) * 1000;
}

/**
 * Runs the reads asked for, oldest first, BALANCE_CHECKS_PER_PASS at most, at block `at.block`,
 * the newest head any node named, stamped `at.blockTime` (Unix ms, whole seconds). A buyer sends
 * ETH, sees it mined and opens the page, which asks for a read. The newest head this worker knows
 * may still be older than the buyer's block: the pass asked for it just before that block, or a
 * node behind answered. A read run there finds nothing and is marked done, and the ETH waits for
 * the page's next ask, a minute on at the earliest. So a read runs only at a block stamped at or
 * after the ask, which was made after every block its buyer saw (or, `at.waitMs` after the ask,
 * at the newest head: stampWaitMs), and once the receipt's address is stored (the pass stores
 * new ones before it reads). The reads are spare work of the rate budget. Returns how many ran.
 */
export async function checkRequestedBalances(db: Db, chain: ChainDeps, tokens: readonly Address[], at: { now: number; block: bigint; blockTime: number; waitMs: number }, logger: Logger): Promise<number> {
  const due = await db
    .select({ wallet: receipts.wallet, receiptId: receipts.id })
    .from(receipts)
    .where(
      and(
        isNotNull(receipts.balancesCheckDue),
        isNotNull(receipts.payAddress),
        or(lte(receipts.balancesCheckDue, at.blockTime), lt(receipts.balancesCheckDue, at.now - at.waitMs)),
      ),
    )
    .orderBy(asc(receipts.balancesCheckDue))
    .limit(BALANCE_CHECKS_PER_PASS);
  // Spare work of the provider's rate budget, a few at a time within READS_BUDGET_MS: a page open
  // on each of 400 receipts must neither spend the calls nor hold up the pass that the next block's
  // reading and the sweeps need (src/chain/rpc-budget.ts).
  return asSpare(chain.rpcBudget, async () => {
    const started = Date.now();
    let ran = 0;
    let limited = false;
    for (let i = 0; i < due.length && !limited && Date.now() - started < READS_BUDGET_MS; i += READS_AT_ONCE) {
      await Promise.all(
        due.slice(i, i + READS_AT_ONCE).map(async (key) => {
          try {
            await checkOtherMoney(db, chain, tokens, key, at, logger);
            ran++;
          } catch (err) {
            // The read stays asked for: a rate limit ends this pass's reads, another failure only its own.
            if (isRateLimited(err)) {
              limited = true;
              logger[isHeldBack(err) ? 'debug' : 'info']({ wallet: key.wallet, receiptId: key.receiptId }, 'reading other balances met the rate limit; the reads go on next pass');
              return;
            }
            logger.error({ err, wallet: key.wallet, receiptId: key.receiptId }, 'reading other balances at a payment address failed; tried again next pass');
          }
        }),
      );
    }
    return ran;
  });
}

/** Whether a receipt's balances were read at or after `since` (e.g. its expiry time). */
export async function balancesReadSince(db: Db, key: ReceiptKey, since: number): Promise<boolean> {
  const [row] = await db
    .select({ n: sql<number>`1` })
    .from(receipts)
    .where(and(eq(receipts.wallet, key.wallet), eq(receipts.id, key.receiptId), sql`${receipts.balancesCheckedAt} >= ${since}`));
  return row !== undefined;
}

/** The flag settle.ts takes: money other than the receipt's token was found at its address by balance. */
export function wrongTokenByBalance(row: { otherMoney: Record<string, string> | null }): boolean {
  return Object.values(row.otherMoney ?? {}).some((v) => v !== '0');
}
