/** POS terminal receipts from the admin app (session cookie + CSRF); the service adds the tax line. */
import type { Deps } from '../../../deps.ts';
import { sessionOf } from '../../../auth/plugin.ts';
import { normalizeWallet } from '../../../domain/wallet.ts';
import { writeOf } from '../../idempotency.ts';
import { adminErrors, cookieAuth } from '../../../contract/common.ts';
import { TerminalBody, TerminalCreated } from '../../../contract/terminal.ts';
import type { App } from '../../app-type.ts';

export function receiptTerminalRoutes(app: App, deps: Deps): void {
  app.post(
    '/api/receipts/terminal',
    {
      config: { auth: 'session' },
      attachValidation: true,
      schema: {
        tags: ['admin'],
        summary: 'Create a POS terminal receipt; the service adds the tax line',
        description: 'The receipt belongs to the signed-in wallet; any wallet header a client sends is ignored.',
        security: cookieAuth,
        body: TerminalBody,
        errorCodes: { 400: ['invalid_amount'], 403: ['split_required'] },
        response: {
          200: TerminalCreated,
          ...adminErrors,
        },
      },
    },
    async (request) => deps.terminal.sell({ wallet: normalizeWallet(sessionOf(request).wallet), input: request.body ?? {}, write: writeOf(request) }),
  );
}
