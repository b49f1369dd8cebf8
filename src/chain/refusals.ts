/**
 * How a node refused a transaction of the service's own account, read from its words (geth's,
 * anvil's, the providers'): the sweeper (src/payments/sweeper.ts) and the deployer's other
 * transactions (src/chain/deployer.ts) decide by it whether the nonce was used, may be given back,
 * or the transaction may still be out there.
 */

/** How a node refused a transaction, when it did so outright; 'unknown' when it may have been sent. */
export type Refusal = 'funds' | 'nonce_used' | 'known' | 'underpriced' | 'fee_below_base' | 'unknown';

export function refusalOf(err: unknown): Refusal {
  const text = messagesOf(err).toLowerCase();
  if (text.includes('insufficient funds')) return 'funds';
  if (/nonce too low|nonce is too low|nonce has already been used|invalid nonce/.test(text)) return 'nonce_used';
  if (/already known|known transaction|already imported/.test(text)) return 'known';
  if (text.includes('underpriced')) return 'underpriced';
  if (/base ?fee|fee cap|max fee per gas less/.test(text)) return 'fee_below_base';
  return 'unknown';
}

/** Every message of an error and its causes, joined. */
export function messagesOf(err: unknown): string {
  const parts: string[] = [];
  for (let e: unknown = err, depth = 0; e !== undefined && e !== null && depth < 8; depth++) {
    const o = e as { message?: unknown; details?: unknown; shortMessage?: unknown; cause?: unknown };
    for (const p of [o.shortMessage, o.details, o.message]) if (typeof p === 'string') parts.push(p);
    e = o.cause;
  }
  return parts.join(' | ');
}
