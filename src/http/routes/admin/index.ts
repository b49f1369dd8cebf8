import type { Deps } from '../../../deps.ts';
import { authRoutes } from '../auth.ts';
import type { App } from '../../app-type.ts';
import { adminPlatformRoutes } from './platform.ts';
import { adminRoleRoutes } from './roles.ts';
import { adminSubscriptionRoutes } from './subscriptions.ts';
import { adminUserRoutes } from './users.ts';
import { adminWebhookRoutes } from './webhooks.ts';
import { adminSweepRoutes } from './sweeps.ts';
import { adminSweepStatusRoutes } from './sweep-status.ts';
import { adminSplitBalanceRoutes } from './split-balances.ts';
import { adminSplitPayoutRoutes } from './split-payouts.ts';
import { adminSplitVersionRoutes } from './split-versions.ts';
import { apkRoutes } from './apk.ts';
import { adminRejectedWriteRoutes } from './rejected-writes.ts';

/** Sign-in and every admin operation (session cookie + CSRF; never a subscription key). */
export function registerAdminRoutes(app: App, deps: Deps): void {
  authRoutes(app, deps);
  adminSubscriptionRoutes(app, deps);
  adminRoleRoutes(app, deps);
  adminUserRoutes(app, deps);
  adminWebhookRoutes(app, deps);
  adminPlatformRoutes(app, deps);
  adminSweepRoutes(app, deps);
  adminSweepStatusRoutes(app, deps);
  adminSplitBalanceRoutes(app, deps);
  adminSplitPayoutRoutes(app, deps);
  adminSplitVersionRoutes(app, deps);
  adminRejectedWriteRoutes(app, deps);
  // Encapsulated: its raw-body content-type parser must not reach other routes.
  void app.register((scope, _opts, done) => {
    apkRoutes(scope, deps);
    done();
  });
}
