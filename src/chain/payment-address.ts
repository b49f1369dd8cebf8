/**
 * Payment addresses: every receipt is paid to its own address, the CREATE2 address of a
 * PaymentForwarder clone (src/chain/contracts/PaymentForwarder.sol) whose only destination is the
 * merchant's split. The address is known before anything is deployed there; buyers pay it, and a
 * later factory.sweep(split, salt, token) deploys the forwarder if needed and moves the whole
 * balance into the split, in one transaction that anyone may send.
 *
 * The factory lands at the same address on every chain that has the standard CREATE2 deployment
 * proxy (anvil by default, Base): its address depends only on its bytecode and a fixed salt.
 *
 * Two versions exist, each its own immutable contract at its own address. Version 1 sweeps ERC-20
 * tokens only; version 2 (PaymentForwarderV2.sol) also sweeps native ETH (token = the zero address)
 * and relays EIP-3009 authorizations (payAndSweep). New receipts are addressed through version 2;
 * a receipt addressed through version 1 keeps that address and is swept through that factory
 * (src/payments/pay-address.ts sweepCall).
 */
import {
  encodeFunctionData,
  getAddress,
  getContractAddress,
  keccak256,
  concat,
  toBytes,
  type Address,
  type Hex,
} from 'viem';
import type { Logger } from 'pino';
import factoryArtifact from './artifacts/PaymentForwarderFactory.json' with { type: 'json' };
import factoryV2Artifact from './artifacts/PaymentForwarderFactoryV2.json' with { type: 'json' };
import type { ChainPublicClient, ChainWalletClient } from './client.ts';
import { ChainError, isContractRefusal } from './errors.ts';
import { paymentForwarderFactoryV2Abi } from './payment-forwarder-v2-abi.ts';
import { Deployer } from './deployer.ts';

export { paymentForwarderFactoryV2Abi, paymentForwarderV2Abi } from './payment-forwarder-v2-abi.ts';

/** A forwarder factory version: 1 sweeps ERC-20 tokens; 2 also sweeps native ETH and relays EIP-3009. */
export type FactoryVersion = 1 | 2;

/** The token argument of a version-2 sweep that means native ETH. */
export const NATIVE_TOKEN: Address = '0x0000000000000000000000000000000000000000';

/** PaymentForwarder's (version 1) ABI as the artifact has it, typed (tests compare the two). */
export const paymentForwarderAbi = [
  { inputs: [], stateMutability: 'nonpayable', type: 'constructor' },
  { inputs: [], name: 'AlreadyInitialized', type: 'error' },
  { inputs: [], name: 'NotFactory', type: 'error' },
  { inputs: [], name: 'NotInitialized', type: 'error' },
  { inputs: [], name: 'ZeroSplit', type: 'error' },
  {
    inputs: [],
    name: 'factory',
    outputs: [{ internalType: 'address', name: '', type: 'address' }],
    stateMutability: 'view',
    type: 'function',
  },
  {
    inputs: [{ internalType: 'address', name: 'split_', type: 'address' }],
    name: 'initialize',
    outputs: [],
    stateMutability: 'nonpayable',
    type: 'function',
  },
  {
    inputs: [],
    name: 'split',
    outputs: [{ internalType: 'address', name: '', type: 'address' }],
    stateMutability: 'view',
    type: 'function',
  },
  {
    inputs: [{ internalType: 'address', name: 'token', type: 'address' }],
    name: 'sweep',
    outputs: [{ internalType: 'uint256', name: 'amount', type: 'uint256' }],
    stateMutability: 'nonpayable',
    type: 'function',
  },
] as const;

/** PaymentForwarderFactory's (version 1) ABI as the artifact has it, typed (tests compare the two). */
export const paymentForwarderFactoryAbi = [
  { inputs: [], stateMutability: 'nonpayable', type: 'constructor' },
  { inputs: [], name: 'ZeroSplit', type: 'error' },
  {
    anonymous: false,
    inputs: [
      { indexed: true, internalType: 'address', name: 'forwarder', type: 'address' },
      { indexed: true, internalType: 'address', name: 'split', type: 'address' },
      { indexed: true, internalType: 'address', name: 'token', type: 'address' },
      { indexed: false, internalType: 'uint256', name: 'amount', type: 'uint256' },
    ],
    name: 'Swept',
    type: 'event',
  },
  {
    inputs: [],
    name: 'implementation',
    outputs: [{ internalType: 'address', name: '', type: 'address' }],
    stateMutability: 'view',
    type: 'function',
  },
  {
    inputs: [
      { internalType: 'address', name: 'split', type: 'address' },
      { internalType: 'bytes32', name: 'salt', type: 'bytes32' },
    ],
    name: 'predict',
    outputs: [{ internalType: 'address', name: '', type: 'address' }],
    stateMutability: 'view',
    type: 'function',
  },
  {
    inputs: [
      { internalType: 'address', name: 'split', type: 'address' },
      { internalType: 'bytes32', name: 'salt', type: 'bytes32' },
      { internalType: 'address', name: 'token', type: 'address' },
    ],
    name: 'sweep',
    outputs: [
      { internalType: 'address', name: 'forwarder', type: 'address' },
      { internalType: 'uint256', name: 'amount', type: 'uint256' },
    ],
    stateMutability: 'nonpayable',
    type: 'function',
  },
] as const;

/** The deterministic CREATE2 deployment proxy present on anvil (by default) and on Base. */
export const CREATE2_DEPLOYER: Address = '0x4e59b44847b379578588920cA78FbF26c0B4956C';

/** Per version, the salt the factory is deployed with through CREATE2_DEPLOYER, and its creation code. */
const FACTORY_CODE: Record<FactoryVersion, { salt: Hex; bytecode: Hex }> = {
  1: { salt: keccak256(toBytes('splitline.payment-forwarder-factory.v1')), bytecode: factoryArtifact.bytecode as Hex },
  2: { salt: keccak256(toBytes('splitline.payment-forwarder-factory.v2')), bytecode: factoryV2Artifact.bytecode as Hex },
};

const HEX_ADDRESS = /^0x[0-9a-fA-F]{40}$/;
const HEX_BYTES32 = /^0x[0-9a-fA-F]{64}$/;

/** A PaymentForwarderFactory could not be found, checked or deployed. */
export class PaymentFactoryError extends ChainError {
  constructor(
    readonly address: string,
    readonly reason: 'no_create2_deployer' | 'no_code' | 'not_v2' | 'deploy' | 'rpc',
    readonly transactionHash: string | undefined,
    message: string,
    options?: { cause?: unknown },
  ) {
    super(message, options);
  }
}

/** A factory.sweep transaction failed (refused in estimation, or reverted on the chain). */
export class PaymentSweepError extends ChainError {
  constructor(
    readonly factory: string,
    readonly split: string,
    readonly salt: string,
    readonly token: string,
    readonly transactionHash: string | undefined,
    options?: { cause?: unknown },
  ) {
    super(
      `Sweeping ${token} from payment address (split ${split}, salt ${salt}) through factory ${factory} failed` +
        (transactionHash === undefined ? '' : ` (transaction ${transactionHash})`),
      options,
    );
  }
}

const factoryAddressMemo = new Map<FactoryVersion, Address>();

/** Where a factory version lands when deployed through CREATE2_DEPLOYER with its fixed salt. Pure, no RPC. */
export function factoryAddress(version: FactoryVersion): Address {
  let address = factoryAddressMemo.get(version);
  if (address === undefined) {
    const { salt, bytecode } = FACTORY_CODE[version];
    address = getContractAddress({ opcode: 'CREATE2', from: CREATE2_DEPLOYER, salt, bytecode });
    factoryAddressMemo.set(version, address);
  }
  return address;
}

/** The forwarder implementation the factory deploys in its constructor (its first CREATE, nonce 1). Pure. */
export function forwarderImplementation(factory: Address): Address {
  return getContractAddress({ opcode: 'CREATE', from: factory, nonce: 1n });
}

/** The CREATE2 salt of one receipt's payment address, for the receipt's wallet and id. */
export function paymentSalt(wallet: string, receiptId: string): Hex {
  return keccak256(toBytes(`splitline.receipt:${wallet.toLowerCase()}:${receiptId}`));
}

/**
 * The EIP-1167 clone init code hash, per factory (the factory fixes its implementation). A pure
 * function of the address, so it is safe to keep for the life of the process.
 */
const cloneInitCodeHashes = new Map<string, Hex>();

function cloneInitCodeHash(factory: string): Hex {
  const key = factory.toLowerCase();
  let hash = cloneInitCodeHashes.get(key);
  if (hash === undefined) {
    const implementation = forwarderImplementation(getAddress(factory)).slice(2).toLowerCase();
    // OpenZeppelin 4.9 Clones: the 55-byte creation code of a minimal proxy to `implementation`.
    hash = keccak256(`0x3d602d80600a3d3981f3363d3d373d3d3d363d73${implementation}5af43d82803e903d91602b57fd5bf3`);
    cloneInitCodeHashes.set(key, hash);
  }
  return hash;
}

/**
 * The payment address for (split, salt), computed offline: equal to factory.predict(split, salt).
 * Runs on every receipt creation, so it builds the hex by hand rather than through ABI encoding.
 */
export function predictPaymentAddress(p: { factory: Address; split: Address; salt: Hex }): `0x${string}` {
  if (!HEX_ADDRESS.test(p.factory)) throw new TypeError(`factory is not an address: ${p.factory}`);
  if (!HEX_ADDRESS.test(p.split)) throw new TypeError(`split is not an address: ${p.split}`);
  if (!HEX_BYTES32.test(p.salt)) throw new TypeError(`salt is not 32 bytes of hex: ${p.salt}`);
  // keccak256(abi.encode(split, salt)): the split left-padded to 32 bytes, then the salt.
  const boundSalt = keccak256(`0x000000000000000000000000${p.split.slice(2).toLowerCase()}${p.salt.slice(2).toLowerCase()}`);
  const hash = keccak256(`0xff${p.factory.slice(2).toLowerCase()}${boundSalt.slice(2)}${cloneInitCodeHash(p.factory).slice(2)}`);
  return `0x${hash.slice(26)}`;
}

async function hasCode(publicClient: ChainPublicClient, address: Address): Promise<boolean> {
  const code = await publicClient.getCode({ address });
  return code !== undefined && code !== '0x';
}

/**
 * Deploys a factory version through CREATE2_DEPLOYER unless it is already at factoryAddress(version),
 * and returns that address. Two instances racing both end with the same factory: the loser's
 * transaction reverts (the address is taken) and the code is found there afterwards.
 */
export async function ensurePaymentFactory(p: {
  walletClient: ChainWalletClient;
  publicClient: ChainPublicClient;
  logger: Logger;
  version: FactoryVersion;
  /** Sends with the service's nonce keeper when given. */
  deployer?: Deployer;
}): Promise<Address> {
  const address = factoryAddress(p.version);
  const { salt, bytecode } = FACTORY_CODE[p.version];
  const chainId = p.publicClient.chain.id;
  try {
    if (await hasCode(p.publicClient, address)) return address;
    if (!(await hasCode(p.publicClient, CREATE2_DEPLOYER))) {
      throw new PaymentFactoryError(
        address,
        'no_create2_deployer',
        undefined,
        `Chain ${chainId} has no CREATE2 deployment proxy at ${CREATE2_DEPLOYER}, so the payment-forwarder factory cannot be deployed at ${address}; deploy it another way and set PAYMENT_FACTORY_ADDRESS`,
      );
    }
  } catch (err) {
    if (err instanceof PaymentFactoryError) throw err;
    throw new PaymentFactoryError(address, 'rpc', undefined, `Checking the payment-forwarder factory at ${address} failed`, { cause: err });
  }
  p.logger.info({ factory: address, version: p.version, via: CREATE2_DEPLOYER, deployer: p.walletClient.account.address }, 'chain: deploying the payment-forwarder factory');
  let transactionHash: Hex | undefined;
  let failure: unknown;
  try {
    const deployer = p.deployer ?? new Deployer(p.walletClient, p.publicClient, { logger: p.logger });
    const receipt = await deployer.sendAndWait({ to: CREATE2_DEPLOYER, data: concat([salt, bytecode]) });
    transactionHash = receipt.transactionHash;
    if (receipt.status !== 'success') throw new Error(`deployment ${receipt.status}`);
  } catch (err) {
    failure = err;
  }
  if (!(await hasCode(p.publicClient, address))) {
    throw new PaymentFactoryError(
      address,
      'deploy',
      transactionHash,
      `Deploying the payment-forwarder factory at ${address} failed` + (transactionHash === undefined ? '' : ` (transaction ${transactionHash})`),
      { cause: failure },
    );
  }
  if (failure !== undefined) p.logger.info({ factory: address, version: p.version }, 'chain: the payment-forwarder factory was deployed by someone else meanwhile');
  else p.logger.info({ factory: address, version: p.version, transactionHash }, 'chain: payment-forwarder factory deployed');
  return address;
}

/**
 * Throws PaymentFactoryError unless a factory of `version` is deployed at `address`: no_code when
 * nothing is there; for version 2, not_v2 when the contract does not answer version() = 2 (a
 * version-1 factory named as the current one). Used for factories named in the configuration.
 */
export async function assertPaymentFactory(p: {
  publicClient: ChainPublicClient;
  address: Address;
  version: FactoryVersion;
  /** The setting that named it, for the messages. */
  setting: string;
}): Promise<Address> {
  let present: boolean;
  try {
    present = await hasCode(p.publicClient, p.address);
  } catch (err) {
    throw new PaymentFactoryError(p.address, 'rpc', undefined, `Checking the payment-forwarder factory at ${p.address} failed`, { cause: err });
  }
  if (!present) {
    throw new PaymentFactoryError(p.address, 'no_code', undefined, `${p.setting} ${p.address} holds no contract on chain ${p.publicClient.chain.id}`);
  }
  if (p.version === 2 && (await factoryVersion(p.publicClient, p.address)) !== 2n) {
    throw new PaymentFactoryError(
      p.address,
      'not_v2',
      undefined,
      `${p.setting} ${p.address} is not a version-2 payment-forwarder factory (it does not answer version() = 2). ` +
        `If it is the version-1 factory your existing receipts were addressed through, set PAYMENT_FACTORY_V1_ADDRESS=${p.address} ` +
        `and set PAYMENT_FACTORY_ADDRESS to the version-2 factory (${factoryAddress(2)} where the CREATE2 deployment proxy exists), ` +
        'or leave it unset for SPLIT_DEPLOYER_KEY to deploy it',
    );
  }
  return p.address;
}

/** version() of a factory; 0 for a contract without it (version 1 has none). */
async function factoryVersion(publicClient: ChainPublicClient, address: Address): Promise<bigint> {
  try {
    return await publicClient.readContract({ address, abi: paymentForwarderFactoryV2Abi, functionName: 'version' });
  } catch (err) {
    if (isContractRefusal(err)) return 0n;
    throw new PaymentFactoryError(address, 'rpc', undefined, `Reading version() of the payment-forwarder factory at ${address} failed`, { cause: err });
  }
}

/** Calls factory.sweep(split, salt, token), waits for the receipt, throws PaymentSweepError if it failed. */
export async function sweepPayment(p: {
  walletClient: ChainWalletClient;
  publicClient: ChainPublicClient;
  factory: Address;
  split: Address;
  salt: Hex;
  token: Address;
  deployer?: Deployer;
}): Promise<{ hash: Hex; blockNumber: bigint; gasUsed: bigint }> {
  let hash: Hex | undefined;
  try {
    // The deployer estimates gas first, so a sweep that would revert is refused before it is sent.
    const deployer = p.deployer ?? new Deployer(p.walletClient, p.publicClient);
    const receipt = await deployer.sendAndWait({
      to: p.factory,
      data: encodeFunctionData({ abi: paymentForwarderFactoryAbi, functionName: 'sweep', args: [p.split, p.salt, p.token] }),
    });
    hash = receipt.transactionHash;
    if (receipt.status !== 'success') throw new Error(`sweep ${receipt.status}`);
    return { hash, blockNumber: receipt.blockNumber, gasUsed: receipt.gasUsed };
  } catch (err) {
    throw new PaymentSweepError(p.factory, p.split, p.salt, p.token, hash, { cause: err });
  }
}
