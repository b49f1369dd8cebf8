/**
 * What the signed-in merchant's split contract holds for each recipient and what it has released,
 * read from the contract (src/payments/split-balances.ts, through deps.splits). Recipients
 * withdraw with release(token, account) from their own wallets; the admin app shows these numbers
 * beside that.
 */
import type { Deps } from '../../../deps.ts';
import { merchantOf } from '../../../gateway/plugin.ts';
import { adminErrors, errorRef, cookieAuth } from '../../../contract/common.ts';
import { SplitBalances } from '../../../contract/split.ts';
import type { App } from '../../app-type.ts';

export function adminSplitBalanceRoutes(app: App, deps: Deps): void {
  app.get(
    '/api/admin/split/balances',
    {
      config: { auth: 'session' },
      schema: {
        tags: ['admin'],
        summary: "What the merchant's split holds for each recipient, and what it released",
        description:
          'Read from the PaymentSplitter at one block: totalReleased(token), released(token, account), ' +
          'releasable(token, account) and the token balance of the split; the top level is the current version, versions has ' +
          'every version (newest first): receipts of an earlier version still pay into its contract. 404 when the merchant has no split contract.',
        security: cookieAuth,
        errorCodes: { 503: ['chain_unavailable'] },
        response: { 200: SplitBalances, ...adminErrors, 404: errorRef, 503: adminErrors[500] },
      },
    },
    async (request) => deps.splits.splitBalances({ wallet: merchantOf(request) }),
  );
}
