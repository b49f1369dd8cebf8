/**
 * Subscription keys as the admin app manages them (src/gateway/subscriptions.ts holds the rules of
 * a subscription). A merchant manages its own wallet's subscriptions; a superadmin manages any,
 * and alone may set a custom rate limit. Built once per app (src/deps.ts) with the app's key
 * cache, so a key rotated or revoked here stops working at once, and each route handler is one
 * call with a params object.
 */
import type { Db } from '../db/client.ts';
import { Forbidden, InvalidInput, NotFound } from '../lib/errors.ts';
import { isAddress, normalizeWallet } from '../domain/wallet.ts';
import type { Role } from '../contract/roles.ts';
import type { CreateSubscriptionBody, KeyRotated, SubscriptionRevoked } from '../contract/subscriptions.ts';
import type { KeyResolver } from './key-resolver.ts';
import {
  createSubscription,
  getSubscription,
  listSubscriptions,
  revokeSubscription,
  rotateKey,
  type KeySlot,
  type SubscriptionView,
} from './subscriptions.ts';

/** The signed-in wallet that manages subscriptions, and its roles. */
export interface Manager {
  wallet: string;
  roles: readonly Role[];
}

const isSuper = (m: Manager) => m.roles.includes('superadmin');

export interface SubscriptionServiceOptions {
  db: Db;
  /** The app's key cache: keys rotated or revoked here are dropped from it at once. */
  keys: KeyResolver;
  now?: () => number;
}

export class SubscriptionService {
  private readonly now: () => number;

  constructor(private readonly o: SubscriptionServiceOptions) {
    this.now = o.now ?? Date.now;
  }

  /** GET /api/admin/subscriptions: the manager's own, or (a superadmin) another wallet's. */
  async list(p: { by: Manager; wallet?: string | undefined }): Promise<{ subscriptions: SubscriptionView[] }> {
    let wallet = p.by.wallet;
    if (p.wallet !== undefined) {
      if (!isAddress(p.wallet)) throw new InvalidInput('wallet must be a 0x-prefixed 40-hex address', 'invalid_wallet');
      if (!isSuper(p.by) && normalizeWallet(p.wallet) !== p.by.wallet) {
        throw new Forbidden("Only a superadmin lists another wallet's subscriptions");
      }
      wallet = normalizeWallet(p.wallet);
    }
    return { subscriptions: await listSubscriptions(this.o.db, wallet) };
  }

  /** POST /api/admin/subscriptions: both keys in the answer, shown only this once. */
  async create(p: { by: Manager; input: CreateSubscriptionBody }) {
    const { by, input } = p;
    const wallet = input.wallet === undefined ? by.wallet : input.wallet;
    if (!isAddress(wallet)) throw new InvalidInput('wallet must be a 0x-prefixed 40-hex address', 'invalid_wallet');
    if (normalizeWallet(wallet) !== by.wallet && !isSuper(by)) {
      throw new Forbidden('Only a superadmin creates subscriptions for another wallet');
    }
    if (input.rateLimitPerMinute !== undefined && !isSuper(by)) {
      throw new Forbidden('Only a superadmin sets a custom rate limit');
    }
    // Field by field: the body may carry extra properties, and none of them may reach the rules
    // (maxActive, the per-merchant cap, is not the caller's to set).
    return createSubscription(
      this.o.db,
      {
        wallet,
        product: input.product,
        scopes: input.scopes,
        name: input.name,
        rateLimitPerMinute: input.rateLimitPerMinute,
        grantedBySuperadmin: isSuper(by),
      },
      this.now(),
    );
  }

  /** POST /api/admin/subscriptions/{id}/rotate: a new key in one slot; the other keeps working. */
  async rotate(p: { by: Manager; id: string; slot: KeySlot }): Promise<KeyRotated> {
    await this.#owned(p.by, p.id);
    const rotated = await rotateKey(this.o.db, p.id, p.slot, this.now());
    this.o.keys.forget(rotated.revokedHashes);
    return { id: p.id, slot: rotated.slot, key: rotated.key };
  }

  /** DELETE /api/admin/subscriptions/{id}: the subscription and both its keys revoked. */
  async revoke(p: { by: Manager; id: string }): Promise<SubscriptionRevoked> {
    await this.#owned(p.by, p.id);
    const { revokedHashes } = await revokeSubscription(this.o.db, p.id, this.now());
    this.o.keys.forget(revokedHashes);
    return { ok: true, id: p.id, status: 'revoked' };
  }

  /** A subscription the manager may manage; another merchant's is 404, not 403. */
  async #owned(by: Manager, id: string): Promise<SubscriptionView> {
    const sub = await getSubscription(this.o.db, id);
    if (sub.wallet !== by.wallet && !isSuper(by)) throw new NotFound(`Subscription ${id} not found`);
    return sub;
  }
}
