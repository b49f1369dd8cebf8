import type { Deps } from '../../deps.ts';
import { keyErrors, security } from '../../contract/common.ts';
import { SiteContainer } from '../../contract/site.ts';
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
          200: SiteContainer,
          ...keyErrors(),
        },
      },
    },
    () => ({ containerType, brandKey }),
  );
}
