/**
 * Indexes split transactions: USDC transfers into every merchant's split contract, and releases
 * out of it (ERC20PaymentReleased). Resumes from its cursor after a restart; a transfer made
 * without a submitted hash is matched to a receipt only when exactly one receipt fits it.
 */
import { and, eq, inArray, isNotNull, lte, notExists } from 'drizzle-orm';
import { getAbiItem, type Address } from 'viem';
import { erc20Abi } from 'viem';
import type { Logger } from 'pino';
import type { ChainDeps } from '../chain/client.ts';
import { paymentSplitterAbi } from '../chain/split-contract.ts';
import type { Db } from '../db/client.ts';
import { chainCursors, receiptPayments, receipts, splitConfigs, type SplitRecipient } from '../db/schema.ts';
import { bpsOf } from '../domain/money.ts';
import { UNPAID } from '../domain/receipts.ts';
import { recordSplitTransaction } from '../domain/split-transactions.ts';

const CURSOR = 'split-indexer';
const MAX_RANGE = 2000n;
const ADDRESS_BATCH = 200;
const TRANSFER = getAbiItem({ abi: erc20Abi, name: 'Transfer' });
const RELEASED = getAbiItem({ abi: paymentSplitterAbi, name: 'ERC20PaymentReleased' });

interface SplitOwner {
  wallet: string;
  platformBps: number;
}

export interface IndexerOptions {
  db: Db;
  chain: ChainDeps;
  logger: Logger;
  platformRecipient: string | undefined;
  /** Where to start on an empty cursor; defaults to the chain's head minus a day's worth of blocks. */
  startBlock?: bigint;
}

export class SplitIndexer {
  constructor(private readonly o: IndexerOptions) {}

  /** Reads new blocks up to the head. Returns how many logs it recorded. */
  async pass(): Promise<number> {
    const { db, chain } = this.o;
    const head = await chain.publicClient.getBlockNumber({ cacheTime: 0 });
    const [cursor] = await db.select().from(chainCursors).where(eq(chainCursors.name, CURSOR));
    let from = cursor === undefined ? (this.o.startBlock ?? (head > 43_200n ? head - 43_200n : 0n)) : cursor.block + 1n;
    if (from > head) return 0;
    const owners = await this.splitOwners();
    let recorded = 0;
    while (from <= head) {
      const to = from + MAX_RANGE - 1n < head ? from + MAX_RANGE - 1n : head;
      recorded += await this.scan(from, to, owners);
      await db
        .insert(chainCursors)
        .values({ name: CURSOR, block: to, updatedAt: Date.now() })
        .onConflictDoUpdate({ target: chainCursors.name, set: { block: to, updatedAt: Date.now() } });
      from = to + 1n;
    }
    return recorded;
  }

  private async splitOwners(): Promise<Map<string, SplitOwner>> {
    const rows = await this.o.db
      .select({ wallet: splitConfigs.wallet, address: splitConfigs.address, recipients: splitConfigs.recipients })
      .from(splitConfigs)
      .where(isNotNull(splitConfigs.address));
    const platform = this.o.platformRecipient?.toLowerCase();
    return new Map(
      rows.map((r) => [
        r.address!.toLowerCase(),
        { wallet: r.wallet, platformBps: (r.recipients as SplitRecipient[]).find((x) => x.address === platform)?.sharesBps ?? 0 },
      ]),
    );
  }

  private async scan(fromBlock: bigint, toBlock: bigint, owners: Map<string, SplitOwner>): Promise<number> {
    const addresses = [...owners.keys()] as Address[];
    let recorded = 0;
    const timestamps = new Map<bigint, number>();
    const timeOf = async (block: bigint) => {
      let ts = timestamps.get(block);
      if (ts === undefined) {
        ts = Number((await this.o.chain.publicClient.getBlock({ blockNumber: block })).timestamp) * 1000;
        timestamps.set(block, ts);
      }
      return ts;
    };
    for (let i = 0; i < addresses.length; i += ADDRESS_BATCH) {
      const batch = addresses.slice(i, i + ADDRESS_BATCH);
      const [payments, releases] = await Promise.all([
        this.o.chain.publicClient.getLogs({ address: this.o.chain.usdc.address, event: TRANSFER, args: { to: batch }, fromBlock, toBlock }),
        this.o.chain.publicClient.getLogs({ address: batch, event: RELEASED, args: { token: this.o.chain.usdc.address }, fromBlock, toBlock }),
      ]);
      for (const log of payments) {
        const owner = owners.get(log.args.to!.toLowerCase());
        if (owner === undefined || log.args.value === undefined) continue;
        if (await this.recordPayment(log, owner, await timeOf(log.blockNumber))) recorded++;
      }
      for (const log of releases) {
        const owner = owners.get(log.address.toLowerCase());
        if (owner === undefined || log.args.amount === undefined || log.args.to === undefined) continue;
        const inserted = await recordSplitTransaction(this.o.db, {
          wallet: owner.wallet,
          kind: 'release',
          splitAddress: log.address,
          counterparty: log.args.to,
          amountUnits: log.args.amount.toString(),
          feeUnits: '0',
          currency: this.o.chain.usdc.symbol,
          status: 'released',
          transactionHash: log.transactionHash,
          logIndex: log.logIndex,
          blockNumber: log.blockNumber,
          timestamp: await timeOf(log.blockNumber),
        });
        if (inserted) recorded++;
      }
    }
    return recorded;
  }

  private async recordPayment(
    log: { transactionHash: `0x${string}`; logIndex: number; blockNumber: bigint; args: { from?: Address; to?: Address; value?: bigint } },
    owner: SplitOwner,
    timestamp: number,
  ): Promise<boolean> {
    const { db } = this.o;
    const hash = log.transactionHash.toLowerCase();
    const value = log.args.value!;
    return db.transaction(async (tx) => {
      const [settled] = await tx
        .select({ receiptId: receiptPayments.receiptId })
        .from(receiptPayments)
        .where(and(eq(receiptPayments.transactionHash, hash), eq(receiptPayments.logIndex, log.logIndex), eq(receiptPayments.status, 'completed')));
      const inserted = await recordSplitTransaction(tx, {
        wallet: owner.wallet,
        kind: 'payment',
        splitAddress: log.args.to!,
        counterparty: log.args.from!,
        receiptId: settled?.receiptId ?? null,
        amountUnits: value.toString(),
        feeUnits: bpsOf(value, owner.platformBps).toString(),
        currency: this.o.chain.usdc.symbol,
        status: 'received',
        transactionHash: hash,
        logIndex: log.logIndex,
        blockNumber: log.blockNumber,
        timestamp,
      });
      if (!inserted) return false;
      // A buyer who submitted this transaction is handled by the verifier already.
      const [submitted] = await tx.select({ id: receiptPayments.receiptId }).from(receiptPayments).where(eq(receiptPayments.transactionHash, hash));
      if (submitted === undefined) await this.matchUnsolicited(tx, owner.wallet, hash, value, timestamp);
      return true;
    });
  }

  /**
   * Matches a transfer nobody submitted to the one unpaid receipt of that merchant whose amount
   * it equals exactly. With no such receipt, or several, it stays unmatched: visible in the split
   * transactions with no receiptId, for the merchant to reconcile.
   */
  private async matchUnsolicited(tx: Parameters<Parameters<Db['transaction']>[0]>[0], wallet: string, hash: string, value: bigint, timestamp: number) {
    const decimals = this.o.chain.usdc.decimals;
    const scale = 10n ** BigInt(decimals - 2);
    if (value % scale !== 0n) return;
    const cents = value / scale;
    const candidates = await tx
      .select({ id: receipts.id })
      .from(receipts)
      .where(
        and(
          eq(receipts.wallet, wallet),
          eq(receipts.totalCents, cents),
          inArray(receipts.status, [...UNPAID]),
          lte(receipts.createdAt, timestamp + 60_000),
          notExists(
            tx
              .select({ one: receiptPayments.receiptId })
              .from(receiptPayments)
              .where(and(eq(receiptPayments.wallet, receipts.wallet), eq(receiptPayments.receiptId, receipts.id))),
          ),
        ),
      )
      .limit(2);
    if (candidates.length !== 1) {
      this.o.logger.info({ wallet, tx: hash, candidates: candidates.length }, 'unmatched payment into a split');
      return;
    }
    const now = Date.now();
    await tx
      .insert(receiptPayments)
      .values({ wallet, receiptId: candidates[0]!.id, transactionHash: hash, status: 'submitted', source: 'indexed', createdAt: now, updatedAt: now })
      .onConflictDoNothing();
  }
}
