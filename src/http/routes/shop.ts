import { Type } from '@sinclair/typebox';
import type { Deps } from '../../deps.ts';
import { getShopConfig } from '../../domain/shop.ts';
import { merchantOf } from '../../gateway/plugin.ts';
import { keyErrors, security } from '../schemas.ts';
import type { App } from './index.ts';

const ShopConfig = Type.Object({
  name: Type.Union([Type.String(), Type.Null()], { description: 'null until the merchant names the shop' }),
  brandName: Type.String({ description: "The shop's name, else the deployment's brand" }),
  processingFeePct: Type.Number({ description: 'Percentage added to orders as a processing fee line: 2.5 means 2.5%' }),
  taxJurisdictions: Type.Array(
    Type.Object({
      code: Type.String(),
      rate: Type.Number({ description: 'Fraction: 0.0825 means 8.25%' }),
      components: Type.Array(Type.String()),
    }),
  ),
  allowedEmbedOrigins: Type.Array(Type.String(), { description: 'Origins that may frame the payment page' }),
});

export function shopRoutes(app: App, deps: Deps): void {
  const { database, config } = deps;

  app.get(
    '/api/shop/config',
    {
      config: { scope: 'shop:read' },
      schema: {
        tags: ['shop'],
        summary: "The merchant's shop configuration (defaults when unconfigured)",
        security,
        response: { 200: Type.Object({ config: ShopConfig }), ...keyErrors() },
      },
    },
    async (request) => ({ config: await getShopConfig(database.db, merchantOf(request), config.brandName) }),
  );
}
