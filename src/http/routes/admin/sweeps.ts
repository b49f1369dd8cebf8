/**
 * The sweep of a receipt's payment address as a transaction the merchant sends from their own
 * wallet (src/payments/manual-sweep.ts).
 */
import { Type } from '@sinclair/typebox';
import type { Deps } from '../../../deps.ts';
import { AppError } from '../../../domain/errors.ts';
import { merchantOf } from '../../../gateway/plugin.ts';
import { manualSweep } from '../../../payments/manual-sweep.ts';
import { adminErrors, cookieAuth, WALLET, Wallet } from '../../schemas.ts';
import type { App } from '../../app-type.ts';

export function adminSweepRoutes(app: App, deps: Deps): void {
  app.get(
    '/api/admin/receipts/:id/sweep',
    {
      config: { auth: 'session' },
      schema: {
        tags: ['admin'],
        summary: "The transaction that sweeps a receipt's payment address into the split",
        description:
          'For the merchant to send from their own wallet (eth_sendTransaction with `transaction`): when no key here pays ' +
          "the sweeps' gas, or for a token the worker does not sweep (`token`, default the receipt's token). The money can " +
          'only reach the split, whoever sends it.',
        security: cookieAuth,
        params: Type.Object({ id: Type.String({ minLength: 1, maxLength: 64, description: 'The receipt id', examples: ['order-1001'] }) }),
        querystring: Type.Object({ token: Type.Optional(Type.String({ ...WALLET, description: "The token to sweep; the receipt's by default" })) }),
        errorCodes: { 503: ['chain_unavailable'] },
        response: {
          200: Type.Object(
            {
              payTo: Wallet,
              splitAddress: Wallet,
              token: Wallet,
              waiting: Type.String({ pattern: '^(0|[1-9][0-9]*)$', description: 'Token base units at the payment address now', examples: ['7000000'] }),
              transaction: Type.Object({ to: Wallet, data: Type.String({ pattern: '^0x[0-9a-fA-F]*$', examples: ['0x3a5be8cb'] }), chainId: Type.Integer({ examples: [31337] }) }),
            },
            { description: 'The transaction to send with eth_sendTransaction' },
          ),
          ...adminErrors,
          503: adminErrors[500],
        },
      },
    },
    async (request) => {
      if (deps.chain === undefined) throw new AppError(503, 'chain_unavailable', 'This instance runs without a chain');
      return manualSweep(deps.database.db, deps.chain, merchantOf(request), request.params.id, request.query.token);
    },
  );
}
