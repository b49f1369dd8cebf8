/** Tracking statuses (no credential) and the sensitive ones the admin app sets. */
import type { Deps } from '../../../deps.ts';
import { isSensitiveStatus } from '../../../domain/receipts.ts';
import { requireSession } from '../../../auth/plugin.ts';
import { writeOf } from '../../idempotency.ts';
import { errorRef } from '../../../contract/common.ts';
import { RecordStatusBody, StatusRecorded } from '../../../contract/receipts.ts';
import type { App } from '../../app-type.ts';

export function receiptStatusRoutes(app: App, deps: Deps): void {
  const siteOrigin = new URL(deps.config.siteUrl).origin;

  app.post(
    '/api/receipts/status',
    {
      config: { auth: 'public' },
      attachValidation: true,
      // A sensitive status's Idempotency-Key belongs to the signed-in wallet, not to the client
      // address (two merchants behind one proxy would share it): the session is known before the
      // key is looked up. A wrong session is left to the service, which answers it 403.
      preValidation: async (request) => {
        const status = (request.body as { status?: unknown } | undefined)?.status;
        if (typeof status !== 'string' || !isSensitiveStatus(status)) return;
        await requireSession(request, deps.auth, siteOrigin).catch(() => undefined);
      },
      schema: {
        tags: ['receipts'],
        summary: 'Record a tracking status (no credential)',
        description:
          'Tracking statuses (link_opened, buyer_logged_in, checkout_initialized) need no credential and are ' +
          'rate-limited per client address; they answer {ok: true} whether or not the receipt exists, and a status ' +
          "sent again is counted on the receipt's one history entry for it. Sensitive statuses (checkout_success, " +
          'refund_*) need the admin session. While the database is unreachable, a tracking status is kept for replay ' +
          'only for a receipt this instance still holds in its journal (answered with degraded: true); any other is 503 ' +
          'database_unavailable with Retry-After: nothing was written, send it again later.',
        body: RecordStatusBody,
        errorCodes: { 400: ['missing_receipt_id', 'invalid_wallet', 'missing_status'] },
        response: {
          200: StatusRecorded,
          400: errorRef,
          403: errorRef,
          404: errorRef,
          429: errorRef,
          500: errorRef,
          503: errorRef,
        },
      },
    },
    async (request) =>
      deps.receipts.recordStatus({ body: request.body, session: () => requireSession(request, deps.auth, siteOrigin), write: writeOf(request) }),
  );
}
