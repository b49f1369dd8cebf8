/**
 * One transaction at a time per wallet client. Each transaction then takes the account's pending
 * nonce from the node, so two concurrent requests (two admins deploying splits at once) never
 * pick the same nonce, and a transaction that fails before it is sent leaves no nonce gap behind.
 */
import type { WalletClient } from 'viem';

const tails = new WeakMap<WalletClient, Promise<unknown>>();

export function sendSerially<T>(walletClient: WalletClient, send: () => Promise<T>): Promise<T> {
  const previous = tails.get(walletClient) ?? Promise.resolve();
  const next = previous.then(send, send);
  // The queue continues whatever this transaction's outcome; the caller still sees its error.
  tails.set(
    walletClient,
    next.then(
      () => undefined,
      () => undefined,
    ),
  );
  return next;
}
