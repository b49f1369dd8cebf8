import { Type } from '@sinclair/typebox';
import type { Deps } from '../../deps.ts';
import type { App } from './index.ts';

export function healthRoutes(app: App, deps: Deps): void {
  app.get(
    '/healthz',
    {
      schema: {
        tags: ['health'],
        summary: 'Liveness and database reachability (no key)',
        response: {
          200: Type.Object({
            status: Type.Literal('ok'),
            database: Type.Union([Type.Literal('up'), Type.Literal('unavailable')]),
            journalPending: Type.Integer({ description: 'Writes waiting in the local journal for the database' }),
          }),
        },
      },
    },
    async () => {
      const up = await deps.database.ping().then(
        () => true,
        () => false,
      );
      return { status: 'ok' as const, database: up ? ('up' as const) : ('unavailable' as const), journalPending: deps.journal.pending };
    },
  );
}
