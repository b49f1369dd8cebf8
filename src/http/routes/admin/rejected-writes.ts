/**
 * Writes acknowledged during a database outage that could never apply (src/journal/journal.ts):
 * shown to their merchant, newest first, rather than dropped silently.
 */
import type { Deps } from '../../../deps.ts';
import { merchantOf } from '../../../gateway/plugin.ts';
import { adminErrors, cookieAuth } from '../../../contract/common.ts';
import { RejectedWriteList, RejectedWritesQuery, type JournaledWriteKind } from '../../../contract/rejected-writes.ts';
import type { App } from '../../app-type.ts';

export function adminRejectedWriteRoutes(app: App, deps: Deps): void {
  app.get(
    '/api/admin/rejected-writes',
    {
      config: { auth: 'session' },
      schema: {
        tags: ['admin'],
        summary: 'Writes accepted during a database outage that could never be applied',
        description:
          'While the database is unreachable, receipt creations and tracking statuses are acknowledged and kept in a local ' +
          'journal. One that cannot apply once the database is back (its id was taken by another request with another body, ' +
          'or its receipt never reached the database) is listed here and sent to webhooks as write.rejected.',
        security: cookieAuth,
        querystring: RejectedWritesQuery,
        response: { 200: RejectedWriteList, ...adminErrors },
      },
    },
    async (request) => {
      const rows = await deps.stores.rejectedWrites.list({ wallet: merchantOf(request), limit: request.query.limit ?? 50 });
      return {
        writes: rows.map((r) => ({
          writeId: r.writeId,
          kind: r.kind as JournaledWriteKind,
          receiptId: r.receiptId,
          reason: r.reason,
          acknowledgedAt: r.acknowledgedAt,
          rejectedAt: r.rejectedAt,
          request: requestOf(r.entry),
        })),
      };
    },
  );
}

/** The journaled request without what only the service uses (the pay token is a credential; the hash is internal). */
function requestOf(entry: Record<string, unknown>): Record<string, unknown> {
  const { payToken: _token, requestHash: _hash, ...rest } = (entry.payload ?? {}) as Record<string, unknown>;
  return rest;
}
