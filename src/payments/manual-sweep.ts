/**
 * The sweep a merchant can send from their own wallet when no key on this deployment pays the
 * sweeps' gas (no SPLIT_DEPLOYER_KEY), or to move a token the worker does not sweep: the factory
 * call, ready for eth_sendTransaction. Anyone may send it; the money can only reach the split.
 */
import { encodeFunctionData, erc20Abi, getAddress, type Address, type Hex } from 'viem';
import type { ChainDeps } from '../chain/client.ts';
import { paymentForwarderFactoryAbi, paymentSalt } from '../chain/payment-address.ts';
import type { Tx } from '../db/client.ts';
import { NotFound } from '../domain/errors.ts';
import { findReceipt } from '../domain/receipts.ts';
import { payToOf } from './quote.ts';

export interface ManualSweep {
  payTo: string;
  splitAddress: string;
  token: string;
  /** The token balance waiting at the payment address, base units. */
  waiting: string;
  transaction: { to: string; data: Hex; chainId: number };
}

export async function manualSweep(db: Tx, chain: ChainDeps, wallet: string, receiptId: string, token?: string): Promise<ManualSweep> {
  const row = await findReceipt(db, wallet, receiptId);
  const { payTo, splitAddress } = await payToOf(db, row, chain);
  if (payTo === null || splitAddress === null || chain.paymentFactory === undefined) {
    throw new NotFound(`Receipt ${receiptId} has no payment address yet (the split is not deployed)`);
  }
  const tokenAddress = getAddress(token ?? chain.usdc.address);
  const waiting = await chain.publicClient.readContract({ address: tokenAddress, abi: erc20Abi, functionName: 'balanceOf', args: [payTo as Address] });
  return {
    payTo,
    splitAddress,
    token: tokenAddress.toLowerCase(),
    waiting: waiting.toString(),
    transaction: {
      to: chain.paymentFactory.toLowerCase(),
      chainId: chain.chainId,
      data: encodeFunctionData({
        abi: paymentForwarderFactoryAbi,
        functionName: 'sweep',
        args: [splitAddress as Address, paymentSalt(wallet, receiptId), tokenAddress],
      }),
    },
  };
}
