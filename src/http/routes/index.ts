import type { Deps } from '../../deps.ts';
import type { App } from '../app-type.ts';
import { healthRoutes } from './health.ts';
import { receiptRoutes } from './receipts/index.ts';
import { userRoutes } from './users.ts';
import { splitRoutes } from './split.ts';
import { siteRoutes } from './site.ts';
import { inventoryRoutes } from './inventory.ts';
import { orderRoutes } from './orders.ts';
import { shopRoutes } from './shop.ts';
import { registerAdminRoutes } from './admin/index.ts';
import { payRoutes } from './pay.ts';
import { devChainRoutes } from './dev-chain.ts';
import { eventRoutes } from './events.ts';

export function registerRoutes(app: App, deps: Deps): void {
  healthRoutes(app, deps);
  receiptRoutes(app, deps);
  userRoutes(app, deps);
  splitRoutes(app, deps);
  siteRoutes(app, deps);
  inventoryRoutes(app, deps);
  orderRoutes(app, deps);
  eventRoutes(app, deps);
  shopRoutes(app, deps);
  registerAdminRoutes(app, deps);
  payRoutes(app, deps);
  devChainRoutes(app, deps);
}
