/** /api/split/*: the merchant's split, read with a key, configured from the admin app. */
import { Type } from '@sinclair/typebox';
import type { Deps } from '../../deps.ts';
import { AppError } from '../../domain/errors.ts';
import { listSplitTransactions, SPLIT_TRANSACTIONS_CAP } from '../../domain/split-transactions.ts';
import { getSplitConfig } from '../../domain/splits.ts';
import { setUpSplit } from '../../domain/split-setup.ts';
import { splitChainOf } from '../../chain/split-setup-chain.ts';
import { sessionOf } from '../../auth/plugin.ts';
import { merchantOf } from '../../gateway/plugin.ts';
import { adminErrors, answerEnum, cookieAuth, errorRef, HANDLER_CHECKS, HandlerCheckedWallet, keyErrors, security, TxHash, Wallet } from '../schemas.ts';
import type { App } from '../app-type.ts';

const SplitConfig = Type.Object({
  address: Type.Union([Wallet, Type.Null()], { description: 'Split contract address; null when unconfigured' }),
  recipients: Type.Array(
    Type.Object({ address: Wallet, sharesBps: Type.Integer({ minimum: 1, maximum: 10_000, description: '10000 = 100%', examples: [9950] }) }),
    { description: 'Empty when unconfigured' },
  ),
});

const Recipient = Type.Object({
  address: Wallet,
  sharesBps: Type.Integer({ minimum: 1, maximum: 10_000, description: 'Basis points: 10000 = 100%', examples: [9950] }),
});

const SplitSchema = Type.Object({
  address: Type.Union([Wallet, Type.Null()], { description: 'The split contract; null until it is deployed' }),
  recipients: Type.Array(Recipient),
});

const SplitTransaction = Type.Object({
  id: Type.String({ examples: [`${'0x8f2a55949038a9610f50fb23b5883af3b4ecb3c3bb792cbcefbd1542c692be63'}:3`] }),
  receiptId: Type.Union([Type.String(), Type.Null()], { description: 'null when the transfer settled no receipt', examples: ['order-1001'] }),
  amount: Type.Number({ description: 'Token units (1.5 = 1.5 USDC)', examples: [7] }),
  currency: Type.String({ examples: ['USDC'] }),
  status: answerEnum(['received', 'released'], { description: 'received: a transfer into the split; released: a payout to a recipient' }),
  timestamp: Type.String({ description: 'ISO 8601', examples: ['2026-01-01T00:00:00.000Z'] }),
  transactionHash: TxHash,
  fees: Type.Number({ description: "The platform's share, in token units, as the contract computes it (rounded down)" }),
  amountBaseUnits: Type.String({ pattern: '^(0|[1-9][0-9]*)$', description: 'amount exactly, token base units (USDC: 6 decimals)', examples: ['7000000'] }),
  feesBaseUnits: Type.String({ pattern: '^(0|[1-9][0-9]*)$', description: 'fees exactly, token base units', examples: ['35000'] }),
});

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
        response: { 200: Type.Object({ split: SplitConfig }, { description: "The merchant's split" }), ...keyErrors() },
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
        querystring: Type.Object({ address: Type.Optional(Type.String({ pattern: Wallet.pattern, description: 'Only transactions of this split contract or counterparty' })) }),
        response: { 200: Type.Array(SplitTransaction, { description: 'The transactions, newest first' }), ...keyErrors(400) },
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
        // Checked by the domain, and only on the first call: later calls answer the stored split whatever they send.
        body: Type.Object(
          {
            splitAddress: Type.Optional(HandlerCheckedWallet({ description: 'A PaymentSplitter already deployed, whose payees and shares are the recipients' })),
            recipients: Type.Optional(
              Type.Array(
                Type.Object({
                  address: HandlerCheckedWallet({ description: 'A recipient; no address twice' }),
                  sharesBps: Type.Integer({ description: 'Basis points, 1 to 10000; all of them sum to 10000', [HANDLER_CHECKS]: { minimum: 1, maximum: 10_000 } }),
                }),
                { maxItems: 50, description: "Required on the first call; the platform recipient's share must be PLATFORM_FEE_BPS" },
              ),
            ),
          },
          {
            examples: [
              {
                recipients: [
                  { address: '0x3c44cdddb6a900fa2b585dd299e03d12fa4293bc', sharesBps: 9950 },
                  { address: '0x000000000000000000000000000000000000beef', sharesBps: 50 },
                ],
              },
            ],
          },
        ),
        errorCodes: { 400: ['platform_recipient_not_configured'], 503: ['chain_unavailable'] },
        response: {
          200: Type.Object(
            { ok: Type.Literal(true), split: SplitSchema, idempotent: Type.Optional(Type.Literal(true, { description: 'The split was configured before; nothing changed' })) },
            { description: 'The split as stored' },
          ),
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
      onRequest: async () => {
        throw new WithdrawDeprecated();
      },
      schema: {
        tags: ['split'],
        summary: 'Deprecated: withdraw from the split',
        description:
          "Always 410. Each recipient calls the split contract's release(token, account) from its own wallet.",
        deprecated: true,
        security,
        body: Type.Unknown({ description: 'Ignored: the answer is 410 whatever is sent', examples: [{}] }),
        response: { 410: errorRef, ...keyErrors() },
      },
    },
    async () => {
      throw new WithdrawDeprecated();
    },
  );
}
