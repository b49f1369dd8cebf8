/**
 * Resolves presented keys with a short cache. A fresh entry is trusted for `ttlMs`, so a
 * revocation elsewhere takes effect within that time; a revocation in this process drops its
 * entries at once. While the database is unreachable, an entry the database confirmed within
 * `staleMs` is still honoured, so degraded answers stay reachable for known callers.
 *
 * With a `file` (DATA_DIR/keys-seen.json), the keys the database confirmed outlive the process:
 * a service restarted while the database is unreachable still knows its callers. The file holds
 * key hashes only, never a key, each with its principal and the time the database last confirmed
 * it. An entry read from it is a fallback for an unreachable database, never trusted without
 * asking the database first.
 */
import { open as openFile, readFile, rename, rm } from 'node:fs/promises';
import type { Logger } from 'pino';
import type { Db } from '../db/client.ts';
import { isConnectionError } from '../lib/db-errors.ts';
import { DatabaseUnavailable } from '../lib/errors.ts';
import { hashKey, looksLikeKey } from './keys.ts';
import { findActiveKey, type Principal } from './subscriptions.ts';

/**
 * 24 h: long enough to ride out an outage of several hours, and a restart during one, for every
 * caller seen the day before. The cost is bounded: while the database is down nobody can revoke a
 * key, so only a key revoked elsewhere since this process last looked it up can slip through, and
 * what it reaches is degraded (empty lists, receipt writes for its own merchant).
 */
export const DEFAULT_STALE_MS = 24 * 60 * 60_000;

/** A re-confirmation rewrites the file only when the time stored for the key is this old. */
const CONFIRMATION_GRANULARITY_MS = 60_000;

export interface KeyResolverOptions {
  /** A fresh lookup is trusted this long without asking the database (KEY_CACHE_TTL_MS). */
  ttlMs: number;
  /** While the database is unreachable, a key it confirmed this recently is still honoured. */
  staleMs?: number;
  maxEntries?: number;
  /** Where the keys seen are remembered; absent, memory only. */
  file?: string;
  /** Changes are written at most this often (a revocation at once). */
  saveDelayMs?: number;
  logger?: Pick<Logger, 'warn'>;
  now?: () => number;
}

interface Entry {
  principal: Principal | null;
  /** When the database last answered for this key. */
  at: number;
  /** False for an entry read from the file: honoured only while the database is unreachable. */
  fresh: boolean;
}

interface SeenKey {
  hash: string;
  subscriptionId: string;
  wallet: string;
  scopes: string[];
  rateLimitPerMinute: number;
  confirmedAt: number;
}

export class KeyResolver {
  private readonly cache = new Map<string, Entry>();
  private readonly ttlMs: number;
  private readonly staleMs: number;
  private readonly maxEntries: number;
  /** The confirmation time of each key as the file holds it. */
  private written = new Map<string, number>();
  private dirty = false;
  private timer: NodeJS.Timeout | undefined;
  private writing: Promise<void> = Promise.resolve();
  private closed = false;

  private constructor(
    private readonly db: Db,
    private readonly opts: KeyResolverOptions,
  ) {
    this.ttlMs = opts.ttlMs;
    this.staleMs = opts.staleMs ?? DEFAULT_STALE_MS;
    this.maxEntries = opts.maxEntries ?? 50_000;
  }

  /** A resolver, with the keys remembered in `opts.file` (missing or unreadable: none). */
  static async open(db: Db, opts: KeyResolverOptions): Promise<KeyResolver> {
    const resolver = new KeyResolver(db, opts);
    if (opts.file !== undefined) await resolver.load(opts.file);
    return resolver;
  }

  /** The key's principal, or null for a key that is not (or no longer) valid. */
  async resolve(key: string, now = this.opts.now?.() ?? Date.now()): Promise<Principal | null> {
    // A string that cannot be a key never costs a database round trip.
    if (!looksLikeKey(key)) return null;
    const hash = hashKey(key);
    const hit = this.cache.get(hash);
    if (hit !== undefined && hit.fresh && now - hit.at < this.ttlMs) return hit.principal;
    try {
      const principal = await findActiveKey(this.db, hash);
      this.remember(hash, { principal, at: now, fresh: true });
      return principal;
    } catch (err) {
      if (!isConnectionError(err)) throw err;
      // Read again: a revocation in this process during the lookup has dropped the entry.
      const known = this.cache.get(hash);
      if (known !== undefined && now - known.at < this.staleMs) return known.principal;
      throw new DatabaseUnavailable(err);
    }
  }

  /** Drops cached entries for keys that were just revoked or rotated away, from the file too (at once). */
  forget(keyHashes: Iterable<string>): void {
    let persisted = false;
    for (const h of keyHashes) {
      this.cache.delete(h);
      persisted ||= this.written.has(h);
    }
    if (persisted) this.changed(0);
  }

  /** Writes what changed since the last write and stops writing. */
  async close(): Promise<void> {
    this.closed = true;
    clearTimeout(this.timer);
    await this.writing;
    if (this.dirty) await this.save();
  }

  private remember(hash: string, entry: Entry): void {
    const before = this.cache.get(hash);
    if (this.cache.size >= this.maxEntries && before === undefined) {
      const oldest = this.cache.keys().next();
      if (!oldest.done) {
        this.cache.delete(oldest.value);
        if (this.written.has(oldest.value)) this.changed();
      }
    }
    this.cache.delete(hash);
    this.cache.set(hash, entry);
    if (this.needsWrite(hash, before, entry)) this.changed();
  }

  private needsWrite(hash: string, before: Entry | undefined, after: Entry): boolean {
    const writtenAt = this.written.get(hash);
    if (after.principal === null) return writtenAt !== undefined;
    if (writtenAt === undefined || before === undefined || before.principal === null) return true;
    return !samePrincipal(before.principal, after.principal) || after.at - writtenAt >= CONFIRMATION_GRANULARITY_MS;
  }

  /** Schedules a write; a write already scheduled sooner stands. */
  private changed(delayMs = this.opts.saveDelayMs ?? 3_000): void {
    if (this.opts.file === undefined) return;
    this.dirty = true;
    if (this.closed) return;
    if (this.timer !== undefined) {
      if (delayMs > 0) return;
      clearTimeout(this.timer);
    }
    this.timer = setTimeout(() => {
      this.timer = undefined;
      this.writing = this.writing.then(() => this.save());
    }, delayMs);
    this.timer.unref();
  }

  /** Replaces the file atomically (a file beside it, written and fsync'd, renamed over it). */
  private async save(): Promise<void> {
    const file = this.opts.file;
    if (file === undefined || !this.dirty) return;
    this.dirty = false;
    const now = this.opts.now?.() ?? Date.now();
    const keys: SeenKey[] = [];
    for (const [hash, e] of this.cache) {
      if (e.principal === null || now - e.at >= this.staleMs) continue;
      const { subscriptionId, wallet, scopes, rateLimitPerMinute } = e.principal;
      keys.push({ hash, subscriptionId, wallet, scopes: [...scopes], rateLimitPerMinute, confirmedAt: e.at });
    }
    const tmp = `${file}.tmp`;
    try {
      await rm(tmp, { force: true });
      const handle = await openFile(tmp, 'wx', 0o600);
      try {
        await handle.writeFile(JSON.stringify({ version: 1, keys }));
        await handle.sync();
      } finally {
        await handle.close();
      }
      await rename(tmp, file);
      this.written = new Map(keys.map((k) => [k.hash, k.confirmedAt]));
    } catch (err) {
      this.opts.logger?.warn({ err, file }, 'could not write the keys seen; retrying at the next change');
      this.dirty = true;
    }
  }

  private async load(file: string): Promise<void> {
    let text: string;
    try {
      text = await readFile(file, 'utf8');
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code === 'ENOENT') return;
      this.opts.logger?.warn({ err, file }, 'could not read the keys seen; starting without them');
      return;
    }
    const now = this.opts.now?.() ?? Date.now();
    const parsed = parseSeenKeys(text);
    if (parsed === undefined) {
      this.opts.logger?.warn({ file }, 'the keys-seen file is not one this version writes; starting without it');
      return;
    }
    // Oldest first, so the oldest are evicted first; an entry the stale window has passed is never honoured.
    const usable = parsed.keys
      .filter((k) => now - k.confirmedAt < this.staleMs && k.confirmedAt <= now + CONFIRMATION_GRANULARITY_MS)
      .sort((a, b) => a.confirmedAt - b.confirmedAt)
      .slice(-this.maxEntries);
    for (const k of usable) {
      const principal: Principal = { subscriptionId: k.subscriptionId, wallet: k.wallet, scopes: new Set(k.scopes), rateLimitPerMinute: k.rateLimitPerMinute };
      this.cache.set(k.hash, { principal, at: k.confirmedAt, fresh: false });
    }
    this.written = new Map(usable.map((k) => [k.hash, k.confirmedAt]));
    if (usable.length !== parsed.keys.length || parsed.skipped > 0) this.changed();
  }
}

function samePrincipal(a: Principal, b: Principal): boolean {
  return (
    a.subscriptionId === b.subscriptionId &&
    a.wallet === b.wallet &&
    a.rateLimitPerMinute === b.rateLimitPerMinute &&
    a.scopes.size === b.scopes.size &&
    [...a.scopes].every((s) => b.scopes.has(s))
  );
}

/** The file's entries; undefined when it is not JSON of the expected shape. Malformed entries are skipped (counted). */
function parseSeenKeys(text: string): { keys: SeenKey[]; skipped: number } | undefined {
  let doc: unknown;
  try {
    doc = JSON.parse(text);
  } catch {
    return undefined;
  }
  if (typeof doc !== 'object' || doc === null || (doc as { version?: unknown }).version !== 1) return undefined;
  const keys = (doc as { keys?: unknown }).keys;
  if (!Array.isArray(keys)) return undefined;
  const valid = keys.filter(isSeenKey);
  return { keys: valid, skipped: keys.length - valid.length };
}

function isSeenKey(v: unknown): v is SeenKey {
  if (typeof v !== 'object' || v === null) return false;
  const k = v as Record<string, unknown>;
  return (
    typeof k.hash === 'string' &&
    /^[0-9a-f]{64}$/.test(k.hash) &&
    typeof k.subscriptionId === 'string' &&
    typeof k.wallet === 'string' &&
    Array.isArray(k.scopes) &&
    k.scopes.every((s) => typeof s === 'string') &&
    Number.isSafeInteger(k.rateLimitPerMinute) &&
    Number.isSafeInteger(k.confirmedAt)
  );
}
