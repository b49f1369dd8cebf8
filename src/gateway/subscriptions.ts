/**
 * Subscriptions and their keys: issue, list, rotate, revoke, and resolve a presented key to a
 * merchant wallet and scopes. Used by the gateway, the CLI and the admin API alike.
 */
import { and, desc, eq, isNull } from 'drizzle-orm';
import type { Db } from '../db/client.ts';
import { releaseSlot, takeSlot } from '../db/counters.ts';
import { subscriptionKeys, subscriptions } from '../db/schema.ts';
import { Forbidden, InvalidInput, NotFound } from '../lib/errors.ts';
import { normalizeWallet, isAddress } from '../domain/wallet.ts';
import { generateKey, hashKey, keyPrefix } from './keys.ts';
import { newId } from '../lib/ids.ts';
import { DEFAULT_PRODUCT, GRANTED_SCOPES, PRODUCTS, isScope, type Scope } from './scopes.ts';

export type KeySlot = 'primary' | 'secondary';

/**
 * Active subscriptions one merchant may hold: each carries its own rate limit, so without a cap a
 * merchant multiplies its budget by minting keys. Enforced by the database (src/db/counters.ts).
 */
export const MAX_SUBSCRIPTIONS_PER_MERCHANT = 20;
const SUBSCRIPTIONS_COUNTER = 'subscriptions';

export interface SubscriptionView {
  id: string;
  wallet: string;
  name: string;
  product: string;
  scopes: string[];
  rateLimitPerMinute: number;
  status: 'active' | 'revoked';
  createdAt: number;
  revokedAt: number | null;
  keys: { slot: KeySlot; prefix: string; createdAt: number }[];
}

export interface IssuedKeys {
  primaryKey: string;
  secondaryKey: string;
}

export interface CreateSubscriptionParams {
  wallet: string;
  name?: string | undefined;
  product?: string | undefined;
  scopes?: string[] | undefined;
  rateLimitPerMinute?: number | undefined;
  /**
   * The merchant's cap on active subscriptions; MAX_SUBSCRIPTIONS_PER_MERCHANT unless a caller
   * that is not a merchant (a test building a matrix of keys) sets another.
   */
  maxActive?: number | undefined;
  /**
   * A superadmin (or the operator, through the CLI) creates it: only then may it carry the
   * scopes in GRANTED_SCOPES. Otherwise a product's granted scopes are left out and asking for
   * one by name is 403.
   */
  grantedBySuperadmin?: boolean | undefined;
}

export async function createSubscription(
  db: Db,
  params: CreateSubscriptionParams,
  now = Date.now(),
): Promise<SubscriptionView & IssuedKeys> {
  if (!isAddress(params.wallet)) throw new InvalidInput('wallet must be a 0x-prefixed 40-hex address', 'invalid_wallet');
  const productName = params.product ?? DEFAULT_PRODUCT;
  // Own keys only: "__proto__" or "constructor" must not find Object's members.
  const product = Object.hasOwn(PRODUCTS, productName) ? PRODUCTS[productName] : undefined;
  if (product === undefined) {
    throw new InvalidInput(`Unknown product "${productName}"; products: ${Object.keys(PRODUCTS).join(', ')}`);
  }
  let scopes: Scope[] = [...product.scopes];
  if (params.scopes !== undefined) {
    const bad = params.scopes.filter((s) => !isScope(s));
    if (bad.length > 0) throw new InvalidInput(`Unknown scopes: ${bad.join(', ')}`);
    scopes = [...new Set(params.scopes as Scope[])];
    const granted = scopes.filter((s) => GRANTED_SCOPES.has(s));
    if (granted.length > 0 && params.grantedBySuperadmin !== true) {
      throw new Forbidden(`Only a superadmin grants ${granted.join(', ')}`);
    }
  }
  if (params.grantedBySuperadmin !== true) scopes = scopes.filter((s) => !GRANTED_SCOPES.has(s));
  const rate = params.rateLimitPerMinute ?? product.rateLimitPerMinute;
  if (!Number.isInteger(rate) || rate < 1 || rate > 1_000_000) {
    throw new InvalidInput('rateLimitPerMinute must be an integer from 1 to 1000000');
  }
  const id = newId('sub');
  const primaryKey = generateKey();
  const secondaryKey = generateKey();
  const wallet = normalizeWallet(params.wallet);
  await db.transaction(async (tx) => {
    const cap = params.maxActive ?? MAX_SUBSCRIPTIONS_PER_MERCHANT;
    if (!(await takeSlot(tx, wallet, SUBSCRIPTIONS_COUNTER, cap))) {
      throw new InvalidInput(`At most ${cap} active subscriptions per merchant; revoke one to create another`);
    }
    await tx.insert(subscriptions).values({
      id,
      wallet,
      name: params.name ?? `${productName} subscription`,
      product: productName,
      scopes,
      rateLimitPerMinute: rate,
      status: 'active',
      createdAt: now,
    });
    await tx.insert(subscriptionKeys).values([
      { keyHash: hashKey(primaryKey), subscriptionId: id, slot: 'primary', prefix: keyPrefix(primaryKey), createdAt: now },
      { keyHash: hashKey(secondaryKey), subscriptionId: id, slot: 'secondary', prefix: keyPrefix(secondaryKey), createdAt: now },
    ]);
  });
  const view = await getSubscription(db, id);
  return { ...view, primaryKey, secondaryKey };
}

export async function listSubscriptions(db: Db, wallet?: string): Promise<SubscriptionView[]> {
  const rows = await db
    .select()
    .from(subscriptions)
    .where(wallet === undefined ? undefined : eq(subscriptions.wallet, normalizeWallet(wallet)))
    .orderBy(desc(subscriptions.createdAt));
  const keys = await db
    .select()
    .from(subscriptionKeys)
    .where(isNull(subscriptionKeys.revokedAt));
  return rows.map((s) => toView(s, keys.filter((k) => k.subscriptionId === s.id)));
}

export async function getSubscription(db: Db, id: string): Promise<SubscriptionView> {
  const [row] = await db.select().from(subscriptions).where(eq(subscriptions.id, id));
  if (row === undefined) throw new NotFound(`Subscription ${id} not found`);
  const keys = await db
    .select()
    .from(subscriptionKeys)
    .where(and(eq(subscriptionKeys.subscriptionId, id), isNull(subscriptionKeys.revokedAt)));
  return toView(row, keys);
}

function toView(
  s: typeof subscriptions.$inferSelect,
  keys: (typeof subscriptionKeys.$inferSelect)[],
): SubscriptionView {
  return {
    id: s.id,
    wallet: s.wallet,
    name: s.name,
    product: s.product,
    scopes: s.scopes,
    rateLimitPerMinute: s.rateLimitPerMinute,
    status: s.status,
    createdAt: s.createdAt,
    revokedAt: s.revokedAt ?? null,
    keys: keys
      .map((k) => ({ slot: k.slot, prefix: k.prefix, createdAt: k.createdAt }))
      .sort((a, b) => a.slot.localeCompare(b.slot)),
  };
}

/**
 * Replaces one of the two keys; the other keeps working, so clients can move over without
 * downtime. Returns the new key, shown only here. Returns the hashes that stopped working so a
 * caller can drop them from its cache at once.
 */
export async function rotateKey(
  db: Db,
  id: string,
  slot: KeySlot,
  now = Date.now(),
): Promise<{ key: string; slot: KeySlot; revokedHashes: string[] }> {
  const key = generateKey();
  const revoked = await db.transaction(async (tx) => {
    const [sub] = await tx.select().from(subscriptions).where(eq(subscriptions.id, id)).for('update');
    if (sub === undefined) throw new NotFound(`Subscription ${id} not found`);
    if (sub.status !== 'active') throw new InvalidInput(`Subscription ${id} is revoked`);
    const old = await tx
      .update(subscriptionKeys)
      .set({ revokedAt: now })
      .where(and(eq(subscriptionKeys.subscriptionId, id), eq(subscriptionKeys.slot, slot), isNull(subscriptionKeys.revokedAt)))
      .returning({ keyHash: subscriptionKeys.keyHash });
    await tx.insert(subscriptionKeys).values({ keyHash: hashKey(key), subscriptionId: id, slot, prefix: keyPrefix(key), createdAt: now });
    return old.map((o) => o.keyHash);
  });
  return { key, slot, revokedHashes: revoked };
}

/** Revokes the subscription and both its keys. Idempotent. */
export async function revokeSubscription(db: Db, id: string, now = Date.now()): Promise<{ revokedHashes: string[] }> {
  return db.transaction(async (tx) => {
    const [sub] = await tx.select().from(subscriptions).where(eq(subscriptions.id, id)).for('update');
    if (sub === undefined) throw new NotFound(`Subscription ${id} not found`);
    if (sub.status === 'active') {
      await tx.update(subscriptions).set({ status: 'revoked', revokedAt: now }).where(eq(subscriptions.id, id));
      await releaseSlot(tx, sub.wallet, SUBSCRIPTIONS_COUNTER);
    }
    const keys = await tx
      .update(subscriptionKeys)
      .set({ revokedAt: now })
      .where(and(eq(subscriptionKeys.subscriptionId, id), isNull(subscriptionKeys.revokedAt)))
      .returning({ keyHash: subscriptionKeys.keyHash });
    return { revokedHashes: keys.map((k) => k.keyHash) };
  });
}

/** What the gateway knows about a caller once its key is resolved. */
export interface Principal {
  subscriptionId: string;
  wallet: string;
  scopes: ReadonlySet<string>;
  rateLimitPerMinute: number;
}

/** Looks a key hash up; an unknown or revoked key is a result (null), not an exception. */
export async function findActiveKey(db: Db, keyHash: string): Promise<Principal | null> {
  const [row] = await db
    .select({
      subscriptionId: subscriptions.id,
      wallet: subscriptions.wallet,
      scopes: subscriptions.scopes,
      rateLimitPerMinute: subscriptions.rateLimitPerMinute,
    })
    .from(subscriptionKeys)
    .innerJoin(subscriptions, eq(subscriptions.id, subscriptionKeys.subscriptionId))
    .where(and(eq(subscriptionKeys.keyHash, keyHash), isNull(subscriptionKeys.revokedAt), eq(subscriptions.status, 'active')));
  if (row === undefined) return null;
  return { ...row, scopes: new Set(row.scopes) };
}
