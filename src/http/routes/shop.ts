/** /api/shop/*: the shop configuration, read with a key, saved from the admin app. */
import { Type } from '@sinclair/typebox';
import type { Deps } from '../../deps.ts';
import { getShopConfig, MAX_COMPONENTS, MAX_EMBED_ORIGINS, MAX_JURISDICTIONS, saveShopConfig, toShopConfigView } from '../../domain/shop.ts';
import { sessionOf } from '../../auth/plugin.ts';
import { merchantOf } from '../../gateway/plugin.ts';
import { adminErrors, cookieAuth, HANDLER_CHECKS, keyErrors, security } from '../schemas.ts';
import type { App } from '../app-type.ts';

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

const TaxRate = (description: string) =>
  Type.Number({ minimum: 0, maximum: 1, description: `${description}. Fraction with at most six decimals: 0.0825 means 8.25%`, examples: [0.0825] });

const TaxComponents = Type.Array(Type.String({ minLength: 1, maxLength: 64 }), {
  maxItems: MAX_COMPONENTS,
  description: 'Names of the taxes the rate is made of',
  examples: [['state', 'county']],
});

const ShopConfigView = Type.Object({
  name: Type.Union([Type.String(), Type.Null()], { description: 'null until the merchant names the shop', examples: ['Corner Café'] }),
  brandName: Type.String({ description: "The shop's name, else the deployment's brand", examples: ['Corner Café'] }),
  processingFeePct: Type.Number({ minimum: 0, maximum: 100, description: 'Percentage: 2.5 means 2.5%', examples: [2.5], [HANDLER_CHECKS]: { multipleOf: 0.01 } }),
  taxJurisdictions: Type.Array(
    Type.Object({ code: Type.String({ examples: ['CA'] }), rate: TaxRate('The rate'), components: Type.Array(Type.String(), { examples: [['state']] }) }),
  ),
  allowedEmbedOrigins: Type.Array(Type.String({ examples: ['https://shop.example'] })),
});

export function shopRoutes(app: App, deps: Deps): void {
  const { database, config } = deps;

  app.get(
    '/api/shop/config',
    {
      config: { auth: 'key', scope: 'shop:read' },
      schema: {
        tags: ['shop'],
        summary: "The merchant's shop configuration (defaults when unconfigured)",
        security,
        response: { 200: Type.Object({ config: ShopConfig }, { description: "The merchant's shop configuration" }), ...keyErrors() },
      },
    },
    async (request) => ({ config: await getShopConfig(database.db, merchantOf(request), config.brandName) }),
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
        body: Type.Object(
          {
            processingFeePct: Type.Number({
              minimum: 0,
              maximum: 100,
              description: 'Percentage added to orders as a fee line, at most two decimals: 2.5 means 2.5%',
              [HANDLER_CHECKS]: { multipleOf: 0.01 },
            }),
            name: Type.Optional(Type.String({ minLength: 1, maxLength: 100, pattern: '\\S', description: 'Shown on receipts and the payment page' })),
            allowedEmbedOrigins: Type.Optional(
              Type.Array(Type.String({ maxLength: 300, description: 'An http(s) origin with no path, such as https://shop.example' }), {
                maxItems: MAX_EMBED_ORIGINS,
                description: 'Origins that may frame the payment page',
              }),
            ),
            taxJurisdictions: Type.Optional(
              Type.Array(
                Type.Object({
                  code: Type.String({ pattern: '^[A-Za-z0-9-]{1,32}$', description: 'Unique, whatever the letter case' }),
                  rate: TaxRate('The rate'),
                  components: Type.Optional(TaxComponents),
                }),
                { maxItems: MAX_JURISDICTIONS },
              ),
            ),
          },
          {
            examples: [
              {
                processingFeePct: 2.5,
                name: 'Corner Café',
                allowedEmbedOrigins: ['https://shop.example'],
                taxJurisdictions: [{ code: 'CA', rate: 0.0825, components: ['state', 'county'] }],
              },
            ],
          },
        ),
        response: {
          200: Type.Object({ ok: Type.Literal(true), config: ShopConfigView }, { description: 'Saved; the configuration as stored' }),
          ...adminErrors,
        },
      },
    },
    async (request) => {
      const settings = await saveShopConfig(database.db, sessionOf(request).wallet, request.body);
      return { ok: true, config: toShopConfigView(settings, config.brandName) };
    },
  );
}
