import { recoverTypedDataAddress, type Hex, type PublicClient } from 'viem';
import type { loginTypedData } from '../contract/typed-data.ts';

export type LoginTypedData = ReturnType<typeof loginTypedData>;

/** Tells whether `signature` is `wallet`'s signature of the typed data. Never throws. */
export type SignatureVerifier = (p: { wallet: Hex; typedData: LoginTypedData; signature: Hex }) => Promise<boolean>;

/**
 * Externally owned accounts are checked offline by recovering the signer. Smart-contract wallets
 * (EIP-1271, and undeployed ones through ERC-6492) are checked through the chain client when one
 * is given, since only the contract can say what it accepts.
 */
export function createSignatureVerifier(chain?: PublicClient): SignatureVerifier {
  return async ({ wallet, typedData, signature }) => {
    const recovered = await recoverTypedDataAddress({ ...typedData, signature }).catch(() => null);
    if (recovered !== null && recovered.toLowerCase() === wallet.toLowerCase()) return true;
    if (chain === undefined) return false;
    return chain.verifyTypedData({ address: wallet, ...typedData, signature }).catch(() => false);
  };
}
