/**
 * A split transaction row as the indexer would record it: a 1 USDC payment (0.005 fee) into a
 * random split, with a random transaction hash; `over` sets what the test is about.
 */
import type { NewSplitTransaction } from '../../src/domain/split-transactions.ts';
import { randomWallet } from './app.ts';

/** A random 32-byte transaction hash. */
export const randomTxHash = (): string => randomWallet() + randomWallet().slice(2, 26);

export function splitTransfer(wallet: string, over: Partial<NewSplitTransaction> = {}): NewSplitTransaction {
  return {
    wallet,
    kind: 'payment',
    splitAddress: randomWallet(),
    counterparty: randomWallet(),
    amountUnits: '1000000',
    feeUnits: '5000',
    currency: 'USDC',
    status: 'received',
    transactionHash: randomTxHash(),
    logIndex: 0,
    blockNumber: 100n,
    timestamp: 1_700_000_000_000,
    ...over,
  };
}
