/**
 * How a node refused a transaction of the service's own account, read from its words (geth's,
 * anvil's, the providers'): the sweeper (src/payments/sweeper.ts) and the deployer's other
 * transactions (src/chain/deployer.ts) decide by it whether the nonce was used, may be given back,
 * or the transaction may still be out there. Both send through sendSigned, which sends the same
 * bytes again when the provider failed or limited the request.
 */
import { setTimeout as pause } from 'node:timers/promises';
import type { Hex } from 'viem';
import { isRateLimited, isServerFailure } from './lagging-nodes.ts';

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

/** Pauses before the same signed bytes are sent again, after a send the provider failed or limited. */
export const RESEND_PAUSES_MS: readonly number[] = [200, 500];

/** What a send came to: null when the node took the transaction, else how it was refused, and the error. */
export interface SendOutcome {
  refusal: Refusal | null;
  error?: unknown;
}

/**
 * Hands a signed transaction to the node. A provider's passing failure (HTTP 5xx or 408) or rate
 * limit (429) says nothing of the transaction: the request may have stopped at the load balancer,
 * or its answer been lost after a node took it. Counted as sent, a transaction no node had waited
 * unmined until its replacement time, three blocks on: the mainnet bench's slowest payments. So
 * the same bytes are sent again after each pause of RESEND_PAUSES_MS, which is harmless when they
 * did arrive: the node answers "already known", or "nonce too low" once they are mined, and either
 * is then `known` (the transaction is out there). `onSend` is called before each request.
 */
export async function sendSigned(client: { sendRawTransaction(args: { serializedTransaction: Hex }): Promise<Hex> }, raw: Hex, onSend?: () => void): Promise<SendOutcome> {
  for (let i = 0; ; i++) {
    onSend?.();
    try {
      await client.sendRawTransaction({ serializedTransaction: raw });
      return { refusal: null };
    } catch (error) {
      const refusal = refusalOf(error);
      if (i > 0 && (refusal === 'nonce_used' || refusal === 'known')) return { refusal: 'known', error };
      const pauseMs = RESEND_PAUSES_MS[i];
      if (pauseMs === undefined || !(isServerFailure(error) || isRateLimited(error))) return { refusal, error };
      await pause(pauseMs);
    }
  }
}
