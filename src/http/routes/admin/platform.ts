/**
 * What the admin app needs to know about this deployment: the platform recipient the split must
 * include (pre-filled and locked in the split editor), the chain and the brand.
 */
import { Type } from '@sinclair/typebox';
import type { Deps } from '../../../deps.ts';
import { adminErrors, cookieAuth } from './merchant.ts';
import type { App } from '../index.ts';

export function adminPlatformRoutes(app: App, deps: Deps): void {
  const { platformRecipientAddress, platformFeeBps, chainId, brandName } = deps.config;

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
          200: Type.Object({
            platformRecipientAddress: Type.Union([Type.String(), Type.Null()], {
              description: 'null when PLATFORM_RECIPIENT_ADDRESS is not configured',
            }),
            platformFeeBps: Type.Integer({ description: '10000 = 100%' }),
            chainId: Type.Integer(),
            brandName: Type.String(),
          }),
          ...adminErrors,
        },
      },
    },
    async () => ({
      platformRecipientAddress: platformRecipientAddress ?? null,
      platformFeeBps,
      chainId,
      brandName,
    }),
  );
}
