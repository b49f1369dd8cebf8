/**
 * Money that reached a payment address before the service knew the address.
 *
 * A payment address derives from public data (src/chain/payment-address.ts), so a buyer can pay it
 * before the receipt exists, before the merchant's split is stored, or while the receipt waits in
 * the journal during an outage. The scanner records only transfers into addresses it knows when
 * it reads their block, so such a transfer was read and passed over. Once per stored address, the
 * chain worker therefore asks the token for the address's balance and, when anything is there,
 * looks for the transfers that brought it: `Transfer` logs of the token alone, filtered by the
 * address as `to` (and as `from`, for a sweep someone already sent into the split), newest range
 * first, back to where those transfers account for the balance or PREPAID_LOOKBACK_BLOCKS back.
 * They are recorded like the scanner's rows, so the receipt is credited with exactly what
 * arrived, swept, and follows reorganisations like any other transfer.
 *
 * Only up to the block the scanner had read when the address was stored
 * (receipts.pay_address_block): it records every transfer into the address from the next block on,
 * and its reorganisation check covers the blocks up to it. The balance is read at that block, so
 * money paid after the address was stored is never taken for early money, and early money that a
 * sweep has since moved along with a payment is still found. A look waits until the chain is
 * EARLY_LOOK_DEPTH blocks past that block, so that a node a few blocks behind has it (read at the
 * newest block, such nodes made 20 looks cost 41 reads in a bench run), or, on a chain that makes
 * no blocks while idle (the dev chain), until the receipt is `waitMs` old. When what the scanner
 * recorded up to that block accounts for the balance, nothing came early and no log is read. Looks
 * stop for the pass after EARLY_MONEY_BUDGET_MS, so a burst of new addresses never slows other
 * payments, and the looks are spare work of the provider's rate budget (src/chain/rpc-budget.ts):
 * they keep to half of RPC_RATE_LIMIT and stop at the first call held back or refused by the limit,
 * leaving the rest to the reading of new blocks and the sweeps. A receipt whose look fails (the
 * RPC) stays unchecked and is looked at again next pass.
 */
import { and, asc, eq, isNotNull, isNull, lte, or, sql } from 'drizzle-orm';
import { erc20Abi, getAbiItem, type Address, type Hex } from 'viem';
import type { Logger } from 'pino';
import type { ChainDeps } from '../chain/client.ts';
import { fromAnyNode, isRateLimited, LAG_RETRIES } from '../chain/lagging-nodes.ts';
import { asSpare, isHeldBack } from '../chain/rpc-budget.ts';
import type { Db } from '../db/client.ts';
import { chainCursors, receipts, receiptTransfers, splitConfigs, splitTransactions } from '../db/schema.ts';
import { CURSOR, DEFAULT_SCAN_LIMITS, type ReceiptKey } from './scanner.ts';
import { watch } from './watch.ts';

const TRANSFER = getAbiItem({ abi: erc20Abi, name: 'Transfer' });

/** How far back, in blocks, transfers into a newly stored address are looked for: a day of Base's 2-second blocks. */
export const PREPAID_LOOKBACK_BLOCKS = 43_200n;
/**
 * The newest blocks of a look, read apart and proved by the balance (a node behind cuts a range at
 * its head silently): the scanner's horizon, below which every node of a healthy provider has them.
 */
const RECENT_BLOCKS = DEFAULT_SCAN_LIMITS.horizon;
/** Blocks per getLogs call of that look (filtered by token and address, so answers stay small). */
const RANGE = 2_000n;
/** Newly stored addresses looked at per pass; the rest wait for the next. */
export const EARLY_MONEY_PER_PASS = 20;
/**
 * No new look starts this long after the pass's first: each costs a balanceOf at least (a round
 * trip to the provider), and hundreds of new addresses (a merchant's burst of receipts, a
 * stranger's dust to them) must not slow every pass, and so every other payment, for minutes.
 */
export const EARLY_MONEY_BUDGET_MS = 300;
/** Looks made at once (a provider's rate limit allows a few concurrent calls). */
const EARLY_MONEY_AT_ONCE = 4;
/**
 * Blocks the scanner's cursor must pass the block an address was stored at before its look: the
 * most a load-balanced provider's nodes lag in the simulation (test/sim/proxy.ts), 6 s on Base.
 */
export const EARLY_LOOK_DEPTH = 3n;

export interface EarlyMoneyOptions {
  db: Db;
  chain: ChainDeps;
  logger: Logger;
  /** The pass's clock (Unix ms); Date.now() by default. */
  now?: number;
  /**
   * A receipt this old (ms) is looked at without waiting for EARLY_LOOK_DEPTH blocks: a chain that
   * makes no blocks while idle would hold its look for good. The worker passes five block times;
   * 0 (the default) looks at once.
   */
  waitMs?: number;
}

export interface EarlyMoneyResult {
  /** Receipts credited with money found this way. */
  credited: ReceiptKey[];
  rpcCalls: number;
}

interface FoundLog {
  transactionHash: Hex;
  logIndex: number;
  blockNumber: bigint;
  blockHash: Hex;
  args: { from: Address; to: Address; value: bigint };
}

/** Looks at a few newly stored payment addresses for money that reached them before; returns whom it credited. */
export async function creditEarlyMoney(o: EarlyMoneyOptions): Promise<EarlyMoneyResult> {
  // Spare work: its calls yield to the reading of new blocks and the sweeps (src/chain/rpc-budget.ts).
  return asSpare(o.chain.rpcBudget, () => lookAtNewAddresses(o));
}

async function lookAtNewAddresses(o: EarlyMoneyOptions): Promise<EarlyMoneyResult> {
  const { db } = o;
  const [cursor] = await db.select({ block: chainCursors.block }).from(chainCursors).where(eq(chainCursors.name, CURSOR));
  const result: EarlyMoneyResult = { credited: [], rpcCalls: 0 };
  // Nothing read yet: the scanner's first range will see every transfer itself.
  if (cursor === undefined) return result;
  const now = o.now ?? Date.now();
  const due = await db
    // The split the receipt's address commits to; rows stored before versions had the merchant's one split.
    .select({ wallet: receipts.wallet, receiptId: receipts.id, payTo: receipts.payAddress, storedAt: receipts.payAddressBlock, split: sql<string | null>`coalesce(${receipts.paySplit}, ${splitConfigs.address})` })
    .from(receipts)
    .leftJoin(splitConfigs, eq(splitConfigs.wallet, receipts.wallet))
    .where(
      and(
        isNotNull(receipts.payAddress),
        isNull(receipts.earlyMoneyCheckedAt),
        or(isNull(receipts.payAddressBlock), lte(receipts.payAddressBlock, cursor.block - EARLY_LOOK_DEPTH), lte(receipts.createdAt, now - (o.waitMs ?? 0))),
      ),
    )
    .orderBy(asc(receipts.wallet))
    .limit(EARLY_MONEY_PER_PASS);
  const started = Date.now();
  // A few looks at a time: each is mostly a round trip to the provider. The first rate limit met
  // ends the looks of this pass: the rest wait, rather than spend the calls the next pass's
  // reading of new blocks needs.
  let limited = false;
  for (let i = 0; i < due.length && !limited && Date.now() - started < EARLY_MONEY_BUDGET_MS; i += EARLY_MONEY_AT_ONCE) {
    await Promise.all(
      due.slice(i, i + EARLY_MONEY_AT_ONCE).map(async (r) => {
        try {
          // A cursor moved back below the block (a reorganisation) reads the blocks above it again, with the address.
          const upTo = r.storedAt === null || r.storedAt > cursor.block ? cursor.block : r.storedAt;
          if (await creditOne(o, r, upTo, result)) result.credited.push({ wallet: r.wallet, receiptId: r.receiptId });
        } catch (err) {
          // One address's failing look never holds back another's; it stays unchecked for the next pass.
          if (isRateLimited(err)) {
            limited = true;
            // Held back by the service's own budget (src/chain/rpc-budget.ts) is the usual case under load: debug.
            o.logger[isHeldBack(err) ? 'debug' : 'info']({ wallet: r.wallet, receiptId: r.receiptId }, 'looking for money that reached a payment address early met the rate limit; the looks go on next pass');
            return;
          }
          o.logger.error({ err, wallet: r.wallet, receiptId: r.receiptId }, 'looking for money that reached a payment address early failed; tried again next pass');
        }
      }),
    );
  }
  return result;
}

/** Looks at one address; records and watches what it finds. Returns whether money was credited. */
async function creditOne(
  o: EarlyMoneyOptions,
  r: { wallet: string; receiptId: string; payTo: string | null; split: string | null },
  upTo: bigint,
  result: EarlyMoneyResult,
): Promise<boolean> {
  const { db } = o;
  const found = await lookFor(o, r.payTo as Address, upTo, await recordedNet(o, r, upTo), result);
  const ins = found.filter((l) => l.args.to.toLowerCase() === r.payTo && l.args.value > 0n);
  const outs = found.filter((l) => l.args.from.toLowerCase() === r.payTo && r.split !== null && l.args.to.toLowerCase() === r.split.toLowerCase() && l.args.value > 0n);
  const times = new Map<bigint, number>();
  for (const l of [...ins, ...outs]) {
    if (!times.has(l.blockNumber)) {
      result.rpcCalls++;
      times.set(l.blockNumber, Number((await o.chain.publicClient.getBlock({ blockNumber: l.blockNumber })).timestamp) * 1000);
    }
  }
  const token = o.chain.usdc.address.toLowerCase();
  const row = (l: FoundLog, kind: 'in' | 'sweep') => ({
    transactionHash: l.transactionHash.toLowerCase(),
    logIndex: l.logIndex,
    wallet: r.wallet,
    receiptId: r.receiptId,
    kind,
    token,
    fromAddress: l.args.from.toLowerCase(),
    amountUnits: l.args.value.toString(),
    blockNumber: l.blockNumber,
    blockHash: l.blockHash.toLowerCase(),
    timestamp: times.get(l.blockNumber)!,
  });
  const now = Date.now();
  await db.transaction(async (tx) => {
    const rows = [...ins.map((l) => row(l, 'in')), ...outs.map((l) => row(l, 'sweep'))];
    if (rows.length > 0) {
      await tx.insert(receiptTransfers).values(rows).onConflictDoNothing();
      await watch(tx, [r], now);
    }
    // A sweep someone sent before the address was known was indexed with no receipt: now it has one.
    for (const l of outs) {
      await tx
        .update(splitTransactions)
        .set({ receiptId: r.receiptId })
        .where(
          and(
            eq(splitTransactions.wallet, r.wallet),
            eq(splitTransactions.transactionHash, l.transactionHash.toLowerCase()),
            eq(splitTransactions.logIndex, l.logIndex),
            isNull(splitTransactions.receiptId),
          ),
        );
    }
    await tx
      .update(receipts)
      .set({ earlyMoneyCheckedAt: now })
      .where(and(eq(receipts.wallet, r.wallet), eq(receipts.id, r.receiptId), sql`${receipts.payAddress} = ${r.payTo}`));
  });
  if (ins.length > 0) o.logger.info({ wallet: r.wallet, receiptId: r.receiptId, transfers: ins.length }, 'credited money that reached the payment address before it was stored');
  return ins.length > 0;
}

/**
 * What the receipt's recorded transfers of the token up to block `upTo` left at its address: money
 * in minus sweeps out. Usually nothing: the scanner records transfers into an address from the
 * block after it was stored; blocks it read again after a reorganisation moved its cursor back
 * are the exception.
 */
async function recordedNet(o: EarlyMoneyOptions, r: { wallet: string; receiptId: string }, upTo: bigint): Promise<bigint> {
  const rows = await o.db
    .select({ kind: receiptTransfers.kind, amountUnits: receiptTransfers.amountUnits })
    .from(receiptTransfers)
    .where(
      and(
        eq(receiptTransfers.wallet, r.wallet),
        eq(receiptTransfers.receiptId, r.receiptId),
        eq(receiptTransfers.token, o.chain.usdc.address.toLowerCase()),
        lte(receiptTransfers.blockNumber, upTo),
      ),
    );
  return rows.reduce((net, t) => (t.kind === 'in' ? net + BigInt(t.amountUnits) : t.kind === 'sweep' ? net - BigInt(t.amountUnits) : net), 0n);
}

/**
 * The token's Transfer logs into and out of `payTo` up to `upTo`, newest range first, until they
 * account for its balance at `upTo` (what arrived minus what left equals it) or the lookback ends.
 * Nothing at all when the balance is zero, or when the transfers already recorded for the receipt
 * account for it (`recorded`): then no money arrived before the address was stored, and the look
 * costs one balanceOf, not a getLogs per range and a getBlock per transfer.
 *
 * A node behind `upTo` answers a range silently cut at its own head, so the newest RECENT_BLOCKS
 * (the scanner's horizon: every node of a healthy provider has the blocks below it) are read apart
 * and proved by the balance: their logs must explain exactly how the balance changed over them,
 * both ends read pinned. Logs that do not are asked again (LAG_RETRIES times); then the look
 * fails and the address is looked at again next pass, never marked looked-at with money missed.
 */
async function lookFor(o: EarlyMoneyOptions, payTo: Address, upTo: bigint, recorded: bigint, result: EarlyMoneyResult): Promise<FoundLog[]> {
  const { publicClient, usdc } = o.chain;
  const balanceAt = (blockNumber: bigint) =>
    fromAnyNode(() => {
      result.rpcCalls++;
      return publicClient.readContract({ address: usdc.address, abi: erc20Abi, functionName: 'balanceOf', args: [payTo], blockNumber });
    });
  const logsOf = async (fromBlock: bigint, toBlock: bigint): Promise<{ logs: FoundLog[]; net: bigint }> => {
    result.rpcCalls += 2;
    const [ins, outs] = await Promise.all([
      publicClient.getLogs({ address: usdc.address, event: TRANSFER, args: { to: payTo }, fromBlock, toBlock, strict: true }),
      publicClient.getLogs({ address: usdc.address, event: TRANSFER, args: { from: payTo }, fromBlock, toBlock, strict: true }),
    ]);
    const logs = [...(ins as unknown as FoundLog[]), ...(outs as unknown as FoundLog[])];
    const net = (ins as unknown as FoundLog[]).reduce((n, l) => n + l.args.value, 0n) - (outs as unknown as FoundLog[]).reduce((n, l) => n + l.args.value, 0n);
    return { logs, net };
  };
  const balance = await balanceAt(upTo);
  if (balance === 0n || balance <= recorded) return [];
  const floor = upTo > PREPAID_LOOKBACK_BLOCKS ? upTo - PREPAID_LOOKBACK_BLOCKS : 0n;
  // The newest blocks, (proven, upTo]: what their logs moved must be what the balance moved.
  const proven = upTo - RECENT_BLOCKS >= floor ? upTo - RECENT_BLOCKS : floor - 1n;
  const before = proven >= 0n ? await balanceAt(proven) : 0n;
  let recent = await logsOf(proven + 1n, upTo);
  for (let i = 0; recent.net !== balance - before; i++) {
    if (i >= LAG_RETRIES) throw new Error(`transfers at ${payTo} in blocks ${proven + 1n}-${upTo} do not explain its balance (a node behind cut the answer); looked at again next pass`);
    recent = await logsOf(proven + 1n, upTo);
  }
  const found = [...recent.logs];
  let net = recent.net;
  for (let to = proven; to >= floor && net < balance; to -= RANGE) {
    const from = to - RANGE + 1n > floor ? to - RANGE + 1n : floor;
    const older = await logsOf(from, to);
    found.push(...older.logs);
    net += older.net;
    if (from === floor) break;
  }
  if (net < balance) o.logger.warn({ payTo, balance: balance.toString(), found: net.toString() }, `money at a payment address older than ${PREPAID_LOOKBACK_BLOCKS} blocks is not credited; it is swept with the rest`);
  return found;
}
