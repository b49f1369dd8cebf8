/** Which container this deployment is: GET /api/site/container. */
import { Type, type Static } from '@sinclair/typebox';
import { CONTAINER_TYPES, stringEnum } from './common.ts';

export const SiteContainer = Type.Object(
  {
    containerType: stringEnum(CONTAINER_TYPES, {
      description: 'CONTAINER_TYPE: a partner container serves only its own brand; a platform container serves every brand',
    }),
    brandKey: Type.String({ description: "BRAND_KEY: this container's brand, [a-z0-9-]{1,64}", examples: ['splitline'] }),
  },
  { description: "This deployment's container identity" },
);
export type SiteContainer = Static<typeof SiteContainer>;
