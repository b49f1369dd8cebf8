/**
 * Resolves presented keys with a short cache. A fresh entry is trusted for `ttlMs`, so a
 * revocation elsewhere takes effect within that time; a revocation in this process drops its
 * entries at once. While the database is unreachable, an entry seen within `staleMs` is still
 * honoured, so degraded answers stay reachable for known callers.
 */
import type { Db } from '../db/client.ts';
import { isConnectionError } from '../db/client.ts';
import { DatabaseUnavailable } from '../domain/errors.ts';
import { hashKey, looksLikeKey } from './keys.ts';
import { findActiveKey, type Principal } from './subscriptions.ts';

interface Entry {
  principal: Principal | null;
  at: number;
}

export class KeyResolver {
  private readonly cache = new Map<string, Entry>();

  constructor(
    private readonly db: Db,
    private readonly ttlMs: number,
    private readonly staleMs = 60 * 60_000,
    private readonly maxEntries = 50_000,
  ) {}

  /**
   * `beforeLookup` runs only when the key must be looked up in the database (not a cached answer,
   * not a string that cannot be a key); it may throw to refuse the request before that cost.
   */
  async resolve(key: string, now = Date.now(), beforeLookup?: () => Promise<void>): Promise<Principal | null> {
    // A string that cannot be a key never costs a database round trip.
    if (!looksLikeKey(key)) return null;
    const hash = hashKey(key);
    const hit = this.cache.get(hash);
    if (hit !== undefined && now - hit.at < this.ttlMs) return hit.principal;
    await beforeLookup?.();
    try {
      const principal = await findActiveKey(this.db, hash);
      this.remember(hash, { principal, at: now });
      return principal;
    } catch (err) {
      if (!isConnectionError(err)) throw err;
      if (hit !== undefined && now - hit.at < this.staleMs) return hit.principal;
      throw new DatabaseUnavailable(err);
    }
  }

  /** Drops cached entries for keys that were just revoked or rotated away. */
  forget(keyHashes: Iterable<string>): void {
    for (const h of keyHashes) this.cache.delete(h);
  }

  private remember(hash: string, entry: Entry): void {
    if (this.cache.size >= this.maxEntries) {
      const oldest = this.cache.keys().next();
      if (!oldest.done) this.cache.delete(oldest.value);
    }
    this.cache.delete(hash);
    this.cache.set(hash, entry);
  }
}
