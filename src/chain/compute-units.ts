/**
 * What a hosted RPC provider charges per JSON-RPC method, in Alchemy's compute units (CU): the
 * published table "Compute Unit Costs" (alchemy.com/docs/reference/compute-unit-costs, standard
 * EVM methods, read November 2026). The chain worker counts its calls per method
 * (PaymentScanner.rpcCalls) and the bench turns the counts into compute units with this table.
 *
 * Throughput CU (what counts against the per-second limit) differs for a few methods:
 * eth_sendRawTransaction costs 40 CU but 250 throughput CU, eth_getBlockReceipts 20 and 500.
 */
export const ALCHEMY_COMPUTE_UNITS: Readonly<Record<string, number>> = Object.freeze({
  net_version: 0,
  eth_chainId: 0,
  eth_syncing: 0,
  eth_blockNumber: 10,
  eth_feeHistory: 10,
  eth_maxPriorityFeePerGas: 10,
  eth_createAccessList: 10,
  eth_uninstallFilter: 10,
  eth_getTransactionReceipt: 20,
  eth_getBlockByNumber: 20,
  eth_getBlockByHash: 20,
  eth_getTransactionByHash: 20,
  eth_getStorageAt: 20,
  eth_gasPrice: 20,
  eth_getBalance: 20,
  eth_getCode: 20,
  eth_getTransactionCount: 20,
  eth_estimateGas: 20,
  eth_getBlockReceipts: 20,
  eth_newFilter: 20,
  eth_getFilterChanges: 20,
  eth_call: 26,
  eth_getLogs: 60,
  eth_getFilterLogs: 60,
  eth_sendRawTransaction: 40,
});

/** Throughput CU where it differs from the CU above. */
export const ALCHEMY_THROUGHPUT_UNITS: Readonly<Record<string, number>> = Object.freeze({
  eth_sendRawTransaction: 250,
  eth_getBlockReceipts: 500,
});

/** A method missing from the table is charged as this (the table's most common figure). */
export const UNKNOWN_METHOD_UNITS = 20;

/** Compute units of a set of calls counted per method. */
export function computeUnits(calls: Readonly<Record<string, number>>): number {
  let total = 0;
  for (const [method, n] of Object.entries(calls)) total += n * (ALCHEMY_COMPUTE_UNITS[method] ?? UNKNOWN_METHOD_UNITS);
  return total;
}
