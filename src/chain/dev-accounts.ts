/**
 * The dev chain's accounts: the first ten of the standard test mnemonic, which every Ethereum
 * tool knows. Their keys are public, so they only ever hold test money.
 */
import { mnemonicToAccount, type HDAccount } from 'viem/accounts';
import type { NonceManager } from 'viem';

export const DEV_MNEMONIC = 'test test test test test test test test test test test junk';
export const DEV_ACCOUNT_COUNT = 10;
/** The service's own dev transactions use the tenth account, so the first nine stay free for buyers. */
export const DEV_DEPLOYER_INDEX = 9;
/** Test USDC each dev account holds after the token is deployed: 1,000,000 with 6 decimals. */
export const DEV_USDC_PER_ACCOUNT = 1_000_000n * 10n ** 6n;

export function devAccount(index: number, opts: { nonceManager?: NonceManager } = {}): HDAccount {
  return mnemonicToAccount(DEV_MNEMONIC, { addressIndex: index, nonceManager: opts.nonceManager });
}

export function devAccounts(): HDAccount[] {
  return Array.from({ length: DEV_ACCOUNT_COUNT }, (_, i) => devAccount(i));
}
