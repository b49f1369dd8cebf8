/** /api/split/*: the merchant's split, read with a key, configured from the admin app. */
import type { Deps } from '../../deps.ts';
import { AppError } from '../../domain/errors.ts';
import { listSplitTransactions, SPLIT_TRANSACTIONS_CAP } from '../../domain/split-transactions.ts';
import { getSplitConfig } from '../../domain/splits.ts';
import { setUpSplit } from '../../domain/split-setup.ts';
import { splitChainOf } from '../../chain/split-setup-chain.ts';
import { sessionOf } from '../../auth/plugin.ts';
import { merchantOf } from '../../gateway/plugin.ts';
import { adminErrors, cookieAuth, errorRef, keyErrors, security } from '../../contract/common.ts';
import { DeploySplitBody, SplitAnswer, SplitDeployed, SplitTransactions, SplitTransactionsQuery, WithdrawBody } from '../../contract/split.ts';
import type { App } from '../app-type.ts';

/** The withdraw route is gone: recipients release their own funds from the split contract. */
class WithdrawDeprecated extends AppError {
  constructor() {
    super(
      410,
      'deprecated',
      "Withdraw from your own wallet: call the split contract's release(token, account) function",
      { reason: 'use_connected_wallet' },
    );
  }
}

export function splitRoutes(app: App, deps: Deps): void {
  const { config } = deps;
  const db = deps.database.db;

  // No degraded answer: "unconfigured" would be a false statement about the merchant's split,
  // so an unreachable database is a 503 from the error handler.
  app.get(
    '/api/split/deploy',
    {
      config: { auth: 'key', scope: 'split:read' },
      schema: {
        tags: ['split'],
        summary: "The merchant's split configuration",
        description: 'Still 200 when unconfigured, with address null and recipients empty.',
        security,
        response: { 200: SplitAnswer, ...keyErrors() },
      },
    },
    async (request) => ({ split: await getSplitConfig(db, merchantOf(request)) }),
  );

  // A bare array has nowhere to carry `degraded: true`, and an unflagged empty list would claim
  // there are no transactions; so an unreachable database is a 503 from the error handler.
  app.get(
    '/api/split/transactions',
    {
      config: { auth: 'key', scope: 'split:read' },
      schema: {
        tags: ['split'],
        summary: 'Indexed split transactions, newest first',
        description:
          `Only the caller merchant's transactions, at most ${SPLIT_TRANSACTIONS_CAP}. With address, only those ` +
          'where it is the split contract or the counterparty (payer of a payment, recipient of a release).',
        security,
        querystring: SplitTransactionsQuery,
        response: { 200: SplitTransactions, ...keyErrors(400) },
      },
    },
    async (request) => listSplitTransactions(db, merchantOf(request), request.query.address),
  );

  app.post(
    '/api/split/deploy',
    {
      config: { auth: 'session' },
      schema: {
        tags: ['admin'],
        summary: 'Configure the split (idempotent)',
        description:
          'The first call stores the configuration; later calls return it with idempotent: true. Recipients need ' +
          'whole sharesBps from 1 to 10000 summing to 10000, no duplicate address, and the platform recipient with ' +
          'exactly PLATFORM_FEE_BPS. A given splitAddress must be a PaymentSplitter whose payees and shares are exactly ' +
          'the recipients and their sharesBps (400 otherwise). Without one, the service deploys the PaymentSplitter ' +
          'itself when it has a deployer account (the dev chain, or SPLIT_DEPLOYER_KEY); otherwise the address stays ' +
          'null until the admin deploys it from their own wallet.',
        security: cookieAuth,
        body: DeploySplitBody,
        errorCodes: { 400: ['platform_recipient_not_configured'], 503: ['chain_unavailable', 'deployer_unfunded'] },
        response: {
          200: SplitDeployed,
          ...adminErrors,
          503: errorRef,
        },
      },
    },
    async (request) => {
      const platform = { address: config.platformRecipientAddress, feeBps: config.platformFeeBps };
      const result = await setUpSplit(db, sessionOf(request).wallet, request.body, platform, Date.now(), splitChainOf(deps.chain, deps.config.splitDeploysPerDay));
      return result.idempotent ? { ok: true, split: result.split, idempotent: true } : { ok: true, split: result.split };
    },
  );

  app.post(
    '/api/split/withdraw',
    {
      config: { auth: 'key' },
      // Answered before the body is read, so any body (even none, or malformed) gets the 410.
      onRequest: (_request, _reply, done) => {
        done(new WithdrawDeprecated());
      },
      schema: {
        tags: ['split'],
        summary: 'Deprecated: withdraw from the split',
        description:
          "Always 410. Each recipient calls the split contract's release(token, account) from its own wallet.",
        deprecated: true,
        security,
        body: WithdrawBody,
        response: { 410: errorRef, ...keyErrors() },
      },
    },
    () => {
      throw new WithdrawDeprecated();
    },
  );
}
