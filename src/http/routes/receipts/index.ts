/**
 * /api/receipts/*: every receipt operation, whatever credential it takes (each route's config
 * says which: a key and its scope, the admin session, or none).
 */
import type { Deps } from '../../../deps.ts';
import type { App } from '../../app-type.ts';
import { receiptCreateRoutes } from './create.ts';
import { receiptReadRoutes } from './read.ts';
import { receiptRefundRoutes } from './refunds.ts';
import { receiptStatusRoutes } from './status.ts';
import { receiptTerminalRoutes } from './terminal.ts';

export function receiptRoutes(app: App, deps: Deps): void {
  receiptReadRoutes(app, deps);
  receiptCreateRoutes(app, deps);
  receiptStatusRoutes(app, deps);
  receiptRefundRoutes(app, deps);
  receiptTerminalRoutes(app, deps);
}
