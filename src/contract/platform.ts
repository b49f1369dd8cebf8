/** What the admin app needs to know about this deployment: GET /api/admin/platform. */
import { Type, type Static } from '@sinclair/typebox';
import { Wallet } from './common.ts';

export const Platform = Type.Object({
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
}, { description: "The deployment's settings the admin app shows" });
export type Platform = Static<typeof Platform>;
