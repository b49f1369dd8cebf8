/**
 * The stores of one app, built once in src/deps.ts for its database handle: every prepared
 * statement, batched write, batched lookup and write-id claim of their tables belongs to them,
 * so two apps in one process share none.
 */
import type { Db } from './client.ts';
import { ChainCursorStore } from './chain-cursor-store.ts';
import { IdempotencyStore } from './idempotency-store.ts';
import { RejectedWriteStore } from './rejected-write-store.ts';
import { OrderStore } from './order-store.ts';
import { ReceiptStore } from './receipt-store.ts';
import { WriteClaims } from './write-claims.ts';

export interface Stores {
  /** Write-id claims, the exactly-once mechanism shared by every writer (src/db/write-claims.ts). */
  claims: WriteClaims;
  /** Receipts: their batched inserts, their stored views and the API's reads (src/db/receipt-store.ts). */
  receipts: ReceiptStore;
  /** Orders: their batches, the hint of limited items, and the statements that place them (src/db/order-store.ts). */
  orders: OrderStore;
  /** Idempotency-Key answers, read and stored by src/http/idempotency.ts (src/db/idempotency-store.ts). */
  idempotency: IdempotencyStore;
  /** How far the chain worker's scans have read, for GET /healthz (src/db/chain-cursor-store.ts). */
  cursors: ChainCursorStore;
  /** Journaled writes that could never apply, for their merchant (src/db/rejected-write-store.ts). */
  rejectedWrites: RejectedWriteStore;
}

export function createStores(db: Db): Stores {
  const claims = new WriteClaims();
  const receipts = new ReceiptStore(db);
  return {
    claims,
    receipts,
    orders: new OrderStore(db, receipts, claims),
    idempotency: new IdempotencyStore(db),
    cursors: new ChainCursorStore(db),
    rejectedWrites: new RejectedWriteStore(db),
  };
}
