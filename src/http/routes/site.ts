import { Type } from '@sinclair/typebox';
import type { Deps } from '../../deps.ts';
import { keyErrors, security, stringEnum } from '../schemas.ts';
import type { App } from '../app-type.ts';

export function siteRoutes(app: App, deps: Deps): void {
  const { containerType, brandKey } = deps.config;

  app.get(
    '/api/site/container',
    {
      // Any valid key: the container identity is not merchant data, so no scope guards it.
      config: { auth: 'key' },
      schema: {
        tags: ['site'],
        summary: 'Which container this deployment is',
        security,
        response: {
          200: Type.Object(
            {
              containerType: stringEnum(['platform', 'partner'], {
                description: 'CONTAINER_TYPE: a partner container serves only its own brand; a platform container serves every brand',
              }),
              brandKey: Type.String({ description: "BRAND_KEY: this container's brand, [a-z0-9-]{1,64}", examples: ['splitline'] }),
            },
            { description: "This deployment's container identity" },
          ),
          ...keyErrors(),
        },
      },
    },
    async () => ({ containerType, brandKey }),
  );
}
