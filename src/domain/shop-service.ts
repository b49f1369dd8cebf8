/**
 * The shop configuration as the API serves it: read with a key, saved from the admin app. Built
 * once per app (src/deps.ts), so each route handler is one call with a params object.
 */
import type { Db } from '../db/client.ts';
import { getShopConfig, saveShopConfig, toShopConfigView, type ShopConfigInput, type ShopConfigView } from './shop.ts';

export interface ShopServiceOptions {
  db: Db;
  /** The brand of merchants who have not named their shop. */
  brandName: string;
  now?: () => number;
}

export class ShopService {
  private readonly now: () => number;

  constructor(private readonly o: ShopServiceOptions) {
    this.now = o.now ?? Date.now;
  }

  /** GET /api/shop/config: the merchant's configuration, defaults when unconfigured. */
  async config(p: { wallet: string }): Promise<{ config: ShopConfigView }> {
    return { config: await getShopConfig(this.o.db, p.wallet, this.o.brandName) };
  }

  /** POST /api/shop/config: stores the settings; fields left out keep their stored values. */
  async save(p: { wallet: string; input: ShopConfigInput }): Promise<{ ok: true; config: ShopConfigView }> {
    const settings = await saveShopConfig(this.o.db, p.wallet, p.input, this.now());
    return { ok: true, config: toShopConfigView(settings, this.o.brandName) };
  }
}
