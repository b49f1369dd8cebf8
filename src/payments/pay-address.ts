/**
 * Receipts' payment addresses. An address is derived from the merchant, the receipt id, the
 * merchant's split and the chain's forwarder factory alone (src/chain/payment-address.ts), so it
 * is the same whichever instance or attempt created the receipt, and a replayed journal entry gets
 * the one its payment page already showed.
 *
 * The chain worker stores each receipt's address once the merchant's split is known (receipts of
 * an earlier version, journaled during an outage, or created before the split), before it reads
 * any block: a transfer into an address can only be matched once the address is stored.
 *
 * With the address it stores the factory the address commits to (receipts.pay_factory): the
 * version-2 factory for every address stored since versions exist. A receipt stored before keeps
 * its version-1 address (pay_factory null) and is swept through the version-1 factory
 * (PAYMENT_FACTORY_V1_ADDRESS, by default the one at its fixed CREATE2 address). sweepCall() is
 * the one place that turns a receipt into the factory call that sweeps it.
 *
 * Money that reached an address before it was stored is looked for once, right after
 * (src/payments/early-money.ts).
 */
import { and, desc, eq, lte, sql } from 'drizzle-orm';
import { getAddress, type Address, type Hex } from 'viem';
import type { ChainDeps } from '../chain/client.ts';
import { NATIVE_TOKEN, paymentForwarderFactoryAbi, paymentSalt, predictPaymentAddress, type FactoryVersion } from '../chain/payment-address.ts';
import type { Tx } from '../db/client.ts';
import { rowsOf } from '../db/rows.ts';
import { chainCursors, receipts, splitConfigs, splitVersions } from '../db/schema.ts';
import { CURSOR } from './scanner.ts';

const BATCH = 2000;

/** The payment address of a merchant's receipt, for a split and factory. */
export function payAddressOf(p: { factory: Address; split: string; wallet: string; receiptId: string }): string {
  return predictPaymentAddress({ factory: p.factory, split: p.split as Address, salt: paymentSalt(p.wallet, p.receiptId) });
}

/**
 * The split a receipt pays into: the one its stored address commits to, else the version in
 * effect when it was created (the latest whose startsAt is not after its creation; version 1
 * starts at 0). Null while that version has no contract.
 */
export async function splitOfReceipt(db: Tx, row: { wallet: string; createdAt: number; paySplit: string | null }): Promise<string | null> {
  if (row.paySplit !== null) return row.paySplit;
  const [v] = await db
    .select({ address: splitVersions.address })
    .from(splitVersions)
    .where(and(eq(splitVersions.wallet, row.wallet), lte(splitVersions.startsAt, row.createdAt)))
    .orderBy(desc(splitVersions.version))
    .limit(1);
  return v?.address ?? null;
}

/**
 * Stores the payment address of every receipt whose merchant has a split, committed to the split
 * version in effect when the receipt was created, and that split (pay_split), with the scanner's
 * cursor at that moment (pay_address_block: early money can only have come up to it, since the
 * scanner records transfers into the address from the next block on). Returns how many.
 */
export async function fillPayAddresses(db: Tx, factory: Address): Promise<number> {
  let filled = 0;
  for (;;) {
    // Driven from the merchants that have a split, each probing its own unaddressed receipts
    // (receipts_unaddressed_idx): receipts of merchants without a split cost nothing here.
    const rows = (await db.execute(sql`select r.wallet, r.id, v.address as split
      from ${splitConfigs} s
      cross join lateral (
        select ${receipts}.wallet, ${receipts}.id, ${receipts}.created_at from ${receipts}
        where ${receipts}.wallet = s.wallet and ${receipts}.pay_address is null
        limit ${BATCH}
      ) r
      cross join lateral (
        select ${splitVersions}.address from ${splitVersions}
        where ${splitVersions}.wallet = r.wallet and ${splitVersions}.starts_at <= r.created_at
        order by ${splitVersions}.version desc limit 1
      ) v
      where s.address is not null and v.address is not null
      limit ${BATCH}`).then(rowsOf)) as { wallet: string; id: string; split: string }[];
    if (rows.length === 0) return filled;
    const values = rows.map((r) => ({ w: r.wallet, i: r.id, s: r.split.toLowerCase(), a: payAddressOf({ factory, split: r.split, wallet: r.wallet, receiptId: r.id }) }));
    await db.execute(sql`update ${receipts} set pay_address = v.a, pay_factory = ${factory.toLowerCase()}, pay_split = v.s,
        pay_address_block = (select ${chainCursors.block} from ${chainCursors} where ${chainCursors.name} = ${CURSOR})
      from json_to_recordset(${JSON.stringify(values)}::json) as v(w text, i text, a text, s text)
      where ${receipts}.wallet = v.w and ${receipts}.id = v.i`);
    filled += rows.length;
    if (rows.length < BATCH) return filled;
  }
}

/** Forgets the addresses into `split` of a merchant's receipts that received nothing (the split was replaced). */
export async function forgetUnpaidPayAddresses(db: Tx, wallet: string, split: string): Promise<void> {
  await db.execute(sql`update ${receipts} set pay_address = null, pay_factory = null, pay_split = null, pay_address_block = null, early_money_checked_at = null
    where wallet = ${wallet} and paid_units = '0' and coalesce(pay_split, ${split.toLowerCase()}) = ${split.toLowerCase()}`);
}

/** The factories a deployment knows: the current (version 2) one and the version-1 one of older receipts. */
export type PaymentFactories = Pick<ChainDeps, 'paymentFactory' | 'paymentFactoryV1'>;

/** What a receipt needs for sweepCall: its stored payment address and the factory it commits to. */
export interface AddressedReceipt {
  wallet: string;
  id: string;
  payAddress: string | null;
  payFactory: string | null;
}

/**
 * A factory call that sweeps one receipt's payment address: for walletClient.writeContract /
 * simulateContract ({address: factory, abi, functionName, args}) or encodeFunctionData. Both
 * versions' sweep(split, salt, token) share this ABI entry; version 2 takes NATIVE_TOKEN for ETH.
 */
export interface SweepCall {
  factory: Address;
  version: FactoryVersion;
  /** The payment address the call sweeps (checked: the factory, split and salt give exactly it). */
  payTo: Address;
  abi: typeof paymentForwarderFactoryAbi;
  functionName: 'sweep';
  args: readonly [split: Address, salt: Hex, token: Address];
}

/** Why a receipt's payment address cannot be swept (yet, or by this call). */
export class SweepUnavailable extends Error {
  constructor(
    readonly reason: 'no_address' | 'no_factory' | 'native_v1' | 'address_mismatch',
    message: string,
  ) {
    super(message);
    this.name = 'SweepUnavailable';
  }
}

/** The factory a receipt's stored payment address commits to, and its version. */
export function factoryOf(chain: PaymentFactories, receipt: AddressedReceipt): { factory: Address | undefined; version: FactoryVersion } {
  if (receipt.payFactory !== null) return { factory: getAddress(receipt.payFactory), version: 2 };
  return { factory: chain.paymentFactoryV1, version: 1 };
}

/**
 * The sweep of `token` (NATIVE_TOKEN or 'native' for ETH) at a receipt's payment address into
 * `split`, through the factory its address commits to. Throws SweepUnavailable when the receipt
 * has no stored address, its factory is unknown here, ETH is asked of a version-1 address, or the
 * factory, split and salt do not give the stored address (a wrong PAYMENT_FACTORY_V1_ADDRESS or
 * split): a sweep that would move nothing is never built.
 */
export function sweepCall(chain: PaymentFactories, receipt: AddressedReceipt, split: string, token: Address | 'native'): SweepCall {
  if (receipt.payAddress === null) throw new SweepUnavailable('no_address', `Receipt ${receipt.id} has no payment address yet (the split is not deployed)`);
  const { factory, version } = factoryOf(chain, receipt);
  const tokenAddress = token === 'native' ? NATIVE_TOKEN : getAddress(token);
  if (factory === undefined) {
    throw new SweepUnavailable(
      'no_factory',
      `Receipt ${receipt.id}'s payment address was made by a version-1 forwarder factory, and none is known here: set PAYMENT_FACTORY_V1_ADDRESS`,
    );
  }
  if (version === 1 && tokenAddress === NATIVE_TOKEN) {
    throw new SweepUnavailable(
      'native_v1',
      `Receipt ${receipt.id}'s payment address is a version-1 forwarder, which sweeps ERC-20 tokens only: ETH sent there cannot be swept`,
    );
  }
  const salt = paymentSalt(receipt.wallet, receipt.id);
  const payTo = predictPaymentAddress({ factory, split: getAddress(split), salt });
  if (payTo !== receipt.payAddress.toLowerCase()) {
    throw new SweepUnavailable(
      'address_mismatch',
      `Receipt ${receipt.id}'s payment address ${receipt.payAddress} is not the one factory ${factory} makes for split ${split}` +
        (version === 1 ? ' (check PAYMENT_FACTORY_V1_ADDRESS)' : ''),
    );
  }
  return { factory, version, payTo: getAddress(payTo), abi: paymentForwarderFactoryAbi, functionName: 'sweep', args: [getAddress(split), salt, tokenAddress] };
}
