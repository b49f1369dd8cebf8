/**
 * EIP-3009 (transferWithAuthorization), as Circle's USDC (FiatTokenV2) and the dev chain's test
 * USDC implement it: the typed data a payer signs, the token's EIP-712 domain (name and version
 * read from the token, never hard-coded), and the pieces of a signature the contracts take.
 */
import { hexToSignature, type Address, type Hex, type TypedDataDomain } from 'viem';
import type { ChainPublicClient } from './client.ts';
import { isContractRefusal } from './errors.ts';

export const eip3009Abi = [
  {
    type: 'function',
    name: 'transferWithAuthorization',
    stateMutability: 'nonpayable',
    inputs: [
      { name: 'from', type: 'address' },
      { name: 'to', type: 'address' },
      { name: 'value', type: 'uint256' },
      { name: 'validAfter', type: 'uint256' },
      { name: 'validBefore', type: 'uint256' },
      { name: 'nonce', type: 'bytes32' },
      { name: 'v', type: 'uint8' },
      { name: 'r', type: 'bytes32' },
      { name: 's', type: 'bytes32' },
    ],
    outputs: [],
  },
  {
    type: 'function',
    name: 'authorizationState',
    stateMutability: 'view',
    inputs: [
      { name: 'authorizer', type: 'address' },
      { name: 'nonce', type: 'bytes32' },
    ],
    outputs: [{ name: '', type: 'bool' }],
  },
  {
    type: 'function',
    name: 'eip712Domain',
    stateMutability: 'view',
    inputs: [],
    outputs: [
      { name: 'fields', type: 'bytes1' },
      { name: 'name', type: 'string' },
      { name: 'version', type: 'string' },
      { name: 'chainId', type: 'uint256' },
      { name: 'verifyingContract', type: 'address' },
      { name: 'salt', type: 'bytes32' },
      { name: 'extensions', type: 'uint256[]' },
    ],
  },
  { type: 'function', name: 'name', stateMutability: 'view', inputs: [], outputs: [{ name: '', type: 'string' }] },
  { type: 'function', name: 'version', stateMutability: 'view', inputs: [], outputs: [{ name: '', type: 'string' }] },
] as const;

/** The EIP-712 types of an EIP-3009 transfer authorization. */
export const TRANSFER_WITH_AUTHORIZATION_TYPES = {
  TransferWithAuthorization: [
    { name: 'from', type: 'address' },
    { name: 'to', type: 'address' },
    { name: 'value', type: 'uint256' },
    { name: 'validAfter', type: 'uint256' },
    { name: 'validBefore', type: 'uint256' },
    { name: 'nonce', type: 'bytes32' },
  ],
} as const;

export interface TransferAuthorization {
  from: Address;
  to: Address;
  value: bigint;
  validAfter: bigint;
  validBefore: bigint;
  nonce: Hex;
}

/**
 * The token's EIP-712 domain: from eip712Domain() (ERC-5267) where the token has it, else from
 * name() and version() (Circle's FiatTokenV2 on Base has those but no eip712Domain()).
 */
export async function tokenDomain(publicClient: ChainPublicClient, token: Address): Promise<TypedDataDomain & { name: string; version: string }> {
  const chainId = publicClient.chain.id;
  try {
    const [, name, version] = await publicClient.readContract({ address: token, abi: eip3009Abi, functionName: 'eip712Domain' });
    return { name, version, chainId, verifyingContract: token };
  } catch (err) {
    if (!isContractRefusal(err)) throw err;
  }
  const [name, version] = await Promise.all([
    publicClient.readContract({ address: token, abi: eip3009Abi, functionName: 'name' }),
    publicClient.readContract({ address: token, abi: eip3009Abi, functionName: 'version' }),
  ]);
  return { name, version, chainId, verifyingContract: token };
}

/** The typed data a payer signs (eth_signTypedData_v4) to authorize a transfer. */
export function transferAuthorizationTypedData(domain: TypedDataDomain, message: TransferAuthorization) {
  return { domain, types: TRANSFER_WITH_AUTHORIZATION_TYPES, primaryType: 'TransferWithAuthorization' as const, message };
}

/** A 65-byte signature as the (v, r, s) the token takes. */
export function signatureParts(signature: Hex): { v: number; r: Hex; s: Hex } {
  const { v, r, s, yParity } = hexToSignature(signature);
  return { v: v !== undefined ? Number(v) : 27 + (yParity ?? 0), r, s };
}
