export function shortAddress(address: string): string {
  return address.length > 12 ? `${address.slice(0, 6)}…${address.slice(-4)}` : address;
}

export function formatTime(ms: number): string {
  return new Date(ms).toLocaleTimeString(undefined, { hour: '2-digit', minute: '2-digit' });
}

export function formatDateTime(ms: number): string {
  return new Date(ms).toLocaleString(undefined, { dateStyle: 'medium', timeStyle: 'short' });
}

export function startOfToday(now = new Date()): number {
  const d = new Date(now);
  d.setHours(0, 0, 0, 0);
  return d.getTime();
}

export const ADDRESS = /^0x[0-9a-fA-F]{40}$/;
export const TX_HASH = /^0x[0-9a-fA-F]{64}$/;

/** An http(s) origin with nothing after the host: what the server accepts for embedding. */
export function isOrigin(text: string): boolean {
  return /^https?:\/\/[^/?#\s]+\/?$/i.test(text);
}

/**
 * Receipt statuses in a shop owner's words (DESIGN.md "Receipt states"); the raw value stays in
 * the API, in filters' values and in a title attribute. An unknown status is shown spaced out.
 */
const STATUS_WORDS: Record<string, string> = {
  generated: 'Created',
  pending: 'Waiting for payment',
  link_opened: 'Link opened',
  buyer_logged_in: 'Buyer connected a wallet',
  checkout_initialized: 'Buyer started paying',
  checkout_success: 'Paid (marked by you)',
  tx_mined: 'Payment seen, confirming',
  recipient_validated: 'Paid, confirming',
  completed: 'Paid',
  failed: 'Expired unpaid',
  tx_mismatch: 'Payment does not match',
  refund_partial: 'Partly refunded',
  refunded: 'Refunded',
};

export function statusLabel(status: string): string {
  const known = STATUS_WORDS[status];
  if (known !== undefined) return known;
  const spaced = status.replace(/_/g, ' ');
  if (status.startsWith('refund_')) return `Refund: ${spaced.slice('refund '.length)}`;
  return spaced.charAt(0).toUpperCase() + spaced.slice(1);
}

/** Who recorded a status history entry. */
const SOURCE_WORDS: Record<string, string> = {
  api: 'created through the API',
  order: 'new order',
  terminal: 'terminal sale',
  tracking: "buyer's payment page",
  admin: 'you, in the admin app',
  chain: 'seen on the chain',
};

export function sourceLabel(source: string): string {
  return SOURCE_WORDS[source] ?? source.replace(/_/g, ' ');
}

/** The first line of `text`, spaces collapsed, cut to `max` characters: one line for a page. */
export function shortMessage(text: string, max = 140): string {
  const line = text.split(/\r?\n/).find((l) => l.trim() !== '') ?? text;
  const flat = line.replace(/\s+/g, ' ').trim();
  return flat.length > max ? `${flat.slice(0, max - 1)}…` : flat;
}
