/**
 * What the admin app needs to know about this deployment: the platform recipient the split must
 * include (pre-filled and locked in the split editor), the chain and the brand, and which brands'
 * packages this container serves (the devices page).
 */
import type { Deps } from '../../../deps.ts';
import { adminErrors, cookieAuth } from '../../../contract/common.ts';
import { Platform } from '../../../contract/platform.ts';
import type { App } from '../../app-type.ts';

export function adminPlatformRoutes(app: App, deps: Deps): void {
  const { platformRecipientAddress, platformFeeBps, chainId, brandName, containerType, brandKey } = deps.config;

  app.get(
    '/api/admin/platform',
    {
      config: { auth: 'session' },
      schema: {
        tags: ['admin'],
        summary: "The deployment's platform recipient, chain and brand",
        description: 'Every split must give the platform recipient exactly platformFeeBps.',
        security: cookieAuth,
        response: {
          200: Platform,
          ...adminErrors,
        },
      },
    },
    () => ({
      platformRecipientAddress: platformRecipientAddress ?? null,
      platformFeeBps,
      chainId,
      brandName,
      containerType,
      brandKey,
    }),
  );
}
