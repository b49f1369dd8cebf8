const ADDRESS = /^0x[0-9a-fA-F]{40}$/;

/** A 0x-prefixed, 40-hex-digit EVM address (any letter case). */
export function isAddress(value: unknown): value is string {
  return typeof value === 'string' && ADDRESS.test(value);
}

/** Wallets are keyed in lower case everywhere, so one wallet never splits into two merchants. */
export function normalizeWallet(value: string): string {
  return value.toLowerCase();
}
