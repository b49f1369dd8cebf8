/**
 * EIP-1559 fees for the service's own transactions, capped by MAX_FEE_GWEI. Pure: the caller
 * reads the base fee and the node's suggested tip.
 *
 * A first send offers twice the current base fee plus the tip (it stays includable through six
 * blocks of base-fee growth). A replacement of a transaction that did not get in keeps its nonce
 * and must raise both the tip and the max fee by at least 10 % (geth's and anvil's rule; 12.5 %
 * here), and offers at least what a first send would offer now, so a spike is met in one step
 * rather than many. Nothing is ever offered above the cap: when the cap is not enough, the
 * transaction waits.
 */

export interface Fees {
  maxFeePerGas: bigint;
  maxPriorityFeePerGas: bigint;
}

/** Replacements raise both fees by this much (per mille); nodes require at least 100. */
export const BUMP_PER_MILLE = 125n;

const bumped = (x: bigint): bigint => (x * (1000n + BUMP_PER_MILLE) + 999n) / 1000n;
const min = (a: bigint, b: bigint): bigint => (a < b ? a : b);
const max = (a: bigint, b: bigint): bigint => (a > b ? a : b);

/**
 * The fees of a first send, or null when the base fee alone reaches the cap (a send could not get
 * in: it waits).
 */
export function firstFees(baseFee: bigint, tip: bigint, cap: bigint): Fees | null {
  if (baseFee >= cap) return null;
  const maxFeePerGas = min(cap, 2n * baseFee + tip);
  return { maxFeePerGas, maxPriorityFeePerGas: min(tip, maxFeePerGas - baseFee) };
}

/**
 * The fees of a replacement, or null when the cap leaves no room for the raise nodes require
 * (the transaction sent keeps waiting).
 */
export function replacementFees(previous: Fees, baseFee: bigint, tip: bigint, cap: bigint): Fees | null {
  const needFee = bumped(previous.maxFeePerGas);
  const needTip = bumped(previous.maxPriorityFeePerGas);
  const maxPriorityFeePerGas = max(needTip, tip);
  const maxFeePerGas = min(cap, max(needFee, 2n * baseFee + maxPriorityFeePerGas));
  if (maxFeePerGas < needFee || maxFeePerGas < needTip) return null;
  return { maxFeePerGas, maxPriorityFeePerGas: min(maxPriorityFeePerGas, maxFeePerGas) };
}

/** Wei as gwei for messages: "12.5". */
export function gwei(wei: bigint): string {
  const whole = wei / 10n ** 9n;
  const frac = (wei % 10n ** 9n).toString().padStart(9, '0').replace(/0+$/, '');
  return frac === '' ? whole.toString() : `${whole}.${frac}`;
}
