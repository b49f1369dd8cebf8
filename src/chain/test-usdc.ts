/**
 * The dev chain's test USDC: a 6-decimal ERC-20 ("USD Coin (test)", USDC) compiled from
 * src/chain/contracts/TestUSDC.sol by scripts/build-contracts.ts. Anyone may mint it.
 */
import { encodeDeployData, erc20Abi, getAddress, type Abi, type Account, type Address, type Chain, type Hex, type PublicClient, type Transport, type WalletClient } from 'viem';
import artifact from './artifacts/TestUSDC.json' with { type: 'json' };
import { TestUsdcError } from './errors.ts';
import { Deployer } from './deployer.ts';

export const testUsdcAbi = [
  ...erc20Abi,
  {
    type: 'function',
    name: 'mint',
    stateMutability: 'nonpayable',
    inputs: [
      { name: 'to', type: 'address' },
      { name: 'amount', type: 'uint256' },
    ],
    outputs: [],
  },
] as const;

export interface TokenInfo {
  address: Address;
  decimals: number;
  symbol: string;
}

export interface DeployTestUsdcParams {
  walletClient: WalletClient<Transport, Chain, Account>;
  publicClient: PublicClient<Transport, Chain>;
  holders: readonly Address[];
  /** Base units each holder receives (6 decimals). */
  amountEach: bigint;
  /** Sends with the service's nonce keeper when given. */
  deployer?: Deployer;
}

export interface DeployedTestUsdc {
  address: Address;
  transactionHash: Hex;
  blockNumber: bigint;
}

export async function deployTestUsdc(p: DeployTestUsdcParams): Promise<DeployedTestUsdc> {
  const deployer = p.deployer ?? new Deployer(p.walletClient, p.publicClient);
  let transactionHash: Hex | undefined;
  try {
    const receipt = await deployer.sendAndWait({ data: encodeDeployData({ abi: artifact.abi as Abi, bytecode: artifact.bytecode as Hex, args: [p.holders, p.amountEach] }) });
    transactionHash = receipt.transactionHash;
    if (receipt.status !== 'success' || receipt.contractAddress == null) throw new Error(`deployment ${receipt.status}`);
    return { address: getAddress(receipt.contractAddress), transactionHash, blockNumber: receipt.blockNumber };
  } catch (err) {
    throw new TestUsdcError('deploy', transactionHash, { cause: err });
  }
}

/** The token's decimals and symbol, or null when `address` holds no contract. */
export async function readTokenInfo(p: { publicClient: PublicClient<Transport, Chain>; address: Address }): Promise<TokenInfo | null> {
  try {
    const code = await p.publicClient.getCode({ address: p.address });
    if (code === undefined || code === '0x') return null;
    const [decimals, symbol] = await Promise.all([
      p.publicClient.readContract({ address: p.address, abi: erc20Abi, functionName: 'decimals' }),
      p.publicClient.readContract({ address: p.address, abi: erc20Abi, functionName: 'symbol' }),
    ]);
    return { address: getAddress(p.address), decimals, symbol };
  } catch (err) {
    throw new TestUsdcError('check', p.address, { cause: err });
  }
}
