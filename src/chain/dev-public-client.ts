/**
 * The public client of the dev chain. viem's waitForTransactionReceipt looks for the receipt once,
 * then again only when a new block appears. A dev chain mines a block per transaction and then
 * stays quiet, so a receipt that anvil had not indexed at that first look (a loaded machine) was
 * never looked for again: the wait ran into its 180 s timeout with the transaction mined. Here the
 * receipt is asked for every `pollingInterval` until it is there, new blocks or not.
 */
import {
  createPublicClient,
  TransactionReceiptNotFoundError,
  WaitForTransactionReceiptTimeoutError,
  type Chain,
  type Transport,
  type WaitForTransactionReceiptParameters,
} from 'viem';
import { getBlockNumber, getTransactionReceipt } from 'viem/actions';
import type { ChainPublicClient } from './client.ts';

const POLL_MS = 50;
const DEFAULT_TIMEOUT_MS = 180_000;

export function devPublicClient(chain: Chain, transport: Transport): ChainPublicClient {
  const base = createPublicClient({ chain, transport, pollingInterval: POLL_MS });
  return base.extend((client) => ({
    async waitForTransactionReceipt({ hash, confirmations = 1, timeout = DEFAULT_TIMEOUT_MS, pollingInterval = POLL_MS }: WaitForTransactionReceiptParameters<Chain>) {
      const deadline = Date.now() + timeout;
      for (;;) {
        const receipt = await getTransactionReceipt(client, { hash }).catch((err: unknown) => {
          if (err instanceof TransactionReceiptNotFoundError) return undefined;
          throw err;
        });
        if (receipt !== undefined) {
          if (confirmations <= 1) return receipt;
          const head = await getBlockNumber(client, { cacheTime: 0 });
          if (head - receipt.blockNumber + 1n >= BigInt(confirmations)) return receipt;
        }
        if (Date.now() >= deadline) throw new WaitForTransactionReceiptTimeoutError({ hash });
        await new Promise((resolve) => setTimeout(resolve, pollingInterval));
      }
    },
  }));
}
