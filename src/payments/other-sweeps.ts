/**
 * ETH and other tokens at payment addresses reach the split without the merchant (DESIGN.md "Only
 * the receipt's token is money", "A real chain" → Sweeps). src/payments/other-money.ts finds them
 * by balance (a payment page opening, a hint, before expiry) and records them in
 * receipts.other_money; this module decides, once per worker pass, which of them the sweeper
 * (src/payments/sweeper.ts) sweeps, which keeps every sweep rule: balance read before the send, one
 * sweep in flight per address, the nonce from the keeper, replacement when stuck, reorg-safe rows
 * in the sweeps table.
 *
 * Which: a receipt whose address held other money when its balances were last read, and that no
 * sweep of that token was sent for since that read. Native ETH needs a version-2 address
 * (receipts.pay_factory set); a version-1 forwarder sweeps ERC-20 only, so its ETH stays (the admin
 * app says so). Each candidate costs one balance read; a balance found empty or too small is not
 * read again until the address's balances are read again (or OTHER_RECHECK_MS passed, for fees
 * that fell), so dust waiting at hundreds of addresses costs no pass anything.
 *
 * Worth a sweep (the dust rule):
 *   - ETH: more than ETH_SWEEP_GAS_MULTIPLE times what its sweep costs at today's fees
 *     (OTHER_SWEEP_GAS × (2 × base fee + tip), the most a first send offers): less waits at the
 *     address, safe, until more arrives or fees fall.
 *   - A BALANCE_TOKENS token: valued as one US dollar per whole token (the list is of dollar
 *     stablecoins: USDT, DAI), swept from SWEEP_DUST_USD on, as the receipt's own token is.
 */
import { and, asc, isNotNull, sql } from 'drizzle-orm';
import { erc20Abi, getAddress } from 'viem';
import type { Logger } from 'pino';
import type { ChainDeps } from '../chain/client.ts';
import { fromAnyNode } from '../chain/lagging-nodes.ts';
import { NATIVE_TOKEN } from '../chain/payment-address.ts';
import type { Db } from '../db/client.ts';
import { receipts, sweeps } from '../db/schema.ts';
import type { SweepNeed } from './sweeper.ts';

/** ETH is swept only when it is worth more than this many times its sweep's gas. */
export const ETH_SWEEP_GAS_MULTIPLE = 10n;
/** Gas of an other-money sweep for the dust rule (a first sweep that deploys the forwarder costs about this). */
export const OTHER_SWEEP_GAS = 150_000n;
/** Balances read for other-money sweeps per pass at most. */
export const OTHER_SWEEPS_PER_PASS = 20;
/** Addresses with other money unswept looked at per pass at most (those waiting as dust cost no call). */
const CANDIDATES_PER_PASS = 1_000;
/** A balance found too small (or empty) is read again after this long even without a new balance check. */
export const OTHER_RECHECK_MS = 10 * 60_000;
/** A tip when the node suggests none. */
const FALLBACK_TIP = 10n ** 6n;

export interface OtherSweepOptions {
  db: Db;
  chain: ChainDeps;
  logger: Logger;
  /** SWEEP_DUST_USD in cents. */
  dustCents: number;
}

export class OtherSweeps {
  /** `payAddress token` → the balances_checked_at at which its balance was found not worth a sweep, and when. */
  private readonly waiting = new Map<string, { checkedAt: number; at: number }>();
  private readonly decimals = new Map<string, number>();
  /** RPC calls of the last needs(). */
  lastRpcCalls = 0;

  constructor(private readonly o: OtherSweepOptions) {}

  /**
   * The other-money sweeps owed now, each worth its gas and its balance read just now at `block`
   * (the newest head any node named: pinned, so a lagging node is asked again rather than showing
   * an older balance that would wait OTHER_RECHECK_MS as dust). `baseFee` is that pass's header's.
   */
  async needs({ now, block, baseFee }: { now: number; block: bigint; baseFee?: bigint }): Promise<SweepNeed[]> {
    const { db, chain } = this.o;
    this.lastRpcCalls = 0;
    const own = chain.usdc.address.toLowerCase();
    // Addresses holding a token that no sweep was sent for since their balances were last read.
    const rows = await db
      .select({ wallet: receipts.wallet, receiptId: receipts.id, payAddress: receipts.payAddress, payFactory: receipts.payFactory, otherMoney: receipts.otherMoney, checkedAt: receipts.balancesCheckedAt })
      .from(receipts)
      .where(
        and(
          isNotNull(receipts.otherMoney),
          isNotNull(receipts.payAddress),
          isNotNull(receipts.balancesCheckedAt),
          sql`exists (select 1 from jsonb_each_text(${receipts.otherMoney}) e(k, v)
                where e.v <> '0' and e.k <> ${own} and not (e.k = ${NATIVE_TOKEN} and ${receipts.payFactory} is null)
                  and not exists (select 1 from ${sweeps} s where s.pay_address = ${receipts.payAddress} and s.token = e.k and s.created_at >= ${receipts.balancesCheckedAt}))`,
        ),
      )
      .orderBy(asc(receipts.balancesCheckedAt))
      .limit(CANDIDATES_PER_PASS);
    const swept = await this.sweptSince(rows);
    const out: SweepNeed[] = [];
    let ethFloor: bigint | undefined;
    let reads = 0;
    for (const r of rows) {
      const payAddress = r.payAddress!;
      for (const [token, seen] of Object.entries(r.otherMoney ?? {})) {
        if (seen === '0' || token === own) continue;
        const native = token === NATIVE_TOKEN;
        // A version-1 forwarder cannot sweep ETH.
        if (native && r.payFactory === null) continue;
        const key = `${payAddress} ${token}`;
        if ((swept.get(key) ?? -1) >= r.checkedAt!) continue;
        const waited = this.waiting.get(key);
        if (waited !== undefined && waited.checkedAt === r.checkedAt && now - waited.at < OTHER_RECHECK_MS) continue;
        if (reads++ >= OTHER_SWEEPS_PER_PASS) return out;
        try {
          const balance = await this.balanceAt(token, payAddress, block);
          let worth: boolean;
          if (native) {
            ethFloor ??= await this.ethFloor(baseFee);
            worth = balance > ethFloor;
          } else {
            worth = balance > 0n && (balance * 100n) / 10n ** BigInt(await this.decimalsOf(token)) >= BigInt(this.o.dustCents);
          }
          if (!worth) {
            this.waiting.set(key, { checkedAt: r.checkedAt!, at: now });
            if (balance > 0n) this.o.logger.info({ wallet: r.wallet, receiptId: r.receiptId, token, balance: balance.toString() }, 'other money at a payment address waits: worth less than its sweep');
            continue;
          }
          this.waiting.delete(key);
          out.push({ wallet: r.wallet, receiptId: r.receiptId, payAddress, unswept: balance, token: getAddress(token) });
        } catch (err) {
          this.o.logger.warn({ err, wallet: r.wallet, receiptId: r.receiptId, token }, 'other money: reading a balance for its sweep failed; tried again next pass');
        }
      }
    }
    return out;
  }

  /** When the newest sweep of each (address, other token) of these receipts was sent. */
  private async sweptSince(rows: readonly { payAddress: string | null }[]): Promise<Map<string, number>> {
    const out = new Map<string, number>();
    const addresses = [...new Set(rows.map((r) => r.payAddress!))];
    if (addresses.length === 0) return out;
    const found = await this.o.db
      .select({ payAddress: sweeps.payAddress, token: sweeps.token, at: sql<number>`max(${sweeps.createdAt})` })
      .from(sweeps)
      .where(sql`${sweeps.payAddress} in (select value from json_array_elements_text(${JSON.stringify(addresses)}::json))`)
      .groupBy(sweeps.payAddress, sweeps.token);
    for (const f of found) out.set(`${f.payAddress} ${f.token}`, Number(f.at));
    return out;
  }

  /** Wei an ETH balance must exceed to be swept: ETH_SWEEP_GAS_MULTIPLE × OTHER_SWEEP_GAS × (2 × base fee + tip). */
  private async ethFloor(knownBaseFee: bigint | undefined): Promise<bigint> {
    const { publicClient } = this.o.chain;
    const baseFee = async () => {
      this.lastRpcCalls++;
      return (await publicClient.getBlock({ blockTag: 'latest' })).baseFeePerGas ?? 0n;
    };
    this.lastRpcCalls++;
    const [base, tip] = await Promise.all([knownBaseFee ?? baseFee(), publicClient.estimateMaxPriorityFeePerGas().catch(() => FALLBACK_TIP)]);
    return ETH_SWEEP_GAS_MULTIPLE * OTHER_SWEEP_GAS * (2n * base + tip);
  }

  private async balanceAt(token: string, holder: string, blockNumber: bigint): Promise<bigint> {
    const { publicClient } = this.o.chain;
    this.lastRpcCalls++;
    const address = getAddress(holder);
    if (token === NATIVE_TOKEN) return fromAnyNode(() => publicClient.getBalance({ address, blockNumber }));
    return fromAnyNode(() => publicClient.readContract({ address: getAddress(token), abi: erc20Abi, functionName: 'balanceOf', args: [address], blockNumber }));
  }

  private async decimalsOf(token: string): Promise<number> {
    let d = this.decimals.get(token);
    if (d === undefined) {
      this.lastRpcCalls++;
      d = await this.o.chain.publicClient.readContract({ address: getAddress(token), abi: erc20Abi, functionName: 'decimals' });
      this.decimals.set(token, d);
    }
    return d;
  }
}
