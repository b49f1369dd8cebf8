/**
 * Split contracts: OpenZeppelin's PaymentSplitter (v4), deployed from the compiled artifact that
 * @openzeppelin/contracts@4.9.x ships. Payees are the split's recipients and their shares are
 * the recipients' basis points, so shares always sum to 10000. Recipients withdraw USDC with the
 * ERC-20 variant `release(token, account)`.
 */
import {
  encodeDeployData,
  encodeFunctionData,
  getAddress,
  isAddressEqual,
  parseEventLogs,
  type Abi,
  type Account,
  type Address,
  type Chain,
  type Hex,
  type PublicClient,
  type Transport,
  type WalletClient,
} from 'viem';
import splitterArtifact from '@openzeppelin/contracts/build/contracts/PaymentSplitter.json' with { type: 'json' };
import { isContractRefusal, SplitDeployError, SplitReadError, SplitReleaseError } from './errors.ts';
import { Deployer } from './deployer.ts';

/** The parts of PaymentSplitter's ABI the service calls, typed (the artifact's ABI is untyped JSON). */
export const paymentSplitterAbi = [
  { type: 'function', name: 'payee', stateMutability: 'view', inputs: [{ name: 'index', type: 'uint256' }], outputs: [{ name: '', type: 'address' }] },
  { type: 'function', name: 'shares', stateMutability: 'view', inputs: [{ name: 'account', type: 'address' }], outputs: [{ name: '', type: 'uint256' }] },
  { type: 'function', name: 'totalShares', stateMutability: 'view', inputs: [], outputs: [{ name: '', type: 'uint256' }] },
  {
    type: 'function',
    name: 'releasable',
    stateMutability: 'view',
    inputs: [
      { name: 'token', type: 'address', internalType: 'contract IERC20' },
      { name: 'account', type: 'address' },
    ],
    outputs: [{ name: '', type: 'uint256' }],
  },
  {
    type: 'function',
    name: 'released',
    stateMutability: 'view',
    inputs: [
      { name: 'token', type: 'address', internalType: 'contract IERC20' },
      { name: 'account', type: 'address' },
    ],
    outputs: [{ name: '', type: 'uint256' }],
  },
  {
    type: 'function',
    name: 'release',
    stateMutability: 'nonpayable',
    inputs: [
      { name: 'token', type: 'address', internalType: 'contract IERC20' },
      { name: 'account', type: 'address' },
    ],
    outputs: [],
  },
  {
    type: 'event',
    name: 'ERC20PaymentReleased',
    anonymous: false,
    inputs: [
      { name: 'token', type: 'address', indexed: true },
      { name: 'to', type: 'address', indexed: false },
      { name: 'amount', type: 'uint256', indexed: false },
    ],
  },
  {
    type: 'event',
    name: 'PayeeAdded',
    anonymous: false,
    inputs: [
      { name: 'account', type: 'address', indexed: false },
      { name: 'shares', type: 'uint256', indexed: false },
    ],
  },
] as const;

/** The artifact's full ABI and creation bytecode, as OpenZeppelin compiled them. */
export const paymentSplitterArtifact = { abi: splitterArtifact.abi as Abi, bytecode: splitterArtifact.bytecode as Hex };
/** The runtime code of that PaymentSplitter (it has no immutables, so every deployment's is the same). */
const PAYMENT_SPLITTER_RUNTIME = splitterArtifact.deployedBytecode.toLowerCase();

/** No real split has more payees than this; reading stops here rather than loop on a hostile contract. */
const MAX_PAYEES = 256;

type Public = PublicClient<Transport, Chain>;
type Wallet = WalletClient<Transport, Chain, Account>;

export interface SplitShareInput {
  address: string;
  sharesBps: number;
}

export interface SplitPayee {
  address: Address;
  shares: bigint;
}

export interface SplitOnChain {
  address: Address;
  payees: SplitPayee[];
  totalShares: bigint;
  /** The block the payees and shares were read at. */
  blockNumber: bigint;
}

export interface DeployedSplit {
  address: Address;
  transactionHash: Hex;
  blockNumber: bigint;
}

export async function deploySplit(p: { walletClient: Wallet; publicClient: Public; recipients: readonly SplitShareInput[]; deployer?: Deployer }): Promise<DeployedSplit> {
  const payees = p.recipients.map((r) => getAddress(r.address));
  const shares = p.recipients.map((r) => BigInt(r.sharesBps));
  const deployer = p.deployer ?? new Deployer(p.walletClient, p.publicClient);
  let transactionHash: Hex | undefined;
  try {
    const receipt = await deployer.sendAndWait({ data: encodeDeployData({ ...paymentSplitterArtifact, args: [payees, shares] }) });
    transactionHash = receipt.transactionHash;
    if (receipt.status !== 'success' || receipt.contractAddress == null) throw new Error(`deployment ${receipt.status}`);
    return { address: getAddress(receipt.contractAddress), transactionHash, blockNumber: receipt.blockNumber };
  } catch (err) {
    throw new SplitDeployError(p.walletClient.account.address, payees, transactionHash, { cause: err });
  }
}

/**
 * The payees and shares of a PaymentSplitter, read at one block: payee(i) for i = 0, 1, ... until
 * it reverts (PaymentSplitter keeps no payee count). Throws SplitReadError with reason `no_code`
 * when nothing is deployed at `address`, `not_a_splitter` when the contract does not answer as a
 * PaymentSplitter, and `rpc` when the node could not be asked.
 */
export async function readSplit(p: { publicClient: Public; address: string }): Promise<SplitOnChain> {
  const address = getAddress(p.address);
  const call = async <T>(what: string, read: () => Promise<T>): Promise<T> => {
    try {
      return await read();
    } catch (err) {
      throw new SplitReadError(address, what, isContractRefusal(err) ? 'not_a_splitter' : 'rpc', { cause: err });
    }
  };
  // cacheTime 0: viem otherwise reuses a block number up to one polling interval old.
  const blockNumber = await call('blockNumber', () => p.publicClient.getBlockNumber({ cacheTime: 0 }));
  const code = await call('code', () => p.publicClient.getCode({ address, blockNumber }));
  if (code === undefined || code === '0x') throw new SplitReadError(address, 'code', 'no_code');
  // A contract that merely answers payee() and shares() could pay anyone anything: only the exact
  // code of the PaymentSplitter the service deploys itself is a split.
  if (code.toLowerCase() !== PAYMENT_SPLITTER_RUNTIME) throw new SplitReadError(address, 'code', 'not_a_splitter');
  const read = { address, abi: paymentSplitterAbi, blockNumber } as const;

  const payees: Address[] = [];
  for (let i = 0; i <= MAX_PAYEES; i++) {
    try {
      payees.push(await p.publicClient.readContract({ ...read, functionName: 'payee', args: [BigInt(i)] }));
    } catch (err) {
      if (!isContractRefusal(err)) throw new SplitReadError(address, `payee(${i})`, 'rpc', { cause: err });
      break;
    }
  }
  if (payees.length === 0 || payees.length > MAX_PAYEES) throw new SplitReadError(address, 'payee(0)', 'not_a_splitter');
  const [totalShares, ...shares] = await call('shares', () =>
    Promise.all([
      p.publicClient.readContract({ ...read, functionName: 'totalShares' }),
      ...payees.map((payee) => p.publicClient.readContract({ ...read, functionName: 'shares', args: [payee] })),
    ]),
  );
  return {
    address,
    payees: payees.map((payee, i) => ({ address: payee, shares: shares[i] ?? 0n })),
    totalShares: totalShares ?? 0n,
    blockNumber,
  };
}

export type SplitMismatchReason = 'no_code' | 'not_a_splitter' | 'payee_missing' | 'share_differs' | 'extra_payee';

export type SplitMatch =
  | { ok: true; split: SplitOnChain }
  | {
      ok: false;
      reason: SplitMismatchReason;
      /** A sentence for the admin, naming the address and the numbers that differ. */
      message: string;
      account?: Address;
      expectedShares?: bigint;
      actualShares?: bigint;
    };

/**
 * Whether the contract at `address` is a PaymentSplitter paying exactly `recipients`: every
 * recipient a payee with shares equal to its basis points, and no other payee. A node that
 * cannot be reached is an error (SplitReadError), not a mismatch.
 */
export async function verifySplitMatches(p: {
  publicClient: Public;
  address: string;
  recipients: readonly SplitShareInput[];
}): Promise<SplitMatch> {
  let split: SplitOnChain;
  try {
    split = await readSplit(p);
  } catch (err) {
    if (err instanceof SplitReadError && err.reason === 'no_code') {
      return { ok: false, reason: 'no_code', message: `No contract is deployed at ${err.address} on this chain` };
    }
    if (err instanceof SplitReadError && err.reason === 'not_a_splitter') {
      return { ok: false, reason: 'not_a_splitter', message: `The contract at ${err.address} is not the PaymentSplitter this service deploys (its code differs)` };
    }
    throw err;
  }
  for (const r of p.recipients) {
    const expected = BigInt(r.sharesBps);
    const payee = split.payees.find((x) => isAddressEqual(x.address, getAddress(r.address)));
    if (payee === undefined) {
      return { ok: false, reason: 'payee_missing', account: getAddress(r.address), expectedShares: expected, message: `Recipient ${r.address} is not a payee of the split contract ${split.address}` };
    }
    if (payee.shares !== expected) {
      return {
        ok: false,
        reason: 'share_differs',
        account: payee.address,
        expectedShares: expected,
        actualShares: payee.shares,
        message: `The split contract gives ${payee.address} ${payee.shares} shares, not ${expected}`,
      };
    }
  }
  const extra = split.payees.find((x) => !p.recipients.some((r) => isAddressEqual(x.address, getAddress(r.address))));
  if (extra !== undefined) {
    return { ok: false, reason: 'extra_payee', account: extra.address, actualShares: extra.shares, message: `The split contract also pays ${extra.address}, which is not a recipient` };
  }
  return { ok: true, split };
}

/** What `account` could withdraw now from the split in `token` base units. */
export async function releasable(p: { publicClient: Public; split: string; token: string; account: string }): Promise<bigint> {
  const split = getAddress(p.split);
  try {
    return await p.publicClient.readContract({
      address: split,
      abi: paymentSplitterAbi,
      functionName: 'releasable',
      args: [getAddress(p.token), getAddress(p.account)],
    });
  } catch (err) {
    throw new SplitReadError(split, 'releasable', isContractRefusal(err) ? 'not_a_splitter' : 'rpc', { cause: err });
  }
}

export interface Released {
  transactionHash: Hex;
  blockNumber: bigint;
  /** Base units paid to the account by this release. */
  amount: bigint;
}

/**
 * Pays `account` its due share of `token` from the split (anyone may send this; the money goes
 * to the account). Simulated first, so a release with nothing due fails without spending gas.
 */
export async function release(p: { walletClient: Wallet; publicClient: Public; split: string; token: string; account: string; deployer?: Deployer }): Promise<Released> {
  const split = getAddress(p.split);
  const token = getAddress(p.token);
  const account = getAddress(p.account);
  const deployer = p.deployer ?? new Deployer(p.walletClient, p.publicClient);
  let transactionHash: Hex | undefined;
  try {
    await p.publicClient.simulateContract({ account: p.walletClient.account, address: split, abi: paymentSplitterAbi, functionName: 'release', args: [token, account] });
    const data = encodeFunctionData({ abi: paymentSplitterAbi, functionName: 'release', args: [token, account] });
    const receipt = await deployer.sendAndWait({ to: split, data });
    transactionHash = receipt.transactionHash;
    if (receipt.status !== 'success') throw new Error(`release ${receipt.status}`);
    const [event] = parseEventLogs({ abi: paymentSplitterAbi, eventName: 'ERC20PaymentReleased', logs: receipt.logs }).filter(
      (log) => isAddressEqual(log.address, split) && isAddressEqual(log.args.token, token),
    );
    return { transactionHash, blockNumber: receipt.blockNumber, amount: event?.args.amount ?? 0n };
  } catch (err) {
    throw new SplitReleaseError(split, token, account, transactionHash, { cause: err });
  }
}
