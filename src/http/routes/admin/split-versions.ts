/**
 * The signed-in merchant's split versions (src/domain/split-versions.ts, through deps.splits): list
 * them, make a new one. A new version's contract is deployed or verified as the first split's is
 * (POST /api/split/deploy).
 */
import type { Deps } from '../../../deps.ts';
import { sessionOf } from '../../../auth/plugin.ts';
import { budgetAddress } from '../../../gateway/client-address.ts';
import { adminErrors, cookieAuth, errorRef } from '../../../contract/common.ts';
import { SplitVersionBody, SplitVersionCreated, SplitVersions } from '../../../contract/split.ts';
import type { App } from '../../app-type.ts';

export function adminSplitVersionRoutes(app: App, deps: Deps): void {
  app.get(
    '/api/admin/split/versions',
    {
      config: { auth: 'session' },
      schema: {
        tags: ['admin'],
        summary: "Every version of the merchant's split, newest first",
        description:
          'Receipts pay into the version that was current when they were created (startsAt): their payment address commits ' +
          "to its contract, so a new version never moves an existing receipt's money. Empty when no split is configured.",
        security: cookieAuth,
        response: { 200: SplitVersions, ...adminErrors },
      },
    },
    async (request) => deps.splits.versions({ wallet: sessionOf(request).wallet }),
  );

  app.post(
    '/api/admin/split/versions',
    {
      config: { auth: 'session' },
      schema: {
        tags: ['admin'],
        summary: 'Make a new split version with new recipients',
        description:
          'Receipts created from now on pay into the new version; every existing receipt keeps the split its payment address ' +
          'commits to, and earlier versions stay indexed, paid out and settled. The recipients follow the rules of ' +
          'POST /api/split/deploy (whole sharesBps summing to 10000, no address twice, the platform recipient with exactly ' +
          'PLATFORM_FEE_BPS). A given splitAddress must be a PaymentSplitter paying exactly them and registered by no split ' +
          'yet, this one\'s earlier versions included (409 conflict); without one the service deploys it, with the same approval ' +
          'and daily budgets as the first split (403 forbidden, 429 rate_limited); a service without a deployer answers 400 ' +
          '(send splitAddress), an instance without a chain 503 chain_unavailable. ' +
          'Recipients equal to the current version\'s (in any order, with no other splitAddress) answer the current version with ' +
          'idempotent: true and deploy nothing, so a retry is safe. 403 split_required before the first split is configured. ' +
          'A first version whose contract was never deployed has received nothing and is replaced in place.',
        security: cookieAuth,
        body: SplitVersionBody,
        errorCodes: { 400: ['platform_recipient_not_configured'], 403: ['split_required'], 503: ['chain_unavailable', 'deployer_unfunded'] },
        response: { 200: SplitVersionCreated, ...adminErrors, 503: errorRef },
      },
    },
    async (request) => deps.splits.createVersion({ wallet: sessionOf(request).wallet, body: request.body, source: budgetAddress(request.ip) }),
  );
}
