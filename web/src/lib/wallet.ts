/** Wallet sign-in through an injected EIP-1193 provider (window.ethereum). */
import { auth, type Session } from './api.ts';

interface Eip1193Provider {
  request(args: { method: string; params?: unknown[] }): Promise<unknown>;
}

export class WalletError extends Error {
  override name = 'WalletError';
}

/** The injected provider, looked up at the moment it is needed: some wallets inject late. */
export function injectedWallet(): Eip1193Provider | null {
  const candidate = (window as unknown as { ethereum?: unknown }).ethereum;
  if (typeof candidate !== 'object' || candidate === null) return null;
  const request = (candidate as { request?: unknown }).request;
  return typeof request === 'function' ? (candidate as Eip1193Provider) : null;
}

/** EIP-1193 errors carry a numeric code; 4001 is the person saying no. */
function walletMessage(err: unknown, action: string): WalletError {
  const e = (typeof err === 'object' && err !== null ? err : {}) as { code?: unknown; message?: unknown };
  if (e.code === 4001) return new WalletError(`You declined the ${action} in your wallet.`);
  const detail = typeof e.message === 'string' ? e.message : String(err);
  return new WalletError(`The wallet could not complete the ${action}: ${detail}`);
}

/** Connects, signs the server's EIP-712 challenge and opens a session. */
export async function signInWithWallet(): Promise<Session> {
  const wallet = injectedWallet();
  if (wallet === null) throw new WalletError('No browser wallet was found.');
  let accounts: unknown;
  try {
    accounts = await wallet.request({ method: 'eth_requestAccounts' });
  } catch (err) {
    throw walletMessage(err, 'connection request');
  }
  const address = Array.isArray(accounts) ? accounts[0] : undefined;
  if (typeof address !== 'string') throw new WalletError('The wallet shared no account.');
  const { nonce, typedData } = await auth.challenge(address);
  let signature: unknown;
  try {
    signature = await wallet.request({ method: 'eth_signTypedData_v4', params: [address, JSON.stringify(typedData)] });
  } catch (err) {
    throw walletMessage(err, 'signature request');
  }
  if (typeof signature !== 'string') throw new WalletError('The wallet returned no signature.');
  return auth.login(address, nonce, signature);
}
