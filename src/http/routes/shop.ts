import { Type } from '@sinclair/typebox';
import type { Deps } from '../../deps.ts';
import { getShopConfig } from '../../domain/shop.ts';
import { merchantOf } from '../../gateway/plugin.ts';
import { HANDLER_CHECKS, keyErrors, security } from '../schemas.ts';
import type { App } from './index.ts';

const ShopConfig = Type.Object({
  name: Type.Union([Type.String(), Type.Null()], { description: 'null until the merchant names the shop', examples: ['Corner Café'] }),
  brandName: Type.String({ description: "The shop's name, else the deployment's brand", examples: ['Corner Café'] }),
  processingFeePct: Type.Number({
    minimum: 0,
    maximum: 100,
    description: 'Percentage added to orders as a processing fee line: 2.5 means 2.5%',
    examples: [2.5],
    [HANDLER_CHECKS]: { multipleOf: 0.01 },
  }),
  taxJurisdictions: Type.Array(
    Type.Object({
      code: Type.String({ examples: ['CA'] }),
      rate: Type.Number({ minimum: 0, maximum: 1, description: 'Fraction: 0.0825 means 8.25%', examples: [0.0825] }),
      components: Type.Array(Type.String(), { examples: [['state']] }),
    }),
  ),
  allowedEmbedOrigins: Type.Array(Type.String({ examples: ['https://shop.example'] }), { description: 'Origins that may frame the payment page' }),
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
        response: { 200: Type.Object({ config: ShopConfig }, { description: "The merchant's shop configuration" }), ...keyErrors() },
      },
    },
    async (request) => ({ config: await getShopConfig(database.db, merchantOf(request), config.brandName) }),
  );
}
