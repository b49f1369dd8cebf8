/** The shop configuration: GET /api/shop/config (key) and POST /api/shop/config (admin). */
import { Type, type Static } from '@sinclair/typebox';
import { HANDLER_CHECKS } from './common.ts';

/** Limits src/domain/shop.ts enforces. */
export const MAX_JURISDICTIONS = 200;
export const MAX_COMPONENTS = 20;
export const MAX_EMBED_ORIGINS = 20;

export const TaxRate = (description: string) =>
  Type.Number({ minimum: 0, maximum: 1, description: `${description}. Fraction with at most six decimals: 0.0825 means 8.25%`, examples: [0.0825] });

const TaxComponents = Type.Array(Type.String({ minLength: 1, maxLength: 64 }), {
  maxItems: MAX_COMPONENTS,
  description: 'Names of the taxes the rate is made of',
  examples: [['state', 'county']],
});

export const ShopConfig = Type.Object({
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
export type ShopConfig = Static<typeof ShopConfig>;

export const ShopConfigAnswer = Type.Object({ config: ShopConfig }, { description: "The merchant's shop configuration" });
export type ShopConfigAnswer = Static<typeof ShopConfigAnswer>;

/** The configuration as POST /api/shop/config stored it (the same fields as ShopConfig). */
const SavedShopConfig = Type.Object({
  name: Type.Union([Type.String(), Type.Null()], { description: 'null until the merchant names the shop', examples: ['Corner Café'] }),
  brandName: Type.String({ description: "The shop's name, else the deployment's brand", examples: ['Corner Café'] }),
  processingFeePct: Type.Number({ minimum: 0, maximum: 100, description: 'Percentage: 2.5 means 2.5%', examples: [2.5], [HANDLER_CHECKS]: { multipleOf: 0.01 } }),
  taxJurisdictions: Type.Array(
    Type.Object({ code: Type.String({ examples: ['CA'] }), rate: TaxRate('The rate'), components: Type.Array(Type.String(), { examples: [['state']] }) }),
  ),
  allowedEmbedOrigins: Type.Array(Type.String({ examples: ['https://shop.example'] })),
});

export const SaveShopConfigBody = Type.Object(
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
);
export type SaveShopConfigBody = Static<typeof SaveShopConfigBody>;

export const ShopConfigSaved = Type.Object({ ok: Type.Literal(true), config: SavedShopConfig }, { description: 'Saved; the configuration as stored' });
export type ShopConfigSaved = Static<typeof ShopConfigSaved>;
