/**
 * Reads the chain block range by block range and records what concerns the service:
 *
 *   Transfer(any ERC-20) into a receipt's payment address   → receipt_transfers 'in'
 *   Transfer out of a payment address into its split (sweep) → receipt_transfers 'sweep'
 *                                                             + a split transaction of that receipt
 *   Transfer of the token straight into a split              → a split transaction, receiptId null
 *   ERC20PaymentReleased out of a split                       → a split transaction (release)
 *
 * The cost per range is fixed, whatever the number of open receipts: two getLogs calls (every
 * Transfer and every release in the range, matched against stored addresses with one indexed
 * query), the range's last block twice, and one header per block that holds a match.
 *
 * Reorganisations: the hash of every block read is kept for a window far beyond any confirmation
 * depth. A pass first checks that the last block read is still on the chain; when it is not, it
 * finds the newest block that is, withdraws every row derived from the blocks above it, and reads
 * them again. A range whose last block changed while it was read is not recorded at all.
 */
import { and, desc, eq, gt, inArray, lt, sql } from 'drizzle-orm';
import { getAbiItem, type Address, type Hex } from 'viem';
import { erc20Abi } from 'viem';
import type { Logger } from 'pino';
import type { ChainDeps } from '../chain/client.ts';
import { paymentSplitterAbi } from '../chain/split-contract.ts';
import type { Db, Tx } from '../db/client.ts';
import { chainBlocks, chainCursors, receipts, receiptTransfers, receiptWatch, splitConfigs, splitTransactions } from '../db/schema.ts';
import { splitterShare } from '../domain/money.ts';
import { recordSplitTransaction } from '../domain/split-transactions.ts';

export const CURSOR = 'payments';
const TRANSFER = getAbiItem({ abi: erc20Abi, name: 'Transfer' });
const RELEASED = getAbiItem({ abi: paymentSplitterAbi, name: 'ERC20PaymentReleased' });
/** Block hashes kept, counted back from the newest read: far deeper than any confirmation depth. */
export const REORG_WINDOW = 1024n;

export interface ScannerOptions {
  db: Db;
  chain: ChainDeps;
  logger: Logger;
  platformRecipient: string | undefined;
  /** Where to start on an empty cursor; defaults to the chain's head minus a day's worth of blocks. */
  startBlock?: bigint;
  /** Blocks per getLogs call. */
  maxRange?: bigint;
}

export interface ReceiptKey {
  wallet: string;
  receiptId: string;
}

export interface ScanResult {
  /** The newest block read. */
  head: bigint;
  /** Receipts whose transfers changed (new ones recorded, or withdrawn by a reorganisation). */
  touched: ReceiptKey[];
  /** Receipts whose transfers a reorganisation withdrew. */
  withdrawn: ReceiptKey[];
  /** RPC calls this pass made. */
  rpcCalls: number;
}

interface TransferLog {
  address: Address;
  blockNumber: bigint;
  blockHash: Hex;
  transactionHash: Hex;
  logIndex: number;
  args: { from: Address; to: Address; value: bigint };
}

export class PaymentScanner {
  private rpcCalls = 0;

  constructor(private readonly o: ScannerOptions) {}

  /** The chain's newest block. */
  async head(): Promise<bigint> {
    this.rpcCalls = 0;
    return this.rpc(() => this.o.chain.publicClient.getBlockNumber({ cacheTime: 0 }));
  }

  /** Reads every block up to `head` (from head()). */
  async pass(head: bigint): Promise<ScanResult> {
    const { db } = this.o;
    const touched = new Map<string, ReceiptKey>();
    const withdrawn = await this.followReorganisation();
    for (const r of withdrawn) touched.set(keyOf(r), r);
    const [cursor] = await db.select().from(chainCursors).where(eq(chainCursors.name, CURSOR));
    let from = cursor === undefined ? (this.o.startBlock ?? (head > 43_200n ? head - 43_200n : 0n)) : cursor.block + 1n;
    const maxRange = this.o.maxRange ?? 2000n;
    while (from <= head) {
      const to = from + maxRange - 1n < head ? from + maxRange - 1n : head;
      const range = await this.readRange(from, to);
      if (range === null) break;
      for (const r of range) touched.set(keyOf(r), r);
      from = to + 1n;
    }
    await db.delete(chainBlocks).where(and(eq(chainBlocks.cursor, CURSOR), lt(chainBlocks.number, head - REORG_WINDOW)));
    return { head, touched: [...touched.values()], withdrawn, rpcCalls: this.rpcCalls };
  }

  private rpc<T>(call: () => Promise<T>): Promise<T> {
    this.rpcCalls++;
    return call();
  }

  private blockHash(number: bigint): Promise<Hex | null> {
    return this.rpc(() =>
      this.o.chain.publicClient.getBlock({ blockNumber: number }).then(
        (b) => b.hash,
        (err: unknown) => {
          if ((err as { name?: string }).name === 'BlockNotFoundError') return null;
          throw err;
        },
      ),
    );
  }

  /**
   * When the newest block read is no longer on the chain, withdraws what the removed blocks gave
   * and moves the cursor back to the newest block both chains share.
   */
  private async followReorganisation(): Promise<ReceiptKey[]> {
    const { db, logger } = this.o;
    const known = await db
      .select({ number: chainBlocks.number, hash: chainBlocks.hash })
      .from(chainBlocks)
      .where(eq(chainBlocks.cursor, CURSOR))
      .orderBy(desc(chainBlocks.number))
      .limit(1);
    const newest = known[0];
    if (newest === undefined || (await this.blockHash(newest.number)) === newest.hash) return [];
    let ancestor: bigint | null = null;
    let offset = 0;
    // Newest first, a page at a time: most reorganisations are a block or two deep.
    while (ancestor === null) {
      const page = await db
        .select({ number: chainBlocks.number, hash: chainBlocks.hash })
        .from(chainBlocks)
        .where(and(eq(chainBlocks.cursor, CURSOR), lt(chainBlocks.number, newest.number)))
        .orderBy(desc(chainBlocks.number))
        .limit(32)
        .offset(offset);
      if (page.length === 0) break;
      for (const b of page) {
        if ((await this.blockHash(b.number)) === b.hash) {
          ancestor = b.number;
          break;
        }
      }
      offset += page.length;
    }
    if (ancestor === null) {
      const [oldest] = await db
        .select({ number: chainBlocks.number })
        .from(chainBlocks)
        .where(eq(chainBlocks.cursor, CURSOR))
        .orderBy(chainBlocks.number)
        .limit(1);
      ancestor = (oldest?.number ?? 1n) - 1n;
      logger.error({ from: ancestor + 1n }, 'chain reorganisation deeper than the block window: reading it all again');
    }
    const removed = await db.transaction(async (tx) => {
      const gone = await tx
        .delete(receiptTransfers)
        .where(gt(receiptTransfers.blockNumber, ancestor))
        .returning({ wallet: receiptTransfers.wallet, receiptId: receiptTransfers.receiptId });
      await tx.delete(splitTransactions).where(gt(splitTransactions.blockNumber, ancestor));
      await tx.delete(chainBlocks).where(and(eq(chainBlocks.cursor, CURSOR), gt(chainBlocks.number, ancestor)));
      await this.moveCursor(tx, ancestor);
      const unique = new Map(gone.map((g) => [keyOf(g), g]));
      await this.watch(tx, [...unique.values()]);
      return [...unique.values()];
    });
    logger.warn({ ancestor, receipts: removed.length }, 'chain reorganisation: withdrew what the removed blocks held and reading them again');
    return removed;
  }

  private async moveCursor(tx: Tx, block: bigint): Promise<void> {
    const now = Date.now();
    await tx
      .insert(chainCursors)
      .values({ name: CURSOR, block, updatedAt: now })
      .onConflictDoUpdate({ target: chainCursors.name, set: { block, updatedAt: now } });
  }

  private async watch(tx: Tx, keys: ReceiptKey[]): Promise<void> {
    if (keys.length === 0) return;
    const now = Date.now();
    await tx
      .insert(receiptWatch)
      .values(keys.map((k) => ({ wallet: k.wallet, receiptId: k.receiptId, since: now })))
      .onConflictDoNothing();
  }

  /** Reads one range and records it, or returns null when its last block changed meanwhile. */
  private async readRange(fromBlock: bigint, toBlock: bigint): Promise<ReceiptKey[] | null> {
    const { chain, db, logger } = this.o;
    const before = await this.blockHash(toBlock);
    const [transfers, releases] = await Promise.all([
      this.rpc(() => chain.publicClient.getLogs({ event: TRANSFER, fromBlock, toBlock, strict: true })),
      this.rpc(() => chain.publicClient.getLogs({ event: RELEASED, fromBlock, toBlock, strict: true })),
    ]);
    const after = await this.blockHash(toBlock);
    if (before === null || before !== after) {
      logger.info({ block: toBlock }, 'block changed while it was read; reading the range again next pass');
      return null;
    }
    const logs = transfers as unknown as TransferLog[];
    const addresses = [...new Set(logs.flatMap((l) => [l.args.to.toLowerCase(), l.args.from.toLowerCase()]))];
    const releaseSplits = [...new Set(releases.map((l) => l.address.toLowerCase()))];
    const [payAddresses, splits] = await Promise.all([this.receiptsAt(addresses), this.splitsAt([...addresses, ...releaseSplits])]);
    const timestamps = new Map<bigint, number>();
    const timeOf = async (block: bigint) => {
      let ts = timestamps.get(block);
      if (ts === undefined) {
        ts = Number((await this.rpc(() => chain.publicClient.getBlock({ blockNumber: block }))).timestamp) * 1000;
        timestamps.set(block, ts);
      }
      return ts;
    };
    const token = chain.usdc.address.toLowerCase();
    const rows: (typeof receiptTransfers.$inferInsert)[] = [];
    const splitRows: Parameters<typeof recordSplitTransaction>[1][] = [];
    const blocks = new Map<bigint, string>([[toBlock, after]]);
    for (const log of logs) {
      const from = log.args.from.toLowerCase();
      const to = log.args.to.toLowerCase();
      const logToken = log.address.toLowerCase();
      const receiptTo = payAddresses.get(to);
      const receiptFrom = payAddresses.get(from);
      const split = splits.get(to);
      const base = {
        transactionHash: log.transactionHash.toLowerCase(),
        logIndex: log.logIndex,
        token: logToken,
        fromAddress: from,
        amountUnits: log.args.value.toString(),
        blockNumber: log.blockNumber,
        blockHash: log.blockHash.toLowerCase(),
      };
      if (receiptTo !== undefined) {
        rows.push({ ...base, ...receiptTo, kind: 'in', timestamp: await timeOf(log.blockNumber) });
      } else if (receiptFrom !== undefined && split !== undefined && split.wallet === receiptFrom.wallet) {
        rows.push({ ...base, ...receiptFrom, kind: 'sweep', timestamp: await timeOf(log.blockNumber) });
      }
      if (split !== undefined && logToken === token) {
        splitRows.push({
          wallet: split.wallet,
          kind: 'payment',
          splitAddress: to,
          counterparty: from,
          receiptId: receiptFrom !== undefined && receiptFrom.wallet === split.wallet ? receiptFrom.receiptId : null,
          amountUnits: log.args.value.toString(),
          feeUnits: splitterShare(log.args.value, split.platformBps).toString(),
          currency: chain.usdc.symbol,
          status: 'received',
          transactionHash: base.transactionHash,
          logIndex: log.logIndex,
          blockNumber: log.blockNumber,
          timestamp: await timeOf(log.blockNumber),
        });
      }
      if (receiptTo !== undefined || receiptFrom !== undefined || split !== undefined) blocks.set(log.blockNumber, base.blockHash);
    }
    for (const log of releases) {
      const split = splits.get(log.address.toLowerCase());
      if (split === undefined || log.args.token?.toLowerCase() !== token || log.args.to === undefined || log.args.amount === undefined) continue;
      blocks.set(log.blockNumber, log.blockHash.toLowerCase());
      splitRows.push({
        wallet: split.wallet,
        kind: 'release',
        splitAddress: log.address.toLowerCase(),
        counterparty: log.args.to.toLowerCase(),
        amountUnits: log.args.amount.toString(),
        feeUnits: '0',
        currency: chain.usdc.symbol,
        status: 'released',
        transactionHash: log.transactionHash.toLowerCase(),
        logIndex: log.logIndex,
        blockNumber: log.blockNumber,
        timestamp: await timeOf(log.blockNumber),
      });
    }
    const touched = [...new Map(rows.map((r) => [keyOf(r), { wallet: r.wallet, receiptId: r.receiptId }])).values()];
    await db.transaction(async (tx) => {
      if (rows.length > 0) await tx.insert(receiptTransfers).values(rows).onConflictDoNothing();
      for (const row of splitRows) await recordSplitTransaction(tx, row);
      await this.watch(tx, touched);
      await tx
        .insert(chainBlocks)
        .values([...blocks].map(([number, hash]) => ({ cursor: CURSOR, number, hash: hash.toLowerCase() })))
        .onConflictDoUpdate({ target: [chainBlocks.cursor, chainBlocks.number], set: { hash: sql`excluded.hash` } });
      await this.moveCursor(tx, toBlock);
    });
    return touched;
  }

  /** The receipts whose payment address is one of these. */
  private async receiptsAt(addresses: string[]): Promise<Map<string, ReceiptKey>> {
    if (addresses.length === 0) return new Map();
    const rows = await this.o.db
      .select({ address: receipts.payAddress, wallet: receipts.wallet, receiptId: receipts.id })
      .from(receipts)
      .where(inArray(receipts.payAddress, addresses));
    return new Map(rows.map((r) => [r.address!, { wallet: r.wallet, receiptId: r.receiptId }]));
  }

  /** The merchants whose split contract is one of these, with the platform's share of each. */
  private async splitsAt(addresses: string[]): Promise<Map<string, { wallet: string; platformBps: number }>> {
    if (addresses.length === 0) return new Map();
    const rows = await this.o.db
      .select({ wallet: splitConfigs.wallet, address: splitConfigs.address, recipients: splitConfigs.recipients })
      .from(splitConfigs)
      .where(inArray(splitConfigs.address, addresses));
    const platform = this.o.platformRecipient?.toLowerCase();
    return new Map(
      rows.map((r) => [
        r.address!.toLowerCase(),
        { wallet: r.wallet, platformBps: r.recipients.find((x) => x.address === platform)?.sharesBps ?? 0 },
      ]),
    );
  }
}

export function keyOf(r: ReceiptKey): string {
  return `${r.wallet} ${r.receiptId}`;
}
