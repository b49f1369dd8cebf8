/**
 * Inventory as the API serves it (src/domain/inventory.ts holds the rules). Built once per app
 * (src/deps.ts) with its write-id claims, so each route handler is one call with a params object.
 */
import type { Db } from '../db/client.ts';
import type { WriteClaims } from '../db/write-claims.ts';
import { orDegraded } from './degraded.ts';
import { listInventory, upsertInventoryItem, type InventoryInput } from './inventory.ts';
import type { Write } from './writes.ts';

export interface InventoryServiceOptions {
  db: Db;
  /** The app's write-id claims (stores.claims). */
  claims: WriteClaims;
  now?: () => number;
}

export class InventoryService {
  private readonly now: () => number;

  constructor(private readonly o: InventoryServiceOptions) {
    this.now = o.now ?? Date.now;
  }

  /** GET /api/inventory: by sku; empty and flagged while the database is unreachable. */
  list(p: { wallet: string }) {
    return orDegraded(async () => ({ items: await listInventory(this.o.db, p.wallet) }), { items: [] });
  }

  /** POST /api/inventory: creates the item, or updates the one with the same sku. */
  upsert(p: { wallet: string; input: InventoryInput; write: Write }) {
    return upsertInventoryItem(this.o.db, p.wallet, p.input, this.now(), p.write, this.o.claims);
  }
}
