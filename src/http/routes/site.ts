import { Type } from '@sinclair/typebox';
import type { Deps } from '../../deps.ts';
import { keyErrors, security } from '../schemas.ts';
import type { App } from './index.ts';

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
          200: Type.Object({
            containerType: Type.Union([Type.Literal('partner'), Type.Literal('platform')]),
            brandKey: Type.String(),
          }),
          ...keyErrors(),
        },
      },
    },
    async () => ({ containerType, brandKey }),
  );
}
