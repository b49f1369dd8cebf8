/** The events API: every event the webhooks send, to read back after downtime (DESIGN.md "Integrator API"). */
import type { Deps } from '../../deps.ts';
import { merchantOf } from '../../gateway/plugin.ts';
import { keyErrors, security } from '../../contract/common.ts';
import { Event, EventIdParams, EventList, EVENT_RETENTION_DAYS, ListEventsQuery } from '../../contract/events.ts';
import type { WebhookEventType } from '../../contract/webhooks.ts';
import type { App } from '../app-type.ts';

export function eventRoutes(app: App, deps: Deps): void {
  app.get(
    '/api/events',
    {
      config: { auth: 'key', scope: 'events:read' },
      schema: {
        tags: ['events'],
        summary: 'List events, newest first, a page at a time',
        description:
          `Every event the webhooks send, whether or not an endpoint is registered, for ${EVENT_RETENTION_DAYS} days: each exactly as its ` +
          'delivery carries it. To catch up after downtime, walk the pages with starting_after until has_more is false, ' +
          'and skip the ids already handled (a delivery\'s webhook-id is the event id).',
        security,
        querystring: ListEventsQuery,
        response: { 200: EventList, ...keyErrors(400) },
      },
    },
    async (request) => {
      const q = request.query;
      // The schema's enum checked the type; the type provider reads an Unsafe schema as unknown.
      return deps.events.list({ wallet: merchantOf(request), limit: q.limit, type: q.type as WebhookEventType | undefined, startingAfter: q.starting_after });
    },
  );

  app.get(
    '/api/events/:id',
    {
      config: { auth: 'key', scope: 'events:read' },
      schema: {
        tags: ['events'],
        summary: 'One event',
        description: `An event of the last ${EVENT_RETENTION_DAYS} days, as its webhook delivery carries it; older, or another merchant's: 404.`,
        security,
        params: EventIdParams,
        response: { 200: Event, ...keyErrors(404) },
      },
    },
    async (request) => deps.events.get({ wallet: merchantOf(request), id: request.params.id }),
  );
}
