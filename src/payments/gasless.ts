/**
 * Gasless payments (DESIGN.md "Gasless payments"): a buyer who holds the token but no ETH signs an
 * EIP-3009 TransferWithAuthorization to the receipt's payment address, and the service submits it
 * through the version-2 factory's payAndSweep, which moves the money there and sweeps it into the
 * split in one transaction, the service's key paying the gas.
 *
 * Nothing here attributes money: the transfer is an ordinary transfer into the payment address,
 * found by the chain worker like any other. The checks only keep the service from paying gas for
 * an authorization that cannot work or that pays the wrong amount: `to` is the receipt's payTo
 * (the signature is checked against it), `value` is exactly what is due, the validity window is
 * open now and closes no later than an hour past the receipt's expiry, `from` signed it and holds
 * the value, and the nonce is unused. Whoever submits the same authorization first only pays its
 * gas: the money can only reach the payment address and then the split.
 */
import { erc20Abi, getAddress, verifyTypedData, type Hex } from 'viem';
import { eq } from 'drizzle-orm';
import type { ChainDeps } from '../chain/client.ts';
import { eip3009Abi, signatureParts, tokenDomain, TRANSFER_WITH_AUTHORIZATION_TYPES } from '../chain/eip3009.ts';
import { paymentForwarderFactoryV2Abi } from '../chain/payment-address.ts';
import { sendSerially } from '../chain/wallet-queue.ts';
import type { Db } from '../db/client.ts';
import { splitConfigs } from '../db/schema.ts';
import { AppError, Conflict, InvalidInput } from '../domain/errors.ts';
import { sweepCall, SweepUnavailable } from './pay-address.ts';
import type { ReceiptRow } from './quote.ts';
import { amountOf } from './settle.ts';
import { dueOf, isAwaitingMoney, type ReceiptStatus } from './states.ts';

export interface AuthorizationInput {
  from: string;
  value: string;
  validAfter: number;
  validBefore: number;
  nonce: string;
  signature: string;
}

/** validBefore may be at most this long after the receipt's expiry (seconds). */
export const AFTER_EXPIRY_S = 3600;
/** validBefore must leave at least this long for the relay to be mined (seconds). */
export const MIN_WINDOW_S = 60;

/** The token's EIP-712 domain, read once per token and process (name and version never change). */
const domains = new Map<string, Awaited<ReturnType<typeof tokenDomain>> | null>();

async function domainOf(chain: ChainDeps): Promise<Awaited<ReturnType<typeof tokenDomain>> | null> {
  const key = `${chain.chainId}:${chain.usdc.address.toLowerCase()}`;
  if (!domains.has(key)) {
    const domain = await tokenDomain(chain.publicClient, chain.usdc.address).catch(() => null);
    // A token without EIP-3009's domain functions: remembered as such.
    domains.set(key, domain);
  }
  return domains.get(key) ?? null;
}

/** Whether the service can relay for this receipt: a key pays gas, the token has an EIP-712 domain, the address is version 2. */
export async function canRelay(chain: ChainDeps, row: Pick<ReceiptRow, 'payAddress' | 'payFactory'>): Promise<boolean> {
  return chain.walletClient !== undefined && row.payAddress !== null && row.payFactory !== null && (await domainOf(chain)) !== null;
}

/** Checks an authorization for a receipt and submits it with payAndSweep. Returns the transaction hash. */
export async function relayAuthorization(db: Db, chain: ChainDeps, row: ReceiptRow, input: AuthorizationInput, now: number): Promise<Hex> {
  const walletClient = chain.walletClient;
  if (walletClient === undefined) throw new AppError(503, 'relay_unavailable', 'This deployment has no key to pay the gas of gasless payments; pay with a token transfer');
  if (row.payAddress === null) throw new Conflict('This receipt has no payment address yet', 'not_payable');
  if (row.payFactory === null) {
    throw new Conflict("This receipt's payment address was made before gasless payments existed; pay with a token transfer", 'gasless_unavailable');
  }
  const domain = await domainOf(chain);
  if (domain === null) throw new Conflict(`The token ${chain.usdc.address} does not support EIP-3009 authorizations; pay with a token transfer`, 'gasless_unavailable');
  const status = row.status as ReceiptStatus;
  const due = dueOf(amountOf(row, chain.usdc.decimals), BigInt(row.paidUnits));
  if (!isAwaitingMoney(status) && status !== 'tx_mismatch') throw new Conflict(`This receipt is ${status}: nothing to pay`, 'nothing_due');
  if (due === 0n) throw new Conflict('Nothing is due on this receipt', 'nothing_due');

  const from = getAddress(input.from);
  const value = BigInt(input.value);
  if (value !== due) throw new InvalidInput(`value must be what is due: ${due} base units`);
  const nowS = Math.floor(now / 1000);
  if (input.validAfter >= nowS) throw new InvalidInput('validAfter must be in the past');
  if (input.validBefore < nowS + MIN_WINDOW_S) throw new InvalidInput(`validBefore must be at least ${MIN_WINDOW_S} s from now`);
  const latest = Math.floor(row.expiresAt / 1000) + AFTER_EXPIRY_S;
  if (input.validBefore > latest) throw new InvalidInput(`validBefore must be no later than an hour past the receipt's expiry (${latest})`);

  const payTo = getAddress(row.payAddress);
  const message = { from, to: payTo, value, validAfter: BigInt(input.validAfter), validBefore: BigInt(input.validBefore), nonce: input.nonce as Hex };
  const signature = input.signature as Hex;
  const valid = await verifyTypedData({ address: from, domain, types: TRANSFER_WITH_AUTHORIZATION_TYPES, primaryType: 'TransferWithAuthorization', message, signature }).catch(() => false);
  if (!valid) throw new InvalidInput('signature does not recover `from` for a transfer of `value` to this receipt’s payment address', 'invalid_signature');

  const [balance, used] = await Promise.all([
    chain.publicClient.readContract({ address: chain.usdc.address, abi: erc20Abi, functionName: 'balanceOf', args: [from] }),
    chain.publicClient.readContract({ address: chain.usdc.address, abi: eip3009Abi, functionName: 'authorizationState', args: [from, message.nonce] }),
  ]);
  if (used) throw new Conflict('This authorization was used or canceled already', 'authorization_used');
  if (balance < value) throw new InvalidInput(`from holds ${balance} base units, less than the ${value} due`, 'insufficient_balance');

  const [split] = await db.select({ address: splitConfigs.address }).from(splitConfigs).where(eq(splitConfigs.wallet, row.wallet));
  let call;
  try {
    if (split?.address == null) throw new SweepUnavailable('no_address', 'The merchant has no split');
    call = sweepCall(chain, row, split.address, chain.usdc.address);
  } catch (err) {
    if (err instanceof SweepUnavailable) throw new Conflict(err.message, 'gasless_unavailable');
    throw err;
  }
  const [splitAddress, salt, token] = call.args;
  const { v, r, s } = signatureParts(signature);
  const auth = { from, value, validAfter: message.validAfter, validBefore: message.validBefore, nonce: message.nonce, v, r, s };
  try {
    // writeContract estimates first: an authorization the token refuses costs no gas.
    return await sendSerially(walletClient, () =>
      walletClient.writeContract({ address: call.factory, abi: paymentForwarderFactoryV2Abi, functionName: 'payAndSweep', args: [splitAddress, salt, token, auth] }),
    );
  } catch (err) {
    throw new Conflict(`The token refused the authorization: ${shortReason(err)}`, 'relay_refused');
  }
}

function shortReason(err: unknown): string {
  const e = err as { shortMessage?: string; message?: string };
  return (e.shortMessage ?? e.message ?? String(err)).split('\n')[0]!.slice(0, 200);
}
