/**
 * Writes acknowledged during a database outage that could never apply (src/journal/journal.ts):
 * shown to their merchant, newest first, rather than dropped silently.
 */
import { Type } from '@sinclair/typebox';
import { desc, eq } from 'drizzle-orm';
import type { Deps } from '../../../deps.ts';
import { rejectedWrites } from '../../../db/schema.ts';
import { merchantOf } from '../../../gateway/plugin.ts';
import { adminErrors, cookieAuth } from '../../schemas.ts';
import type { App } from '../../app-type.ts';

const RejectedWrite = Type.Object({
  writeId: Type.String(),
  kind: Type.Union([Type.Literal('receipt.create'), Type.Literal('receipt.status')]),
  receiptId: Type.Union([Type.String(), Type.Null()], { examples: ['order-1001'] }),
  reason: Type.String({
    description: 'Why it can never apply, starting with a code: conflict, receipt_not_found, ...',
    examples: ['conflict: receipt order-1001 exists with another body'],
  }),
  acknowledgedAt: Type.Integer({ description: 'When the client was told it was accepted (Unix ms)' }),
  rejectedAt: Type.Integer({ description: 'When replay found it could never apply (Unix ms)' }),
  request: Type.Record(Type.String(), Type.Unknown(), {
    description: 'What the request asked for, as journaled',
    examples: [{ id: 'order-1001', lineItems: [{ label: 'Flat white', priceUsd: 3.5, qty: 2 }], totalUsd: 7 }],
  }),
});

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
        querystring: Type.Object({ limit: Type.Optional(Type.Integer({ minimum: 1, maximum: 200, default: 50, description: 'How many, newest first' })) }),
        response: { 200: Type.Object({ writes: Type.Array(RejectedWrite) }, { description: 'The rejected writes, newest first' }), ...adminErrors },
      },
    },
    async (request) => {
      const rows = await deps.database.db
        .select()
        .from(rejectedWrites)
        .where(eq(rejectedWrites.wallet, merchantOf(request)))
        .orderBy(desc(rejectedWrites.rejectedAt))
        .limit(request.query.limit ?? 50);
      return {
        writes: rows.map((r) => ({
          writeId: r.writeId,
          kind: r.kind as 'receipt.create' | 'receipt.status',
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
