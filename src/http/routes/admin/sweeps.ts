/**
 * The sweep of a receipt's payment address as a transaction the merchant sends from their own
 * wallet (src/payments/manual-sweep.ts, through deps.sweeps).
 */
import type { Deps } from '../../../deps.ts';
import { merchantOf } from '../../../gateway/plugin.ts';
import { adminErrors, errorRef, cookieAuth } from '../../../contract/common.ts';
import { SweepParams, SweepQuery, SweepTransaction } from '../../../contract/split.ts';
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
          "the sweeps' gas, for a token the worker does not sweep (`token`, default the receipt's token; the worker sweeps ETH and " +
          'BALANCE_TOKENS itself when worth their gas), or for native ETH now (`token=eth`). The money can only reach the split, whoever sends it. 400 `invalid_input` for an address that ' +
          'is not a token contract, and for ETH at a payment address made by forwarder version 1 (which sweeps tokens only).',
        security: cookieAuth,
        params: SweepParams,
        querystring: SweepQuery,
        errorCodes: { 400: ['invalid_input'], 503: ['chain_unavailable'] },
        response: {
          200: SweepTransaction,
          ...adminErrors, 404: errorRef,
          503: adminErrors[500],
        },
      },
    },
    async (request) => deps.sweeps.manual({ wallet: merchantOf(request), receiptId: request.params.id, token: request.query.token }),
  );
}
