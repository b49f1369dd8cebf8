/**
 * Paying with an injected EIP-1193 wallet: an ERC-20 transfer of what is due to the receipt's own
 * payment address (never the merchant's split: a transfer is attributed to a receipt only by the
 * address it reaches). Connecting and moving the wallet to the receipt's chain are shared with the
 * admin app (web/src/lib/wallet.ts).
 */
import { encodeFunctionData, erc20Abi, type Hex } from 'viem';
import { sendTransaction, type Eip1193Provider } from '../lib/wallet.ts';
import type { Payment } from './api.ts';

export { connect, DEV_CHAIN_ID, describeChain, ensureChain, errorParts, injectedWallet, shortMessage, WalletError } from '../lib/wallet.ts';

/** What a payment needs: the token, the chain, the receipt's payment address and the base units still due. */
export type Payable = Pick<Payment, 'chainId' | 'tokenAddress' | 'tokenSymbol' | 'tokenDecimals' | 'due'> & { payTo: string };

export function transferData(payment: Payable): Hex {
  return encodeFunctionData({
    abi: erc20Abi,
    functionName: 'transfer',
    args: [payment.payTo as Hex, BigInt(payment.due)],
  });
}

/** Sends the transfer and returns its hash once the wallet has broadcast it. `action` names it in errors. */
export async function sendTransfer(wallet: Eip1193Provider, from: Hex, payment: Payable, action = 'payment'): Promise<Hex> {
  return sendTransaction(wallet, from, { to: payment.tokenAddress, data: transferData(payment) }, action);
}

/** EIP-681: a mobile wallet scanning this opens the same transfer of what is due, on the right chain. */
export function eip681(payment: Payable): string {
  return `ethereum:${payment.tokenAddress}@${payment.chainId}/transfer?address=${payment.payTo}&uint256=${payment.due}`;
}

