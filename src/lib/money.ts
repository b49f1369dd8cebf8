/**
 * Exact money. USD amounts travel as JSON numbers at the edge but are held as integer cents
 * (bigint); rates are held as integers (basis points, parts per million). Nothing here uses
 * floating-point arithmetic on amounts.
 */
import { InvalidInput } from './errors.ts';

const USD = /^(0|[1-9]\d{0,12})(\.\d{1,2})?$/;
const RATE = /^(0|[1-9]\d*)(\.\d{1,6})?$/;

/** Largest amount accepted anywhere: one trillion dollars, far inside Number's exact range. */
import { MAX_CENTS } from '../contract/common.ts';
export { MAX_CENTS };

/**
 * Converts a non-negative USD amount with at most two decimals to cents. A value such as
 * 0.30000000000000004 is refused rather than silently rounded.
 */
export function usdToCents(value: number, field = 'amount'): bigint {
  if (typeof value !== 'number' || !Number.isFinite(value) || value < 0) {
    throw new InvalidInput(`${field} must be a non-negative number`);
  }
  const text = String(value);
  const m = USD.exec(text);
  if (m === null) throw new InvalidInput(`${field} must have at most two decimal places`);
  const whole = BigInt(m[1]!);
  const frac = (m[2] ?? '.').slice(1).padEnd(2, '0');
  const cents = whole * 100n + BigInt(frac);
  if (cents > MAX_CENTS) throw new InvalidInput(`${field} is too large`);
  return cents;
}

const MAX_EXACT_CENTS = BigInt(Number.MAX_SAFE_INTEGER);

/** Cents to the JSON number the API shows (exact for every amount below MAX_CENTS). */
export function centsToUsd(cents: bigint): number {
  // Below 2^53 both the cents and the quotient are exact: IEEE division returns the double
  // nearest to cents/100, the same double that parsing the decimal text gives.
  if (cents <= MAX_EXACT_CENTS && cents >= -MAX_EXACT_CENTS) return Number(cents) / 100;
  const sign = cents < 0n ? '-' : '';
  const abs = cents < 0n ? -cents : cents;
  return Number(`${sign}${abs / 100n}.${(abs % 100n).toString().padStart(2, '0')}`);
}

/** Divides and rounds half away from zero: the rounding rule for tax and fee lines. */
export function divRoundHalfUp(numerator: bigint, denominator: bigint): bigint {
  if (denominator <= 0n) throw new RangeError('denominator must be positive');
  const negative = numerator < 0n;
  const n = negative ? -numerator : numerator;
  const q = (n * 2n + denominator) / (denominator * 2n);
  return negative ? -q : q;
}

export const PPM = 1_000_000n;
export const BPS = 10_000n;

/**
 * A tax rate given as a fraction (0.0825 = 8.25%) held as parts per million. At most six
 * decimals, between 0 and 1.
 */
export function rateToPpm(value: number, field = 'taxRate'): bigint {
  if (typeof value !== 'number' || !Number.isFinite(value) || value < 0 || value > 1) {
    throw new InvalidInput(`${field} must be a fraction from 0 to 1 (0.0825 means 8.25%)`);
  }
  const m = RATE.exec(String(value));
  if (m === null) throw new InvalidInput(`${field} must have at most six decimal places`);
  return BigInt(m[1]!) * PPM + BigInt((m[2] ?? '.').slice(1).padEnd(6, '0'));
}

export function ppmToRate(ppm: bigint): number {
  return Number(`${ppm / PPM}.${(ppm % PPM).toString().padStart(6, '0')}`);
}

/** A percentage such as processingFeePct 2.5 held as basis points (250). */
export function pctToBps(value: number, field = 'processingFeePct'): number {
  if (typeof value !== 'number' || !Number.isFinite(value) || value < 0 || value > 100) {
    throw new InvalidInput(`${field} must be a percentage from 0 to 100`);
  }
  const m = /^(\d{1,3})(\.\d{1,2})?$/.exec(String(value));
  if (m === null) throw new InvalidInput(`${field} must have at most two decimal places`);
  return Number(m[1]) * 100 + Number((m[2] ?? '.').slice(1).padEnd(2, '0'));
}

export function bpsToPct(bps: number): number {
  return bps / 100;
}

/** Tax on an amount: cents × ppm / 1e6, rounded half up. */
export function taxCents(amountCents: bigint, ratePpm: bigint): bigint {
  return divRoundHalfUp(amountCents * ratePpm, PPM);
}

/** A basis-point share of an amount: cents × bps / 1e4, rounded half up. */
export function bpsOf(amount: bigint, bps: number | bigint): bigint {
  return divRoundHalfUp(amount * BigInt(bps), BPS);
}

/**
 * A payee's part of an amount paid into a PaymentSplitter whose shares are basis points (total
 * 10,000), as the contract computes it: amount × shares / total, rounded down. The parts of the
 * indexed payments then never add up to more than the payee can release.
 */
export function splitterShare(amount: bigint, bps: number | bigint): bigint {
  return (amount * BigInt(bps)) / BPS;
}

/** USDC has six decimals: one cent is 10,000 base units. */
export const USDC_DECIMALS = 6;
export function centsToTokenUnits(cents: bigint, decimals = USDC_DECIMALS): bigint {
  if (decimals < 2) throw new RangeError('token must have at least two decimals');
  return cents * 10n ** BigInt(decimals - 2);
}

/**
 * Splits an amount among shares in basis points so that the parts add up exactly to the whole:
 * each part is floored, and the remainder goes one unit at a time to the largest remainders.
 */
export function splitByBps(amount: bigint, shares: readonly number[]): bigint[] {
  const total = shares.reduce((a, b) => a + b, 0);
  if (total !== 10000) throw new RangeError('shares must sum to 10000 bps');
  const parts = shares.map((s) => (amount * BigInt(s)) / BPS);
  const rema = shares.map((s, i) => ({ i, r: (amount * BigInt(s)) % BPS }));
  let left = amount - parts.reduce((a, b) => a + b, 0n);
  rema.sort((a, b) => (b.r > a.r ? 1 : b.r < a.r ? -1 : a.i - b.i));
  for (const { i } of rema) {
    if (left === 0n) break;
    parts[i] = parts[i]! + 1n;
    left -= 1n;
  }
  return parts;
}
