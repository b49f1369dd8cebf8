/**
 * Sends the sweeps that move money from payment addresses into splits, for the chain worker
 * (src/payments/worker.ts), which hands it the receipts that owe one after each pass.
 *
 * Rules (DESIGN.md, "A real chain"):
 *
 *   - **Balance first.** An address is swept only when its balance (balanceOf, at the node's
 *     latest block) holds something: nothing to move, no transaction.
 *   - **One sweep per address in flight.** A pending sweep, or one mined in a block the scanner has
 *     not read yet, holds back another for the same address (the sweeps table, one pending row per
 *     address at most).
 *   - **Its own nonce.** Nonces come from src/chain/nonce-keeper.ts, reconciled with the chain's
 *     latest count, never with a (possibly lagging) node's pending count.
 *   - **Replace, never re-send.** A sweep unmined REPLACE_AFTER_BLOCKS blocks after its last send
 *     is sent again with the same nonce and a higher fee (src/chain/fees.ts), up to MAX_FEE_GWEI.
 *     Every transaction sent for it is kept; whichever is mined, the sweep is done once. Beyond the
 *     cap it waits, and health() counts it: /healthz and the admin app (sweepStatus) say so.
 *   - **No new nonce while one is stuck.** New sweeps use new nonces only while no pending sweep is
 *     overdue (unmined past its replacement time, or waiting at the fee cap), and at most
 *     MAX_IN_FLIGHT at a time: a fee spike queues new sweeps behind the stuck ones instead of
 *     stacking nonces that cannot be mined either.
 *   - **Dust waits.** A receipt whose counted money covers its total is always swept (it completes
 *     only once swept). Money short of the total is swept only from SWEEP_DUST_USD on; less waits
 *     at the address, costing no call and no gas, until a top-up makes it worth a sweep (the whole
 *     balance then goes in one). The merchant can still sweep it by hand from the admin app.
 *   - **Never in the way.** The worker runs the sweeper in the background after its pass; the
 *     next pass waits for it, so a pass never waits for a transaction to be mined. Each receipt's
 *     failure is logged and skipped; nothing here stops another receipt, expiry or hint.
 *   - **Gas.** Before each send the deployer's balance must cover gas × max fee; when it does not,
 *     the sweep waits (waitingForGas) and health() says the deployer is low.
 *   - **Few calls.** A token sweep is known mined once the scanner has recorded its transfer out
 *     of the address, with no call. A run that replaces or gives up a sweep reads the nonce, and
 *     one that sends reads it only when it may have moved (chainNonce); one with nothing new to
 *     send (every address owed has its sweep in flight) reads none,
 *     and only a sweep of other money (ETH, another token) has its transaction's receipt read.
 *     The base fee comes with the header the worker's pass read; the priority fee is asked once a
 *     minute, the deployer's balance every 30 s (less what sends may have spent meanwhile, and
 *     every run while sweeps wait for gas). The address's balance is read at the block the scan
 *     read (src/chain/lagging-nodes.ts). The gas limit is estimated once per kind of sweep
 *     (factory, token, deploying the forwarder or not) and every ten minutes, and again after a
 *     sweep reverts (src/payments/sweep-gas.ts).
 *
 * The transaction is any contract call: a target (the receipt's factory) and its calldata, so a
 * factory version with another sweep function needs only another sweepCall (src/payments/pay-address.ts).
 */
import { and, asc, eq, gte, inArray, sql } from 'drizzle-orm';
import { encodeFunctionData, erc20Abi, keccak256, TransactionReceiptNotFoundError, zeroAddress, type Address, type Hex, type LocalAccount } from 'viem';
import type { Logger } from 'pino';
import type { ChainDeps } from '../chain/client.ts';
import { firstFees, gwei, replacementFees, type Fees } from '../chain/fees.ts';
import { fromAnyNode } from '../chain/lagging-nodes.ts';
import { NonceKeeper } from '../chain/nonce-keeper.ts';
import { sendSigned, type Refusal } from '../chain/refusals.ts';
import { sendSerially } from '../chain/wallet-queue.ts';
import type { Db } from '../db/client.ts';
import { chainStatus, receipts, receiptTransfers, receiptWatch, sweeps, type SweepAttempt } from '../db/schema.ts';
import { centsToTokenUnits } from '../lib/money.ts';
import { SweepGasLimits } from './sweep-gas.ts';
import { splitOfReceipt, sweepCall, SweepUnavailable, type SweepCall } from './pay-address.ts';
import type { ReceiptKey } from './scanner.ts';
import { keysJson } from './watch.ts';
import { amountOf } from './settle.ts';

/**
 * A sweep that holds back another for its address: pending, or mined in a block the scanner has
 * not read yet (`scanned` is the newest block it read).
 */
const sweepInFlight = (scanned: bigint) => sql`(${sweeps.state} = 'pending' or (${sweeps.state} = 'mined' and ${sweeps.minedBlock} > ${scanned}))`;

/** A receipt that owes a sweep, as the settle loop found it. */
export interface SweepNeed extends ReceiptKey {
  payAddress: string;
  /** Counted money not yet swept, from the recorded transfers (token base units). */
  unswept: bigint;
  /**
   * Money other than the receipt's token (NATIVE_TOKEN for ETH), found by balance: its own dust
   * rule was applied by src/payments/other-sweeps.ts, so it skips this module's.
   */
  token?: Address;
}

/** What /healthz and the admin app show about sweeps. */
export interface SweepHealth {
  /** Sweeps owed that wait because no key here pays gas, or the deployer's balance is too low. */
  waitingForGas: number;
  /** Sweeps that wait because the fee they need is above MAX_FEE_GWEI. */
  atFeeCap: number;
  /** The deployer's balance in wei when last read; null without a key. */
  deployerBalanceWei: string | null;
  /** The deployer cannot pay for the sweeps owed now plus LOW_RESERVE_SWEEPS more. */
  deployerLow: boolean;
}

export interface SweeperOptions {
  db: Db;
  chain: ChainDeps;
  logger: Logger;
  /** MAX_FEE_GWEI in wei. */
  maxFeeWei: bigint;
  /** SWEEP_DUST_USD in cents. */
  dustCents: number;
  /** Blocks a sweep may stay unmined before it is replaced. */
  replaceAfterBlocks?: bigint;
}

/** chain_status row of the sweeper's health. */
export const SWEEP_STATUS = 'sweeps';
/** A sweep still unmined this many blocks after its last send is replaced. */
export const REPLACE_AFTER_BLOCKS = 3n;
/** Pending sweeps (nonces) at most at once. */
export const MAX_IN_FLIGHT = 16;
/** New sweeps sent per run at most; the rest go in the next run. */
const SENDS_PER_RUN = 32;
/** A pending sweep whose nonce the chain used, none of its own transactions found after this many blocks, is lost. */
const LOST_AFTER_BLOCKS = 12n;
/** Gas of a sweep for the deployer-low rule (a first sweep that deploys the forwarder costs about this). */
const SWEEP_GAS = 150_000n;
/** The deployer is low when it cannot pay the sweeps owed now plus this many more. */
export const LOW_RESERVE_SWEEPS = 20n;
/**
 * The deployer's balance is read at least this often for health, sweeps owed or not; between
 * reads, what sends may have spent is taken off it, and while sweeps wait for gas it is read every
 * run (so a top-up lets them go at the next pass).
 */
const BALANCE_EVERY_MS = 30_000;
/** The priority fee is asked again after this long: on a rollup it moves slowly, and the base fee is what spikes. */
const TIP_EVERY_MS = 60_000;
/** The chain's nonce count is read at least this often by runs that send, even with no sweep pending (chainNonce). */
const NONCE_EVERY_MS = 60_000;

type SweepRow = typeof sweeps.$inferSelect;

/**
 * The calldata of a receipt's sweep, through the factory its payment address commits to
 * (src/payments/pay-address.ts sweepCall: version 1 for receipts addressed before version 2).
 */
export function sweepTransactionOf(call: SweepCall): { target: Address; data: Hex } {
  return { target: call.factory, data: encodeFunctionData({ abi: call.abi, functionName: call.functionName, args: call.args }) };
}

interface RunState {
  head: bigint;
  scanned: bigint;
  latest: bigint;
  baseFee: bigint;
  tip: bigint;
  balance: bigint;
  /** Wei the sends of this run may still spend, at most. */
  spendable: bigint;
}

export class Sweeper {
  private needs = new Map<string, SweepNeed>();
  private running: Promise<void> | undefined;
  /** The deployer's balance when last read, less the most that sends since may spend: never more than it holds. */
  private deployer: { wei: bigint; at: number } | undefined;
  /** The priority fee the node suggested when last asked. */
  private tip: { wei: bigint; at: number } | undefined;
  /** When the chain's nonce count was last read; unset again by a send refused for its nonce. */
  private nonceReadAt: number | undefined;
  /** Receipts whose sweep the log already said waits at the fee cap (this process). */
  private readonly toldAtCap = new Set<string>();
  /** Sweeps sent (new or replaced) and RPC calls made by the last run that finished. */
  lastSent = 0;
  lastRpcCalls = 0;
  private calls = 0;
  private published: string | undefined;
  private sent = 0;
  private last: SweepHealth = { waitingForGas: 0, atFeeCap: 0, deployerBalanceWei: null, deployerLow: false };
  /** Gas limits per kind of sweep, from the node's estimates (src/payments/sweep-gas.ts). */
  readonly gasLimits = new SweepGasLimits();

  constructor(private readonly o: SweeperOptions) {}

  /** The facts of the last run. */
  health(): SweepHealth {
    return this.last;
  }

  /** A receipt owes a sweep (called by the settle loop; nothing is sent until run()). */
  want(need: SweepNeed): void {
    this.needs.set(`${need.wallet}\n${need.receiptId}\n${need.token ?? ''}`, need);
  }

  /**
   * Starts a run in the background unless one is under way (its sweeps owed wait for the next).
   * `head` is the newest block any node named (a send is dated by it, and replaced by its age),
   * `scanned` the newest block read (balances are read there); `baseFee` is the newest header's,
   * which the worker's pass has read already.
   */
  start(head: bigint, scanned: bigint, baseFee?: bigint): void {
    if (this.running !== undefined) return;
    const needs = [...this.needs.values()];
    this.needs.clear();
    this.running = this.run(needs, head, scanned, baseFee)
      .catch((err: unknown) => this.o.logger.warn({ err }, 'sweeps: this run failed; they are tried again next pass'))
      .finally(() => {
        this.running = undefined;
      });
  }

  /** Resolves when no run is under way. */
  async idle(): Promise<void> {
    await this.running;
  }

  /** One run: settle what was sent, replace what is stuck, send what is owed. */
  async run(needs: SweepNeed[], head: bigint, scanned: bigint, baseFee?: bigint): Promise<void> {
    this.calls = 0;
    this.sent = 0;
    try {
      await this.runOnce(needs, head, scanned, baseFee);
    } finally {
      this.lastSent = this.sent;
      this.lastRpcCalls = this.calls;
    }
    await this.publish();
  }

  /** Stores the health for every instance (the admin app may ask any), when it changed. */
  private async publish(): Promise<void> {
    const data = JSON.stringify(this.last);
    if (data === this.published) return;
    const now = Date.now();
    await this.o.db
      .insert(chainStatus)
      .values({ name: SWEEP_STATUS, data: this.last, updatedAt: now })
      .onConflictDoUpdate({ target: chainStatus.name, set: { data: this.last, updatedAt: now } });
    this.published = data;
  }

  /** Counts an RPC call for the pass statistics. */
  private rpc<T>(call: () => Promise<T>): Promise<T> {
    this.calls++;
    return call();
  }

  private async runOnce(needs: SweepNeed[], head: bigint, scanned: bigint, knownBaseFee: bigint | undefined): Promise<void> {
    const { chain, db } = this.o;
    const dustUnits = centsToTokenUnits(BigInt(this.o.dustCents), chain.usdc.decimals);
    const some = needs.filter((n) => n.unswept > 0n && n.token === undefined);
    const owed = [...(await this.coveredOrWorth(some, dustUnits)), ...needs.filter((n) => n.unswept > 0n && n.token !== undefined)];
    if (owed.length < some.length) await this.forgetDust(some.filter((n) => !owed.includes(n)));
    const health: SweepHealth = { waitingForGas: 0, atFeeCap: 0, deployerBalanceWei: null, deployerLow: false };
    const account = this.localAccount();
    if (account === undefined || chain.paymentFactory === undefined) {
      // Nobody here pays gas: everything owed waits at its address (the admin app offers the
      // merchant the transaction to send from their own wallet).
      health.waitingForGas = owed.length;
      this.last = health;
      return;
    }
    const keeper = new NonceKeeper(db, chain.publicClient, account.address);
    const pendingRows = () => db.select().from(sweeps).where(and(eq(sweeps.account, keeper.account), eq(sweeps.state, 'pending'))).orderBy(asc(sweeps.nonce));
    let pending = await this.followedByScanner(await pendingRows());
    if (pending.length === 0 && owed.length === 0) {
      // Idle: the balance as last read (again once BALANCE_EVERY_MS old), against the pass's base fee.
      const balance = await this.deployerBalance(account.address, false);
      health.deployerBalanceWei = balance.toString();
      health.deployerLow = balance < this.reserveFor(0n, knownBaseFee ?? (await this.baseFee().catch(() => 0n)), 0n);
      this.last = health;
      return;
    }
    // Nothing new to send (every address owed has its sweep in flight) and no sweep due for a
    // replacement: whether each was mined is what the scanner recorded (or, for other money, its
    // transaction's receipt). The account's nonce is read by the runs that send, replace or give
    // up a sweep, and unmineRemoved runs with them. While payments arrive a block apart, most runs
    // are these.
    const due = pending.some((p) => head - BigInt(p.attempts.at(-1)!.block) >= this.replaceAfter());
    if (!due && (await this.allInFlight(owed, scanned))) {
      let unmined = 0n;
      const token = chain.usdc.address.toLowerCase();
      for (const row of pending) {
        // The token's sweeps show in the scanner's logs; one that is not there yet (or reverted,
        // leaving none) is asked about by the run that replaces it.
        const mined = row.token === token ? false : await this.recordMined(row).catch((err: unknown) => {
          this.o.logger.warn({ err, wallet: row.wallet, receiptId: row.receiptId, nonce: row.nonce.toString() }, 'sweep: following a pending sweep failed; tried again next pass');
          return false;
        });
        if (mined) continue;
        unmined++;
        if (row.atFeeCap) health.atFeeCap++;
      }
      const [tip, balance] = await Promise.all([this.priorityFee(), this.deployerBalance(account.address, false)]);
      health.deployerBalanceWei = balance.toString();
      health.deployerLow = balance < this.reserveFor(unmined, knownBaseFee ?? (await this.baseFee().catch(() => 0n)), tip);
      this.last = health;
      return;
    }
    // The nonce is read when it may have moved (chainNonce); the base fee comes with the pass's
    // header; the tip and the deployer's balance are read again when old, or (the balance) while
    // sweeps wait for gas.
    const [latest, baseFee, tip, balance] = await Promise.all([
      this.chainNonce(keeper, pending.length > 0),
      knownBaseFee ?? this.baseFee(),
      this.priorityFee(),
      this.deployerBalance(account.address, this.last.waitingForGas > 0 || this.last.deployerLow),
    ]);
    if ((await this.unmineRemoved(keeper, latest)) > 0) pending = await pendingRows();
    const s: RunState = { head, scanned, latest, baseFee, tip, balance, spendable: balance };
    health.deployerBalanceWei = balance.toString();

    const stillPending = await this.followPending(pending, s, account, health);
    // An address whose sweep is pending needs nothing more until it is mined and read.
    const busy = new Set(stillPending.map((p) => p.payAddress));
    const open = owed.filter((n) => !busy.has(n.payAddress.toLowerCase()));
    const overdue = stillPending.some((p) => p.atFeeCap || head - BigInt(p.attempts.at(-1)!.block) >= this.replaceAfter());
    let inFlight = stillPending.length;
    let sent = 0;
    for (const need of open) {
      if (overdue) {
        // A stuck nonce holds every later one: the new sweep waits for it, counted as at the cap
        // when that is why it is stuck.
        if (stillPending.some((p) => p.atFeeCap)) health.atFeeCap++;
        continue;
      }
      if (inFlight >= MAX_IN_FLIGHT || sent >= SENDS_PER_RUN) break;
      try {
        const outcome = await this.sendNew(need, keeper, account, s);
        if (outcome === 'sent') {
          inFlight++;
          sent++;
        } else if (outcome === 'no_gas') health.waitingForGas++;
        else if (outcome === 'fee_cap') health.atFeeCap++;
      } catch (err) {
        this.o.logger.warn({ err, wallet: need.wallet, receiptId: need.receiptId }, 'sweep: sending failed; tried again next pass');
      }
    }
    health.atFeeCap += stillPending.filter((p) => p.atFeeCap).length;
    health.deployerLow = balance < this.reserveFor(BigInt(health.waitingForGas + inFlight), baseFee, tip);
    this.last = health;
  }

  /** Whether every address owed has a sweep in flight (sendNew would skip each): one query for them all. */
  private async allInFlight(owed: SweepNeed[], scanned: bigint): Promise<boolean> {
    if (owed.length === 0) return true;
    const addresses = [...new Set(owed.map((n) => n.payAddress.toLowerCase()))];
    const rows = await this.o.db
      .selectDistinct({ payAddress: sweeps.payAddress })
      .from(sweeps)
      .where(
        and(
          inArray(sweeps.payAddress, addresses),
          sweepInFlight(scanned),
        ),
      );
    return rows.length === addresses.length;
  }

  private replaceAfter(): bigint {
    return this.o.replaceAfterBlocks ?? REPLACE_AFTER_BLOCKS;
  }

  /** Wei the deployer needs for `owed` sweeps plus LOW_RESERVE_SWEEPS more at today's fees. */
  private reserveFor(owed: bigint, baseFee: bigint, tip: bigint): bigint {
    const fee = firstFees(baseFee, tip, this.o.maxFeeWei)?.maxFeePerGas ?? this.o.maxFeeWei;
    return SWEEP_GAS * fee * (owed + LOW_RESERVE_SWEEPS);
  }

  /**
   * The chain's count of the account's mined transactions (`latest`), for a run that sends,
   * replaces or gives up a sweep. Every send of the service takes its nonce from the keeper (the
   * sweeps here; split deployments, releases and relays in src/chain/deployer.ts), so while no
   * sweep is pending the kept nonce is the next one, and the count is not read: that read cost
   * every payment a call (20 compute units). It is read when a sweep is pending (whether its nonce
   * was used decides how it is followed), before the first send of this process, after a send the
   * node refused for its nonce (a transaction of the key from outside the service took it), and at
   * least every NONCE_EVERY_MS (unmineRemoved finds a sweep a reorganisation took back by it).
   * Otherwise it returns the kept nonce, with which unmineRemoved finds nothing and reserve()
   * takes the kept one.
   */
  private async chainNonce(keeper: NonceKeeper, pending: boolean): Promise<bigint> {
    if (!pending && this.nonceReadAt !== undefined && Date.now() - this.nonceReadAt < NONCE_EVERY_MS) {
      const kept = await keeper.kept();
      if (kept !== null) return kept;
    }
    const at = Date.now();
    const latest = await this.rpc(() => keeper.latest());
    this.nonceReadAt = at;
    return latest;
  }

  /** The deployer's balance: read when `fresh` is asked or the last read is BALANCE_EVERY_MS old. */
  private async deployerBalance(address: Address, fresh: boolean): Promise<bigint> {
    if (!fresh && this.deployer !== undefined && Date.now() - this.deployer.at < BALANCE_EVERY_MS) return this.deployer.wei;
    const wei = await this.rpc(() => this.o.chain.publicClient.getBalance({ address }));
    this.deployer = { wei, at: Date.now() };
    return wei;
  }

  /** What a send may cost comes off the run's spendable wei and off the balance kept between reads. */
  private spend(s: RunState, wei: bigint): void {
    s.spendable -= wei;
    if (this.deployer !== undefined) this.deployer = { ...this.deployer, wei: this.deployer.wei > wei ? this.deployer.wei - wei : 0n };
  }

  /** The priority fee the node suggests, asked at most every TIP_EVERY_MS (10⁶ wei when it cannot say). */
  private async priorityFee(): Promise<bigint> {
    if (this.tip !== undefined && Date.now() - this.tip.at < TIP_EVERY_MS) return this.tip.wei;
    const wei = await this.rpc(() => this.o.chain.publicClient.estimateMaxPriorityFeePerGas()).catch(() => undefined);
    if (wei === undefined) return this.tip?.wei ?? 10n ** 6n;
    this.tip = { wei, at: Date.now() };
    return wei;
  }

  private async baseFee(): Promise<bigint> {
    const block = await this.rpc(() => this.o.chain.publicClient.getBlock({ blockTag: 'latest' }));
    return block.baseFeePerGas ?? 0n;
  }

  private localAccount(): LocalAccount | undefined {
    const account = this.o.chain.walletClient?.account;
    return account?.type === 'local' ? account : undefined;
  }

  /**
   * Dust of receipts settled short (tx_mismatch: every transfer at depth) leaves the worker's
   * watch list, so hundreds of dusted addresses cost no pass any work: a top-up is a new transfer,
   * which the scanner hands to the settle loop again, as it does a reorganisation.
   */
  private async forgetDust(dust: SweepNeed[]): Promise<void> {
    await this.o.db.execute(sql`delete from ${receiptWatch} w
      using json_to_recordset(${keysJson(dust)}::json) as k(w text, i text), ${receipts} r
      where w.wallet = k.w and w.receipt_id = k.i
        and r.wallet = w.wallet and r.id = w.receipt_id and r.status = 'tx_mismatch'`);
  }

  /**
   * The needs worth a sweep: covered receipts whatever their amount, others from the dust
   * threshold on. Whether a small one is covered is read for all of them in one query.
   */
  private async coveredOrWorth(worth: SweepNeed[], dustUnits: bigint): Promise<SweepNeed[]> {
    if (worth.length === 0) return [];
    const small = worth.filter((n) => n.unswept < dustUnits);
    if (small.length === 0) return worth;
    const rows = await this.o.db
      .select({ wallet: receipts.wallet, id: receipts.id, totalCents: receipts.totalCents, paidUnits: receipts.paidUnits })
      .from(receipts)
      .innerJoin(sql`json_to_recordset(${keysJson(small)}::json) as k(w text, i text)`, sql`${receipts.wallet} = k.w and ${receipts.id} = k.i`);
    const covered = new Set(rows.filter((r) => BigInt(r.paidUnits) >= amountOf(r, this.o.chain.usdc.decimals)).map((r) => `${r.wallet}\n${r.id}`));
    return worth.filter((n) => n.unswept >= dustUnits || covered.has(`${n.wallet}\n${n.receiptId}`));
  }

  /**
   * Brings each pending sweep up to date: mined (one of its transactions is in a block), lost
   * (its nonce went to another transaction), replaced (stuck past its time), or left to wait.
   * Returns those still pending.
   */
  private async followPending(pending: SweepRow[], s: RunState, account: LocalAccount, health: SweepHealth): Promise<SweepRow[]> {
    const still: SweepRow[] = [];
    for (const row of pending) {
      try {
        if (row.nonce < s.latest) {
          if (!(await this.resolve(row, s))) still.push(row);
          continue;
        }
        const last = row.attempts.at(-1)!;
        if (s.head - BigInt(last.block) < this.replaceAfter()) {
          still.push(row);
          continue;
        }
        still.push(await this.replace(row, s, account, health));
      } catch (err) {
        this.o.logger.warn({ err, wallet: row.wallet, receiptId: row.receiptId, nonce: row.nonce.toString() }, 'sweep: following a pending sweep failed; tried again next pass');
        still.push(row);
      }
    }
    return still;
  }

  /**
   * A sweep recorded mined whose nonce the chain counts as unused again (latest ≤ nonce), its
   * transaction no longer known, was in a block a reorganisation removed. Left mined, its nonce
   * would be a gap nobody fills: every later sweep (kept nonces above it) would be sent and
   * replaced for ever without being mined. So it is pending again, and followPending sends it
   * again with the same nonce (replaced with a higher fee: its last send is long past), which
   * fills the gap. Its call sweeps whatever the address holds then, nothing if the money moved.
   * One pending row per address and per nonce (the unique indexes): a row that would collide
   * waits for a later run. Returns how many went back to pending.
   */
  private async unmineRemoved(keeper: NonceKeeper, latest: bigint): Promise<number> {
    const { db, logger } = this.o;
    const mined = await db
      .select()
      .from(sweeps)
      .where(and(eq(sweeps.account, keeper.account), eq(sweeps.state, 'mined'), gte(sweeps.nonce, latest)))
      .orderBy(asc(sweeps.nonce));
    let back = 0;
    for (const row of mined) {
      if (!(await this.goneFromChain(row))) continue;
      try {
        const moved = await db
          .update(sweeps)
          .set({ state: 'pending', minedHash: null, minedBlock: null, atFeeCap: false, updatedAt: Date.now() })
          .where(
            and(
              eq(sweeps.id, row.id),
              eq(sweeps.state, 'mined'),
              sql`not exists (select 1 from ${sweeps} p where p.state = 'pending' and (p.pay_address = ${row.payAddress} or (p.account = ${row.account} and p.nonce = ${row.nonce})))`,
            ),
          )
          .returning({ id: sweeps.id });
        if (moved.length === 0) continue;
        back++;
        logger.warn({ wallet: row.wallet, receiptId: row.receiptId, nonce: row.nonce.toString(), tx: row.minedHash }, 'sweep: a reorganisation removed its block; sending it again with the same nonce');
      } catch (err) {
        // Another instance made a pending row for the address or nonce meanwhile: a later run.
        logger.warn({ err, wallet: row.wallet, receiptId: row.receiptId, nonce: row.nonce.toString() }, 'sweep: could not mark a removed sweep pending; tried again next pass');
      }
    }
    return back;
  }

  /** The node says it has no transaction receipt for the sweep's mined transaction (not merely failed to answer). */
  private async goneFromChain(row: SweepRow): Promise<boolean> {
    if (row.minedHash === null) return true;
    try {
      await this.rpc(() => this.o.chain.publicClient.getTransactionReceipt({ hash: row.minedHash as Hex }));
      return false;
    } catch (err) {
      return err instanceof TransactionReceiptNotFoundError;
    }
  }

  /** Whether one of the sweep's transactions has a receipt (newest send first); if so it is recorded mined. */
  private async recordMined(row: SweepRow): Promise<boolean> {
    for (const a of [...row.attempts].reverse()) {
      const mined = await this.rpc(() => this.o.chain.publicClient.getTransactionReceipt({ hash: a.hash as Hex })).catch(() => null);
      if (mined === null) continue;
      await this.markMined(row, a.hash, mined.blockNumber, mined.status);
      return true;
    }
    return false;
  }

  private async markMined(row: SweepRow, hash: string, block: bigint, status: 'success' | 'reverted'): Promise<void> {
    if (status === 'reverted') {
      // Its money is still at the address, so it is owed again; its gas limit may be what failed.
      this.gasLimits.forget(row.target, row.token);
      this.o.logger.warn({ wallet: row.wallet, receiptId: row.receiptId, tx: hash, gas: row.gas.toString() }, 'sweep reverted; the next is sent with a fresh gas estimate');
    }
    await this.o.db
      .update(sweeps)
      .set({ state: 'mined', minedHash: hash, minedBlock: block, atFeeCap: false, updatedAt: Date.now() })
      .where(and(eq(sweeps.id, row.id), eq(sweeps.state, 'pending')));
    this.o.logger.info({ wallet: row.wallet, receiptId: row.receiptId, tx: hash, nonce: row.nonce.toString(), attempts: row.attempts.length, status }, 'sweep mined');
  }

  /**
   * Records mined the pending sweeps whose transaction the scanner has already recorded moving
   * the money out of the address (a sweep transfer with one of their hashes), with no call to the
   * provider; returns the others, still pending.
   */
  private async followedByScanner(pending: SweepRow[]): Promise<SweepRow[]> {
    const byHash = new Map(pending.flatMap((row) => row.attempts.map((a): [string, SweepRow] => [a.hash.toLowerCase(), row])));
    if (byHash.size === 0) return pending;
    const rows = await this.o.db
      .selectDistinct({ hash: receiptTransfers.transactionHash, block: receiptTransfers.blockNumber })
      .from(receiptTransfers)
      .where(and(eq(receiptTransfers.kind, 'sweep'), inArray(receiptTransfers.transactionHash, [...byHash.keys()])));
    const mined = new Set<SweepRow>();
    for (const r of rows) {
      const row = byHash.get(r.hash.toLowerCase())!;
      if (mined.has(row)) continue;
      await this.markMined(row, r.hash, r.block, 'success');
      mined.add(row);
    }
    return pending.filter((row) => !mined.has(row));
  }

  /** A pending sweep whose nonce is used: which of its transactions was mined? True when settled. */
  private async resolve(row: SweepRow, s: RunState): Promise<boolean> {
    const { db, logger } = this.o;
    if (await this.recordMined(row)) return true;
    // None found: a lagging node may not know the block yet. Only long after is the nonce given up as another's.
    if (s.head - BigInt(row.attempts.at(-1)!.block) < LOST_AFTER_BLOCKS) return false;
    await db.update(sweeps).set({ state: 'lost', updatedAt: Date.now() }).where(eq(sweeps.id, row.id));
    logger.warn({ wallet: row.wallet, receiptId: row.receiptId, nonce: row.nonce.toString() }, 'sweep: its nonce was used by another transaction; the address will be swept again');
    return true;
  }

  /** Sends a stuck sweep again with the same nonce and a higher fee, or marks it waiting at the cap. */
  private async replace(row: SweepRow, s: RunState, account: LocalAccount, health: SweepHealth): Promise<SweepRow> {
    const { db, logger } = this.o;
    const last = row.attempts.at(-1)!;
    const previous: Fees = { maxFeePerGas: BigInt(last.maxFeePerGas), maxPriorityFeePerGas: BigInt(last.maxPriorityFeePerGas) };
    const fees = replacementFees(previous, s.baseFee, s.tip, this.o.maxFeeWei);
    if (fees === null) {
      // The cap leaves no room for a raise. If what was sent could be mined now, a node may have
      // dropped it: send the same transaction again (harmless when it is still known).
      if (previous.maxFeePerGas >= s.baseFee) await this.broadcast(row.raw as Hex);
      if (!row.atFeeCap) {
        await db.update(sweeps).set({ atFeeCap: true, updatedAt: Date.now() }).where(eq(sweeps.id, row.id));
        this.tellAtCap(row, s.baseFee);
      }
      return { ...row, atFeeCap: true };
    }
    const cost = row.gas * fees.maxFeePerGas;
    if (cost > s.balance) {
      health.waitingForGas++;
      return row;
    }
    const raw = await this.sign(account, { to: row.target as Address, data: row.data as Hex, nonce: row.nonce, gas: row.gas, fees });
    const attempt: SweepAttempt = { hash: keccak256(raw), maxFeePerGas: fees.maxFeePerGas.toString(), maxPriorityFeePerGas: fees.maxPriorityFeePerGas.toString(), block: s.head.toString(), at: Date.now() };
    const attempts = [...row.attempts, attempt];
    await db.update(sweeps).set({ attempts, raw, atFeeCap: false, updatedAt: Date.now() }).where(eq(sweeps.id, row.id));
    const refusal = await this.broadcast(raw);
    logger.info(
      { wallet: row.wallet, receiptId: row.receiptId, nonce: row.nonce.toString(), tx: attempt.hash, maxFeeGwei: gwei(fees.maxFeePerGas), refusal },
      'sweep replaced (same nonce, higher fee)',
    );
    if (refusal === null) this.spend(s, cost);
    if (refusal === 'funds' || refusal === 'underpriced' || refusal === 'fee_below_base') {
      // Refused outright: the transaction sent before is still the one that counts.
      const atCap = refusal === 'fee_below_base' && fees.maxFeePerGas >= this.o.maxFeeWei;
      await db.update(sweeps).set({ attempts: row.attempts, raw: row.raw, atFeeCap: atCap, updatedAt: Date.now() }).where(eq(sweeps.id, row.id));
      if (refusal === 'funds') health.waitingForGas++;
      if (atCap) this.tellAtCap(row, s.baseFee);
      return { ...row, atFeeCap: atCap };
    }
    return { ...row, attempts, raw, atFeeCap: false };
  }

  /** The log says once per receipt that its sweep waits for fees to fall below MAX_FEE_GWEI. */
  private tellAtCap(key: ReceiptKey, baseFee: bigint): void {
    const id = `${key.wallet}\n${key.receiptId}`;
    if (this.toldAtCap.has(id)) return;
    this.toldAtCap.add(id);
    this.o.logger.warn({ wallet: key.wallet, receiptId: key.receiptId, baseFeeGwei: gwei(baseFee), maxFeeGwei: gwei(this.o.maxFeeWei) }, 'sweep waits: fees above MAX_FEE_GWEI');
  }

  /** Sends a new sweep for a receipt, after every check of the module comment. */
  private async sendNew(need: SweepNeed, keeper: NonceKeeper, account: LocalAccount, s: RunState): Promise<'sent' | 'skip' | 'no_gas' | 'fee_cap'> {
    const { db, chain, logger } = this.o;
    const [inFlight] = await db
      .select({ id: sweeps.id })
      .from(sweeps)
      .where(and(eq(sweeps.payAddress, need.payAddress), sweepInFlight(s.scanned)))
      .limit(1);
    if (inFlight !== undefined) return 'skip';
    const fees = firstFees(s.baseFee, s.tip, this.o.maxFeeWei);
    if (fees === null) {
      this.tellAtCap(need, s.baseFee);
      return 'fee_cap';
    }
    if (SWEEP_GAS * fees.maxFeePerGas > s.spendable) return 'no_gas';
    const [addressed] = await db
      .select({ wallet: receipts.wallet, id: receipts.id, payAddress: receipts.payAddress, payFactory: receipts.payFactory, paySplit: receipts.paySplit, createdAt: receipts.createdAt })
      .from(receipts)
      .where(and(eq(receipts.wallet, need.wallet), eq(receipts.id, need.receiptId)));
    if (addressed === undefined) return 'skip';
    // The split the receipt's address commits to: an earlier version's after the merchant made a new one.
    const split = { address: await splitOfReceipt(db, addressed) };
    if (split.address === null) return 'skip';
    const token = need.token ?? chain.usdc.address;
    let sweep: SweepCall;
    try {
      sweep = sweepCall(chain, addressed, split.address, token);
    } catch (err) {
      if (!(err instanceof SweepUnavailable)) throw err;
      // E.g. the merchant's split changed after this address was paid: the sweep would move nothing.
      logger.warn({ wallet: need.wallet, receiptId: need.receiptId, payAddress: need.payAddress, reason: err.reason }, `sweep: ${err.message}; sweep it from the admin app`);
      return 'skip';
    }
    // Read at the block the scan read, which holds the money the settle loop counted: a lagging
    // node's `latest` would show the address empty and skip the sweep for a pass.
    const balance = await this.balanceAt(token, need.payAddress as Address, s.scanned);
    if (balance === 0n) return 'skip';
    const call = sweepTransactionOf(sweep);
    const kind = { target: call.target, token, deploys: !(await this.sweptBefore(need)) };
    const gas = await this.gasLimits.limit(kind, () =>
      fromAnyNode(() => this.rpc(() => chain.publicClient.estimateGas({ account: account.address, to: call.target, data: call.data, blockNumber: s.scanned }))),
    );
    if (gas * fees.maxFeePerGas > s.spendable) return 'no_gas';

    const result = await sendSerially(chain.walletClient!, async () => {
      const nonce = await keeper.reserve(s.latest);
      if (nonce === null) return 'skip' as const;
      const raw = await this.sign(account, { to: call.target, data: call.data, nonce, gas, fees });
      const attempt: SweepAttempt = { hash: keccak256(raw), maxFeePerGas: fees.maxFeePerGas.toString(), maxPriorityFeePerGas: fees.maxPriorityFeePerGas.toString(), block: s.head.toString(), at: Date.now() };
      const now = Date.now();
      const [row] = await db
        .insert(sweeps)
        .values({
          account: keeper.account,
          nonce,
          wallet: need.wallet,
          receiptId: need.receiptId,
          payAddress: need.payAddress.toLowerCase(),
          token: token.toLowerCase(),
          target: call.target.toLowerCase(),
          data: call.data,
          gas,
          amountUnits: balance.toString(),
          state: 'pending',
          attempts: [attempt],
          raw,
          createdAt: now,
          updatedAt: now,
        })
        .onConflictDoNothing()
        .returning({ id: sweeps.id });
      if (row === undefined) {
        await keeper.release(nonce);
        return 'skip' as const;
      }
      const refusal = await this.broadcast(raw);
      if (refusal !== null && refusal !== 'unknown' && refusal !== 'known') {
        // Refused outright: nothing was sent. The nonce goes back unless the chain already used it.
        await db.delete(sweeps).where(eq(sweeps.id, row.id));
        // Used, or taken by a transaction waiting in the pool: the next run reads the chain's count.
        if (refusal === 'nonce_used' || refusal === 'underpriced') this.nonceReadAt = undefined;
        if (refusal !== 'nonce_used' && refusal !== 'underpriced') await keeper.release(nonce);
        logger.warn({ wallet: need.wallet, receiptId: need.receiptId, nonce: nonce.toString(), refusal }, 'sweep refused by the node; tried again next pass');
        return refusal === 'funds' ? ('no_gas' as const) : ('skip' as const);
      }
      if (need.token === undefined) {
        await db
          .update(receiptWatch)
          .set({ sweepTx: attempt.hash, sweepSentAt: now })
          .where(and(eq(receiptWatch.wallet, need.wallet), eq(receiptWatch.receiptId, need.receiptId)));
      }
      // `refusal` 'unknown': the provider failed every send, which the node may still have taken;
      // the sweep is followed as sent and replaced if it stays unmined.
      logger.info({ wallet: need.wallet, receiptId: need.receiptId, tx: attempt.hash, nonce: nonce.toString(), token, amount: balance.toString(), maxFeeGwei: gwei(fees.maxFeePerGas), ...(refusal === null ? {} : { refusal }) }, 'sweep sent');
      return 'sent' as const;
    });
    if (result === 'sent') this.spend(s, gas * fees.maxFeePerGas);
    return result;
  }

  /** Whether a sweep already moved the receipt's money out of its address (so its forwarder is deployed). */
  private async sweptBefore(key: ReceiptKey): Promise<boolean> {
    const [row] = await this.o.db
      .select({ one: sql<number>`1` })
      .from(receiptTransfers)
      .where(and(eq(receiptTransfers.wallet, key.wallet), eq(receiptTransfers.receiptId, key.receiptId), eq(receiptTransfers.kind, 'sweep')))
      .limit(1);
    return row !== undefined;
  }

  /** The token balance at an address at a block (src/chain/lagging-nodes.ts); the zero address means native ETH. */
  private async balanceAt(token: Address, holder: Address, blockNumber: bigint): Promise<bigint> {
    const { publicClient } = this.o.chain;
    if (token === zeroAddress) return fromAnyNode(() => this.rpc(() => publicClient.getBalance({ address: holder, blockNumber })));
    return fromAnyNode(() => this.rpc(() => publicClient.readContract({ address: token, abi: erc20Abi, functionName: 'balanceOf', args: [holder], blockNumber })));
  }

  private sign(account: LocalAccount, p: { to: Address; data: Hex; nonce: bigint; gas: bigint; fees: Fees }): Promise<Hex> {
    return account.signTransaction({
      type: 'eip1559',
      chainId: this.o.chain.chainId,
      to: p.to,
      data: p.data,
      value: 0n,
      nonce: Number(p.nonce),
      gas: p.gas,
      maxFeePerGas: p.fees.maxFeePerGas,
      maxPriorityFeePerGas: p.fees.maxPriorityFeePerGas,
    });
  }

  /** Sends a signed sweep (again after a provider's failure or rate limit): null when the node took it. */
  private async broadcast(raw: Hex): Promise<Refusal | null> {
    this.sent++;
    return (await sendSigned(this.o.chain.publicClient, raw, () => this.calls++)).refusal;
  }
}

/** Every sweep sent for an address, oldest first. */
export async function sweepsOf(db: Db, payAddress: string): Promise<SweepRow[]> {
  return db.select().from(sweeps).where(eq(sweeps.payAddress, payAddress.toLowerCase())).orderBy(asc(sweeps.id));
}

/** The merchant's view of sweeps for the admin app: the service's facts and their own receipts waiting. */
export interface SweepStatus extends SweepHealth {
  /** When the chain worker last published them; null before its first run. */
  updatedAt: number | null;
  /** This merchant's receipts whose sweep waits at the fee cap. */
  receiptsAtFeeCap: string[];
}

export async function sweepStatus(db: Db, wallet: string): Promise<SweepStatus> {
  const [row] = await db.select().from(chainStatus).where(eq(chainStatus.name, SWEEP_STATUS));
  const atCap = await db
    .select({ receiptId: sweeps.receiptId })
    .from(sweeps)
    .where(and(eq(sweeps.wallet, wallet), eq(sweeps.state, 'pending'), eq(sweeps.atFeeCap, true)))
    .limit(100);
  const facts = (row?.data as SweepHealth | undefined) ?? { waitingForGas: 0, atFeeCap: 0, deployerBalanceWei: null, deployerLow: false };
  return { ...facts, updatedAt: row?.updatedAt ?? null, receiptsAtFeeCap: atCap.map((r) => r.receiptId) };
}
