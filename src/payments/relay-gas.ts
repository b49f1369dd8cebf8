/**
 * The gas the service spends on gasless payments (DESIGN.md "Gasless payments": the deployer pays
 * the gas of each relayed authorization). POST /api/pay/<id>/authorization hands each relayed
 * transaction's hash to the meter, which waits for its receipt and adds its gas and fee to totals
 * kept in the database (chain_status, name `relay_gas`), shared by every instance and kept across
 * restarts; /healthz shows them to operators.
 *
 * Each relay is counted once, by the instance that submitted it, when its receipt arrives (a
 * reverted relay costs gas too, and is counted apart as well). A relay still unmined when its
 * instance stops, or after RECEIPT_WAIT_MS, is not counted: the totals are what was seen spent,
 * never more.
 */
import { eq, sql } from 'drizzle-orm';
import type { Logger } from 'pino';
import type { Hex, TransactionReceipt } from 'viem';
import type { ChainDeps } from '../chain/client.ts';
import type { Db } from '../db/client.ts';
import { chainStatus } from '../db/schema.ts';

export const RELAY_GAS = 'relay_gas';
/** How long the meter waits for a relayed transaction's receipt. */
const RECEIPT_WAIT_MS = 10 * 60_000;
const POLL_MS = 1_000;

/** What relaying has cost the service so far: gas units and wei as decimal strings. */
export interface RelayGasTotals {
  /** Relayed transactions mined (reverted ones included). */
  relays: number;
  /** Of those, how many reverted (their gas was spent all the same). */
  reverted: number;
  gasUsed: string;
  weiSpent: string;
}

export const NO_RELAYS: RelayGasTotals = { relays: 0, reverted: 0, gasUsed: '0', weiSpent: '0' };

/** Adds one mined relay to the totals, in one statement (instances add at the same time). */
export async function addRelayGas(db: Db, receipt: Pick<TransactionReceipt, 'gasUsed' | 'effectiveGasPrice' | 'status'>, now: number): Promise<void> {
  const gas = receipt.gasUsed.toString();
  const wei = (receipt.gasUsed * receipt.effectiveGasPrice).toString();
  const reverted = receipt.status === 'success' ? 0 : 1;
  const first = JSON.stringify({ relays: 1, reverted, gasUsed: gas, weiSpent: wei });
  await db.execute(sql`
    insert into chain_status (name, data, updated_at) values (${RELAY_GAS}, ${first}::jsonb, ${now})
    on conflict (name) do update set
      data = jsonb_build_object(
        'relays', (chain_status.data->>'relays')::bigint + 1,
        'reverted', (chain_status.data->>'reverted')::bigint + ${reverted}::bigint,
        'gasUsed', ((chain_status.data->>'gasUsed')::numeric + ${gas}::numeric)::text,
        'weiSpent', ((chain_status.data->>'weiSpent')::numeric + ${wei}::numeric)::text
      ),
      updated_at = ${now}`);
}

export async function relayGasTotals(db: Db): Promise<RelayGasTotals> {
  const [row] = await db.select({ data: chainStatus.data }).from(chainStatus).where(eq(chainStatus.name, RELAY_GAS));
  const d = row?.data as Partial<RelayGasTotals> | undefined;
  if (d === undefined) return NO_RELAYS;
  return { relays: Number(d.relays ?? 0), reverted: Number(d.reverted ?? 0), gasUsed: String(d.gasUsed ?? '0'), weiSpent: String(d.weiSpent ?? '0') };
}

/** Follows relayed transactions to their receipts and adds their gas to the totals. */
export class RelayGasMeter {
  private readonly following = new Set<Promise<void>>();
  private stopped = false;
  private wake: () => void = () => {};
  private readonly stopping = new Promise<void>((resolve) => (this.wake = resolve));

  constructor(private readonly o: { db: Db; chain: ChainDeps; logger: Logger; waitMs?: number; pollMs?: number }) {}

  /** What relays have cost so far, over every instance (relayGasTotals). */
  totals(): Promise<RelayGasTotals> {
    return relayGasTotals(this.o.db);
  }

  /** Starts following `hash`; returns at once. */
  follow(hash: Hex): void {
    if (this.stopped) return;
    const done: Promise<void> = this.count(hash)
      .catch((err: unknown) => this.o.logger.warn({ err, hash }, 'the gas of a relayed gasless payment was not recorded'))
      .finally(() => this.following.delete(done));
    this.following.add(done);
  }

  /** Resolves once every relay followed so far is counted or given up (tests and the bench wait on it). */
  async settled(): Promise<void> {
    while (this.following.size > 0) await Promise.allSettled([...this.following]);
  }

  /** Stops following (what is unmined is not counted) and waits for records under way. */
  async close(): Promise<void> {
    this.stopped = true;
    this.wake();
    await this.settled();
  }

  private async count(hash: Hex): Promise<void> {
    const receipt = await this.receiptOf(hash);
    if (receipt === null) {
      if (!this.stopped) this.o.logger.warn({ hash }, 'a relayed gasless payment was not mined in time; its gas is not counted');
      return;
    }
    await addRelayGas(this.o.db, receipt, Date.now());
  }

  private async receiptOf(hash: Hex): Promise<TransactionReceipt | null> {
    const until = Date.now() + (this.o.waitMs ?? RECEIPT_WAIT_MS);
    while (!this.stopped && Date.now() < until) {
      // Not mined yet, or a node hiccup: asked again shortly.
      const receipt = await this.o.chain.publicClient.getTransactionReceipt({ hash }).catch(() => null);
      if (receipt !== null) return receipt;
      await Promise.race([new Promise((resolve) => setTimeout(resolve, this.o.pollMs ?? POLL_MS).unref()), this.stopping]);
    }
    return null;
  }
}
