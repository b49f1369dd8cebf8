/**
 * The sweep a merchant can send from their own wallet when no key on this deployment pays the
 * sweeps' gas (no SPLIT_DEPLOYER_KEY), or to move a token the worker does not sweep, or native ETH:
 * the factory call, ready for eth_sendTransaction. Anyone may send it; the money can only reach
 * the split.
 *
 * `token` is the receipt's token by default; `eth` (or the zero address) asks for native ETH, which
 * only a version-2 payment address can sweep (src/payments/pay-address.ts sweepCall). Any other
 * value must be an ERC-20 contract: an address without code, or whose balanceOf does not answer
 * one number, is refused as invalid input rather than turned into a sweep that cannot work.
 */
import { encodeFunctionData, erc20Abi, getAddress, type Address, type Hex } from 'viem';
import type { ChainDeps } from '../chain/client.ts';
import { isContractRefusal } from '../chain/errors.ts';
import { NATIVE_TOKEN } from '../chain/payment-address.ts';
import type { Tx } from '../db/client.ts';
import { AppError, InvalidInput, NotFound } from '../lib/errors.ts';
import { findReceipt } from '../domain/receipts.ts';
import { sweepCall, SweepUnavailable } from './pay-address.ts';
import { payToOf } from './quote.ts';

export interface ManualSweep {
  payTo: string;
  splitAddress: string;
  /** The token swept; the zero address for native ETH. */
  token: string;
  /** The token's (or ETH's, in wei) balance waiting at the payment address, base units. */
  waiting: string;
  transaction: { to: string; data: Hex; chainId: number };
}

/** The `token` query value that names native ETH (the zero address does too). */
export const NATIVE_QUERY = 'eth';

export async function manualSweep(db: Tx, chain: ChainDeps, wallet: string, receiptId: string, token?: string): Promise<ManualSweep> {
  const row = await findReceipt(db, wallet, receiptId);
  const { payTo, splitAddress } = await payToOf(db, row, chain);
  if (payTo === null || splitAddress === null || (row.payAddress === null && chain.paymentFactory === undefined)) {
    throw new NotFound(`Receipt ${receiptId} has no payment address yet (the split is not deployed)`);
  }
  const native = token !== undefined && (token.toLowerCase() === NATIVE_QUERY || token.toLowerCase() === NATIVE_TOKEN);
  const tokenAddress = native ? NATIVE_TOKEN : getAddress(token ?? chain.usdc.address);
  // A receipt whose address is not stored yet gets it from the current factory, as its payment page does.
  const addressed = { wallet, id: receiptId, payAddress: payTo, payFactory: row.payAddress === null ? (chain.paymentFactory ?? null) : row.payFactory };
  let call;
  try {
    call = sweepCall(chain, addressed, splitAddress, native ? 'native' : tokenAddress);
  } catch (err) {
    if (!(err instanceof SweepUnavailable)) throw err;
    if (err.reason === 'native_v1') throw new InvalidInput(err.message);
    if (err.reason === 'no_address') throw new NotFound(err.message);
    throw new AppError(503, 'chain_unavailable', err.message);
  }
  const waiting = native ? await chain.publicClient.getBalance({ address: call.payTo }) : await tokenBalance(chain, tokenAddress, call.payTo);
  return {
    payTo,
    splitAddress,
    token: tokenAddress.toLowerCase(),
    waiting: waiting.toString(),
    transaction: {
      to: call.factory.toLowerCase(),
      chainId: chain.chainId,
      data: encodeFunctionData({ abi: call.abi, functionName: call.functionName, args: call.args }),
    },
  };
}

/** balanceOf(holder) of an ERC-20; InvalidInput when `token` is no contract or does not answer it. */
async function tokenBalance(chain: ChainDeps, token: Address, holder: Address): Promise<bigint> {
  const code = await chain.publicClient.getCode({ address: token });
  if (code === undefined || code === '0x') throw new InvalidInput(`token ${token} is not a token contract on chain ${chain.chainId} (no code there)`);
  try {
    return await chain.publicClient.readContract({ address: token, abi: erc20Abi, functionName: 'balanceOf', args: [holder] });
  } catch (err) {
    if (isContractRefusal(err) || isUndecodable(err)) throw new InvalidInput(`token ${token} is not a token contract: balanceOf does not answer`);
    throw err;
  }
}

/** A call that returned something other than one uint256 (a contract without balanceOf but with a fallback). */
function isUndecodable(err: unknown): boolean {
  const name = (err as { name?: string; cause?: { name?: string } }).name;
  return /AbiDecodingDataSizeTooSmall|AbiDecoding|PositionOutOfBounds|SizeOverflow/.test(`${name} ${String(err)}`);
}
