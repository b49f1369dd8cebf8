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
import { encodeFunctionData, erc20Abi, getAddress, verifyTypedData, type Hex } from 'viem';
import { eq } from 'drizzle-orm';
import type { ChainDeps } from '../chain/client.ts';
import { isContractRefusal } from '../chain/errors.ts';
import { eip3009Abi, signatureParts, tokenDomain, TRANSFER_WITH_AUTHORIZATION_TYPES } from '../chain/eip3009.ts';
import { paymentForwarderFactoryV2Abi } from '../chain/payment-address.ts';
import { Deployer, type SignedTx } from '../chain/deployer.ts';
import type { Db } from '../db/client.ts';
import { sweeps } from '../db/schema.ts';
import { AppError, Conflict, InvalidInput } from '../lib/errors.ts';
import { splitOfReceipt, sweepCall, SweepUnavailable } from './pay-address.ts';
import type { ReceiptRow } from './quote.ts';
import { amountOf } from './settle.ts';
import { dueOf, isAwaitingMoney } from '../domain/receipt-states.ts';

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

type TokenDomain = Awaited<ReturnType<typeof tokenDomain>>;

/**
 * The tokens' EIP-712 domains, read once per token by each app (built in src/deps.ts): name and
 * version never change.
 */
export class TokenDomains {
  readonly #known = new Map<string, TokenDomain | null>();

  /**
   * The chain token's EIP-712 domain, or null when the token has none (no EIP-3009). A node that
   * does not answer is not remembered: the next call asks again, so a hiccup never turns gasless
   * payments off for the life of the app.
   */
  async of(chain: ChainDeps): Promise<TokenDomain | null> {
    const key = `${chain.chainId}:${chain.usdc.address.toLowerCase()}`;
    if (!this.#known.has(key)) {
      try {
        this.#known.set(key, await tokenDomain(chain.publicClient, chain.usdc.address));
      } catch (err) {
        // A token without EIP-3009's domain functions: remembered as such.
        if (!isContractRefusal(err)) throw err;
        this.#known.set(key, null);
      }
    }
    return this.#known.get(key) ?? null;
  }
}

/** Whether the service can relay for this receipt: a key pays gas, the token has an EIP-712 domain, the address is version 2. */
export async function canRelay(chain: ChainDeps, domains: TokenDomains, row: Pick<ReceiptRow, 'payAddress' | 'payFactory'>): Promise<boolean> {
  return (await gaslessDomain(chain, domains, row)) !== null;
}

/**
 * What the payment page needs to offer "Pay without gas" (payment.gasless): the token's EIP-712
 * domain name and version, read from the token, when the service can relay for this receipt;
 * null when it cannot, or when the node does not answer now (the page asks again soon).
 */
export async function gaslessDomain(chain: ChainDeps, domains: TokenDomains, row: Pick<ReceiptRow, 'payAddress' | 'payFactory'>): Promise<{ name: string; version: string } | null> {
  if (chain.walletClient === undefined || row.payAddress === null || row.payFactory === null) return null;
  const domain = await domains.of(chain).catch(() => null);
  return domain === null ? null : { name: domain.name, version: domain.version };
}

/**
 * Checks an authorization for a receipt and submits it with payAndSweep. Returns the transaction
 * hash. `relay`: the app's token domains (deps.tokenDomains), and the deployer that sends with the
 * service's nonce keeper (deps.deployer); without one, one is made on `db`.
 */
export async function relayAuthorization(
  db: Db,
  chain: ChainDeps,
  row: ReceiptRow,
  input: AuthorizationInput,
  now: number,
  relay: { domains: TokenDomains; deployer?: Deployer | undefined },
): Promise<Hex> {
  const { domains, deployer } = relay;
  const walletClient = chain.walletClient;
  if (walletClient === undefined) throw new AppError(503, 'relay_unavailable', 'This deployment has no key to pay the gas of gasless payments; pay with a token transfer');
  if (row.payAddress === null) throw new Conflict('This receipt has no payment address yet', 'not_payable');
  if (row.payFactory === null) {
    throw new Conflict("This receipt's payment address was made before gasless payments existed; pay with a token transfer", 'gasless_unavailable');
  }
  const domain = await domains.of(chain).catch((err: unknown) => {
    throw new AppError(503, 'chain_unavailable', `The node did not answer for the token's EIP-712 domain: ${shortReason(err)}`);
  });
  if (domain === null) throw new Conflict(`The token ${chain.usdc.address} does not support EIP-3009 authorizations; pay with a token transfer`, 'gasless_unavailable');
  const status = row.status;
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

  const split = { address: await splitOfReceipt(db, row) };
  let call;
  try {
    if (split.address === null) throw new SweepUnavailable('no_address', 'The merchant has no split');
    call = sweepCall(chain, row, split.address, chain.usdc.address);
  } catch (err) {
    if (err instanceof SweepUnavailable) throw new Conflict(err.message, 'gasless_unavailable');
    throw err;
  }
  const [splitAddress, salt, token] = call.args;
  const { v, r, s } = signatureParts(signature);
  const auth = { from, value, validAfter: message.validAfter, validBefore: message.validBefore, nonce: message.nonce, v, r, s };
  const data = encodeFunctionData({ abi: paymentForwarderFactoryV2Abi, functionName: 'payAndSweep', args: [splitAddress, salt, token, auth] });
  const sender = deployer ?? new Deployer(walletClient, chain.publicClient, { db });
  // The estimate comes first: an authorization the token refuses costs no gas.
  const gas = await sender.estimate({ to: call.factory, data }).catch((err: unknown) => {
    throw new Conflict(`The token refused the authorization: ${shortReason(err)}`, 'relay_refused');
  });
  try {
    // Sent as a sweep of the payment address (the sweeps table): the chain worker's sweeper then
    // follows it like its own, replacing it with the same nonce when it is stuck, and sends no
    // other sweep of the address while it is in flight.
    const signed = await sender.send({ to: call.factory, data, gas }, recordAsSweep(db, row, payTo, value, call.factory, data, chain));
    return signed.hash;
  } catch (err) {
    if (err instanceof AppError) throw err;
    throw new AppError(503, 'chain_unavailable', `The relay could not be sent: ${shortReason(err)}; retry shortly`, {}, { cause: err });
  }
}

/** Hooks that store a relay as the payment address's sweep before the node sees it, and take it back if the node refuses it. */
function recordAsSweep(db: Db, row: ReceiptRow, payTo: string, value: bigint, factory: string, data: Hex, chain: ChainDeps) {
  let id: number | undefined;
  return {
    async record(signed: SignedTx): Promise<void> {
      const now = Date.now();
      const [inserted] = await db
        .insert(sweeps)
        .values({
          account: (chain.walletClient?.account.address ?? '').toLowerCase(),
          nonce: signed.nonce,
          wallet: row.wallet,
          receiptId: row.id,
          payAddress: payTo.toLowerCase(),
          token: chain.usdc.address.toLowerCase(),
          target: factory.toLowerCase(),
          data,
          gas: signed.gas,
          amountUnits: value.toString(),
          state: 'pending',
          attempts: [{ hash: signed.hash, maxFeePerGas: signed.fees.maxFeePerGas.toString(), maxPriorityFeePerGas: signed.fees.maxPriorityFeePerGas.toString(), block: signed.block.toString(), at: now }],
          raw: signed.raw,
          createdAt: now,
          updatedAt: now,
        })
        .onConflictDoNothing()
        .returning({ id: sweeps.id });
      if (inserted === undefined) throw new AppError(503, 'chain_unavailable', "A sweep of this receipt's payment address is in flight; retry shortly");
      id = inserted.id;
    },
    async unrecord(): Promise<void> {
      if (id !== undefined) await db.delete(sweeps).where(eq(sweeps.id, id));
    },
  };
}

function shortReason(err: unknown): string {
  const e = err as { shortMessage?: string; message?: string };
  return (e.shortMessage ?? e.message ?? String(err)).split('\n')[0]!.slice(0, 200);
}
