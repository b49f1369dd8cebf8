/**
 * Refunds as the admin app records and lists them (src/domain/refunds.ts holds the rules). Built
 * once per app (src/deps.ts) with its chain and write-id claims, so each route handler is one call
 * with a params object.
 */
import type { ChainDeps } from '../chain/client.ts';
import type { Db } from '../db/client.ts';
import type { WriteClaims } from '../db/write-claims.ts';
import { Forbidden } from '../lib/errors.ts';
import { listRefunds, parseRefund, refundChainOf, refundReceipt, type RefundInput, type RefundResult } from './refunds.ts';
import type { Write } from './writes.ts';

export interface RefundServiceOptions {
  db: Db;
  /** The app's write-id claims (stores.claims). */
  claims: WriteClaims;
  /** Absent: refunds with txHash answer 503 chain_unavailable. */
  chain?: ChainDeps;
  /** CONFIRMATIONS: the depth at which a refund's transfer verifies it. */
  confirmations: number;
  now?: () => number;
}

export class RefundService {
  private readonly now: () => number;

  constructor(private readonly o: RefundServiceOptions) {
    this.now = o.now ?? Date.now;
  }

  /** The chain side of refunds, read at each call (the dev chain's token is checked again after a restart). */
  #chain() {
    return refundChainOf(this.o.chain, this.o.confirmations);
  }

  /** POST /api/receipts/refund: the body checked in the spec's order, then recorded for the signed-in merchant's own receipt. */
  async record(p: { by: string; body: RefundInput; write: Write }): Promise<{ ok: true } & RefundResult> {
    const parsed = parseRefund(p.body);
    if (parsed.wallet !== p.by) throw new Forbidden('You can refund only your own receipts');
    const result = await refundReceipt(this.o.db, { ...parsed, by: p.by }, this.#chain(), this.now(), p.write, this.o.claims);
    return { ok: true, ...result };
  }

  /** GET /api/receipts/{id}/refunds: a receipt's refunds, and the token a refund is sent in. */
  async list(p: { wallet: string; receiptId: string }) {
    return {
      refunds: await listRefunds(this.o.db, p.wallet, p.receiptId),
      token: this.#chain()?.token ?? null,
    };
  }
}
