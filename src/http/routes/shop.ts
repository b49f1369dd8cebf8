/** /api/shop/*: the shop configuration, read with a key, saved from the admin app. */
import type { Deps } from '../../deps.ts';
import { sessionOf } from '../../auth/plugin.ts';
import { merchantOf } from '../../gateway/plugin.ts';
import { adminErrors, cookieAuth, keyErrors, security } from '../../contract/common.ts';
import { SaveShopConfigBody, ShopConfigAnswer, ShopConfigSaved } from '../../contract/shop.ts';
import type { App } from '../app-type.ts';

export function shopRoutes(app: App, deps: Deps): void {
  app.get(
    '/api/shop/config',
    {
      config: { auth: 'key', scope: 'shop:read' },
      schema: {
        tags: ['shop'],
        summary: "The merchant's shop configuration (defaults when unconfigured)",
        security,
        response: { 200: ShopConfigAnswer, ...keyErrors() },
      },
    },
    async (request) => deps.shop.config({ wallet: merchantOf(request) }),
  );

  app.post(
    '/api/shop/config',
    {
      config: { auth: 'session' },
      schema: {
        tags: ['admin'],
        summary: 'Save shop settings',
        security: cookieAuth,
        description: 'processingFeePct is required; the fields left out keep their stored values.',
        body: SaveShopConfigBody,
        response: {
          200: ShopConfigSaved,
          ...adminErrors,
        },
      },
    },
    async (request) => deps.shop.save({ wallet: sessionOf(request).wallet, input: request.body }),
  );
}
