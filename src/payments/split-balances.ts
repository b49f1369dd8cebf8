/**
 * What a merchant's split contract holds and has paid out in the service's token, as the
 * contract itself says (OpenZeppelin's PaymentSplitter): per payee, what was released and what
 * is releasable now. Every value is read at one block, so the numbers agree with each other:
 * releasable = floor(totalReceived × shares / totalShares) − released, where totalReceived is
 * the token balance plus totalReleased.
 */
import { erc20Abi, getAddress, parseAbi } from 'viem';
import type { ChainDeps, ChainPublicClient } from '../chain/client.ts';
import { SplitReadError, isContractRefusal } from '../chain/errors.ts';
import { paymentSplitterAbi, readSplit, type SplitPayee } from '../chain/split-contract.ts';
import { ChainUnavailable } from '../chain/split-setup-chain.ts';
import type { Tx } from '../db/client.ts';
import { NotFound } from '../lib/errors.ts';
import { getSplitConfig } from '../domain/splits.ts';
import { splitAddressesOf } from '../domain/split-versions.ts';

/** PaymentSplitter's ERC-20 total, which src/chain/split-contract.ts's ABI does not carry. */
export const totalReleasedAbi = parseAbi(['function totalReleased(address token) view returns (uint256)']);

export interface RecipientBalance {
  address: string;
  /** The payee's shares; the service's splits have 10,000 in all, so these are basis points. */
  sharesBps: number;
  /** Token base units paid out to the payee so far. */
  released: bigint;
  /** Token base units the payee could withdraw now with release(token, account). */
  releasable: bigint;
}

export interface SplitBalances {
  address: string;
  token: string;
  /** The block every value was read at. */
  blockNumber: bigint;
  /** Everything that ever reached the split in the token: balance + totalReleased. */
  totalReceived: bigint;
  totalReleased: bigint;
  /** The token balance the split holds now. */
  balance: bigint;
  recipients: RecipientBalance[];
}

/** A PaymentSplitter's token totals and per-payee amounts, all at the block its payees were read at. */
export async function readSplitBalances(p: { publicClient: ChainPublicClient; split: string; token: string }): Promise<SplitBalances> {
  const split = await readSplit({ publicClient: p.publicClient, address: p.split });
  const token = getAddress(p.token);
  const at = { address: split.address, blockNumber: split.blockNumber } as const;
  const readPayee = async (payee: SplitPayee): Promise<RecipientBalance> => {
    const args = [token, payee.address] as const;
    const [released, releasable] = await Promise.all([
      p.publicClient.readContract({ ...at, abi: paymentSplitterAbi, functionName: 'released', args }),
      p.publicClient.readContract({ ...at, abi: paymentSplitterAbi, functionName: 'releasable', args }),
    ]);
    return { address: payee.address.toLowerCase(), sharesBps: Number(payee.shares), released, releasable };
  };
  try {
    const [balance, totalReleased, recipients] = await Promise.all([
      p.publicClient.readContract({ address: token, abi: erc20Abi, functionName: 'balanceOf', args: [split.address], blockNumber: split.blockNumber }),
      p.publicClient.readContract({ ...at, abi: totalReleasedAbi, functionName: 'totalReleased', args: [token] }),
      Promise.all(split.payees.map(readPayee)),
    ]);
    return {
      address: split.address.toLowerCase(),
      token: token.toLowerCase(),
      blockNumber: split.blockNumber,
      totalReceived: balance + totalReleased,
      totalReleased,
      balance,
      recipients,
    };
  } catch (err) {
    throw new SplitReadError(split.address, 'balances', isContractRefusal(err) ? 'not_a_splitter' : 'rpc', { cause: err });
  }
}

export interface VersionBalances extends SplitBalances {
  version: number;
}

/** The current version's balances, and every version's (newest first, the current one included). */
export interface MerchantSplitBalances extends SplitBalances {
  version: number;
  versions: VersionBalances[];
}

async function readOrExplain(chain: ChainDeps, address: string): Promise<SplitBalances> {
  try {
    return await readSplitBalances({ publicClient: chain.publicClient, split: address, token: chain.usdc.address });
  } catch (err) {
    if (err instanceof SplitReadError && err.reason !== 'rpc') {
      throw new NotFound(`No PaymentSplitter answers at ${address} on this chain (${err.reason})`);
    }
    throw new ChainUnavailable('reading the split balances', err);
  }
}

/**
 * The signed-in merchant's split balances in the service's token: the current version's, and
 * every version's, since receipts of an earlier version still pay into its contract. NotFound
 * when the merchant has no split contract (none stored, or nothing deployed at a stored address
 * on this chain); ChainUnavailable when the node could not be asked.
 */
export async function merchantSplitBalances(db: Tx, chain: ChainDeps, wallet: string): Promise<MerchantSplitBalances> {
  const { address, version } = await getSplitConfig(db, wallet);
  if (address === null || version === null) throw new NotFound('No split contract is set up yet');
  const all = (await splitAddressesOf(db, wallet)).reverse();
  const versions = await Promise.all(all.map(async (v) => ({ version: v.version, ...(await readOrExplain(chain, v.address)) })));
  const current = versions.find((v) => v.version === version) ?? { version, ...(await readOrExplain(chain, address)) };
  return { ...current, versions };
}
