/**
 * Paying without gas (DESIGN.md "Gasless payments"): the buyer signs, once and for free, an
 * EIP-3009 TransferWithAuthorization of what is due to the receipt's own payment address, in the
 * token's own EIP-712 domain (name and version as the service read them from the token); the page
 * posts it to POST /api/pay/<id>/authorization, and the service submits it and pays the gas. The
 * buyer needs the token and no ETH.
 */
import type { Hex } from 'viem';
import { TRANSFER_WITH_AUTHORIZATION_TYPES } from '../../../src/chain/eip3009.ts';
import type { Gasless } from '../../../src/contract/pay.ts';
import { ApiError } from '../lib/http.ts';
import { ask, WalletError, type Eip1193Provider } from '../lib/wallet.ts';
import type { AuthorizationBody } from './api.ts';
import type { Payable } from './wallet-pay.ts';

/** What a gasless payment needs besides a transfer's: the token's EIP-712 domain, as the service read it from the token. */
export type GaslessPayable = Payable & { gasless: Gasless };

/** The service refuses an authorization that closes sooner than 60 s from now; the page leaves two minutes. */
const MIN_WINDOW_S = 120;
/** How long a signed authorization stays usable at most: long enough to be mined, short enough not to linger. */
const WINDOW_S = 30 * 60;
/** The service accepts validBefore up to this long past the receipt's expiry. */
const AFTER_EXPIRY_S = 3600;

/**
 * When an authorization signed now would close: half an hour from now, but never later than the
 * service accepts (an hour past the receipt's expiry); null when that leaves too little time (a
 * receipt long past its expiry, which received part of its amount, is paid with a transfer).
 */
export function authorizationDeadline(expiresAt: number, nowMs: number): number | null {
  const nowS = Math.floor(nowMs / 1000);
  const deadline = Math.min(Math.floor(expiresAt / 1000) + AFTER_EXPIRY_S, nowS + WINDOW_S);
  return deadline - nowS >= MIN_WINDOW_S ? deadline : null;
}

function randomNonce(): Hex {
  const bytes = crypto.getRandomValues(new Uint8Array(32));
  return `0x${Array.from(bytes, (b) => b.toString(16).padStart(2, '0')).join('')}`;
}

/**
 * The EIP-3009 TransferWithAuthorization of what is due to the receipt's payment address, in the
 * token's own EIP-712 domain, as eth_signTypedData_v4 takes it (uint256 as decimal strings), and
 * the body POST /api/pay/<id>/authorization takes once signed.
 */
export function transferAuthorization(payment: GaslessPayable, from: Hex, validBefore: number) {
  const message = {
    from,
    to: payment.payTo as Hex,
    value: payment.due,
    validAfter: '0',
    validBefore: String(validBefore),
    nonce: randomNonce(),
  };
  const typedData = {
    types: {
      EIP712Domain: [
        { name: 'name', type: 'string' },
        { name: 'version', type: 'string' },
        { name: 'chainId', type: 'uint256' },
        { name: 'verifyingContract', type: 'address' },
      ],
      ...TRANSFER_WITH_AUTHORIZATION_TYPES,
    },
    domain: { name: payment.gasless.name, version: payment.gasless.version, chainId: payment.chainId, verifyingContract: payment.tokenAddress },
    primaryType: 'TransferWithAuthorization' as const,
    message,
  };
  const body = (signature: string): AuthorizationBody => ({ from, value: payment.due, validAfter: 0, validBefore, nonce: message.nonce, signature });
  return { typedData, body };
}

/** Asks the wallet to sign the authorization (no transaction, no gas) and returns the body to post. */
export async function signAuthorization(wallet: Eip1193Provider, from: Hex, payment: GaslessPayable, validBefore: number): Promise<AuthorizationBody> {
  const { typedData, body } = transferAuthorization(payment, from, validBefore);
  const signature = await ask<unknown>(wallet, 'signature for the payment', 'eth_signTypedData_v4', [from, JSON.stringify(typedData)]);
  if (typeof signature !== 'string' || !/^0x[0-9a-fA-F]{130}$/.test(signature)) throw new WalletError('The wallet returned no usable signature.');
  return body(signature);
}

/** Whether an answer leaves it unknown if the service submitted the authorization (the same one may be posted again). */
export function outcomeUnknown(err: unknown): boolean {
  return !(err instanceof ApiError) || err.status === 0 || err.status === 429 || err.status >= 500;
}

/**
 * A refusal of POST /authorization as one sentence for the buyer, with the service's own code and
 * words folded underneath; a wallet's failure (declined, wrong network) as the wallet helpers put it.
 */
export function gaslessErrorParts(err: unknown, symbol: string): { message: string; detail: string | null } {
  if (err instanceof WalletError) return { message: err.message, detail: err.detail };
  if (!(err instanceof ApiError)) return { message: `The payment without gas was not sent: ${err instanceof Error ? err.message : String(err)}`, detail: null };
  const detail = `${err.status} ${err.code}: ${err.message}`;
  const said: Record<string, string> = {
    insufficient_balance: `The account in your wallet holds too little ${symbol} for this payment.`,
    invalid_signature: 'The service could not verify the signature your wallet made; try again, or pay with a transfer.',
    authorization_used: 'This authorization was used already: the payment may be on its way. This page updates by itself.',
    nothing_due: 'Nothing is due on this receipt any more.',
    gasless_unavailable: 'Paying without gas is not possible for this receipt; pay with a browser wallet transfer or the QR code.',
    relay_unavailable: 'This service cannot pay the network fee for you right now; pay with a browser wallet transfer or the QR code.',
    relay_refused: `The ${symbol} contract refused the authorization, so nothing was paid; try again, or pay with a transfer.`,
    rate_limited: 'Too many attempts for this payment; wait a minute and try again.',
  };
  const message = said[err.code] ?? `The payment without gas was not accepted: ${err.message}`;
  return { message, detail: message.includes(err.message) ? null : detail };
}
