/**
 * Exact conversions between what a person types and what the API takes. Percentages, rates and
 * dollar amounts are moved by shifting the decimal point in their text, never by multiplying
 * floats (0.0725 * 100 is 7.249999999999999).
 */

/** Moves the decimal point of a plain decimal string `places` to the right (left when negative). */
export function shiftDecimal(text: string, places: number): string {
  const negative = text.startsWith('-');
  const abs = negative ? text.slice(1) : text;
  const [whole = '0', frac = ''] = abs.split('.');
  let digits = whole + frac;
  let point = whole.length + places;
  if (point < 0) {
    digits = '0'.repeat(-point) + digits;
    point = 0;
  }
  if (point > digits.length) digits = digits.padEnd(point, '0');
  const intPart = digits.slice(0, point).replace(/^0+(?=\d)/, '') || '0';
  const fracPart = digits.slice(point).replace(/0+$/, '');
  const out = fracPart === '' ? intPart : `${intPart}.${fracPart}`;
  return negative && out !== '0' ? `-${out}` : out;
}

/** A finite number as a plain decimal string, without exponent notation (1e-7 → "0.0000001"). */
export function plainDecimal(n: number): string {
  const text = String(n);
  const m = /^(-?[\d.]+)e([+-]\d+)$/i.exec(text);
  return m === null ? text : shiftDecimal(m[1]!, Number(m[2]));
}

const PERCENT_2 = /^(\d{1,3})(?:\.(\d{1,2}))?$/;

/** "99.5" → 9950 basis points; null unless 0..100 with at most two decimals. */
export function percentToBps(text: string): number | null {
  const m = PERCENT_2.exec(text.trim());
  if (m === null) return null;
  const bps = Number(m[1]) * 100 + Number((m[2] ?? '').padEnd(2, '0'));
  return bps <= 10_000 ? bps : null;
}

/** 9950 → "99.50". */
export function bpsToPercent(bps: number): string {
  return `${Math.trunc(bps / 100)}.${String(bps % 100).padStart(2, '0')}`;
}

const PERCENT_4 = /^\d{1,3}(?:\.\d{1,4})?$/;

/** A tax rate typed as a percent ("8.25") to the fraction the API takes (0.0825); null when invalid. */
export function percentToFraction(text: string): number | null {
  const t = text.trim();
  if (!PERCENT_4.test(t)) return null;
  const fraction = shiftDecimal(t, -2);
  return Number(fraction) <= 1 ? Number(fraction) : null;
}

/** 0.0825 → "8.25". */
export function fractionToPercent(rate: number): string {
  return shiftDecimal(plainDecimal(rate), 2);
}

/** A processing fee typed as a percent with at most two decimals ("2.5" → 2.5); null when invalid. */
export function parseFeePercent(text: string): number | null {
  return percentToBps(text) === null ? null : Number(text.trim());
}

const USD = /^(\d{1,12})(?:\.(\d{1,2}))?$/;

/** "12.3" or "$12.30" → 1230 cents; null when not a non-negative amount with at most two decimals. */
export function parseUsd(text: string): number | null {
  const m = USD.exec(text.trim().replace(/^\$/, '').replace(/,/g, ''));
  if (m === null) return null;
  return Number(m[1]) * 100 + Number((m[2] ?? '').padEnd(2, '0'));
}

/** An API dollar amount (a number with at most two decimals) to integer cents. */
export function usdToCents(usd: number): number {
  const cents = Number(shiftDecimal(plainDecimal(usd), 2));
  if (!Number.isInteger(cents)) throw new RangeError(`${usd} has more than two decimals`);
  return cents;
}

/** Integer cents to the JSON number the API takes (1230 → 12.3). */
export function centsToUsd(cents: number): number {
  return Number(shiftDecimal(String(cents), -2));
}

/** 123456 → "$1,234.56". */
export function formatCents(cents: number): string {
  const negative = cents < 0;
  const abs = Math.abs(cents);
  const whole = Math.trunc(abs / 100).toLocaleString('en-US');
  return `${negative ? '-' : ''}$${whole}.${String(abs % 100).padStart(2, '0')}`;
}

export function formatUsd(usd: number): string {
  return formatCents(usdToCents(usd));
}
