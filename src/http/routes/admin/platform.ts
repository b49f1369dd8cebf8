/**
 * What the admin app needs to know about this deployment: the platform recipient the split must
 * include (pre-filled and locked in the split editor), the chain and the brand, and which brands'
 * packages this container serves (the devices page).
 */
import { Type } from '@sinclair/typebox';
import type { Deps } from '../../../deps.ts';
import { adminErrors, cookieAuth, Wallet } from '../../schemas.ts';
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
          200: Type.Object({
            platformRecipientAddress: Type.Union([Wallet, Type.Null()], {
              description: 'null when PLATFORM_RECIPIENT_ADDRESS is not configured',
            }),
            platformFeeBps: Type.Integer({ minimum: 0, maximum: 10_000, description: '10000 = 100%', examples: [50] }),
            chainId: Type.Integer({ examples: [31337] }),
            brandName: Type.String({ examples: ['Splitline'] }),
            containerType: Type.Union([Type.Literal('platform'), Type.Literal('partner')], {
              description: 'CONTAINER_TYPE: a partner container serves only its own brand (the APK route, the devices page)',
            }),
            brandKey: Type.String({ description: "BRAND_KEY: this container's brand, [a-z0-9-]{1,64}", examples: ['splitline'] }),
          }, { description: "The deployment's settings the admin app shows" }),
          ...adminErrors,
        },
      },
    },
    async () => ({
      platformRecipientAddress: platformRecipientAddress ?? null,
      platformFeeBps,
      chainId,
      brandName,
      containerType,
      brandKey,
    }),
  );
}
