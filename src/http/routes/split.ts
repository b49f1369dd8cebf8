/** /api/split/*: the merchant's split, read with a key, configured from the admin app. */
import type { Deps } from '../../deps.ts';
import { AppError } from '../../lib/errors.ts';
import { SPLIT_TRANSACTIONS_CAP, type SplitTransactionView } from '../../domain/split-transactions.ts';
import { csvChunks, csvHeader, type CsvColumn } from '../../lib/csv.ts';
import { jsonOrCsv, sendCsv } from '../csv-reply.ts';
import { SETTLEMENT_LINES_CAP } from '../../payments/settlements.ts';
import { sessionOf } from '../../auth/plugin.ts';
import { merchantOf } from '../../gateway/plugin.ts';
import { budgetAddress } from '../../gateway/client-address.ts';
import { adminErrors, cookieAuth, errorRef, keyErrors, security } from '../../contract/common.ts';
import { DeploySplitBody, RecipientBalances, Settlement, SettlementQuery, SplitAnswer, SplitDeployed, SplitTransactions, SplitTransactionsQuery, WithdrawBody } from '../../contract/split.ts';
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

/** GET /api/split/transactions?format=csv: a row per transaction, the exact base units beside the JSON's token units. */
const SPLIT_TRANSACTION_CSV: CsvColumn<SplitTransactionView>[] = [
  { name: 'id', value: (t) => t.id },
  { name: 'timestamp', value: (t) => t.timestamp },
  { name: 'status', value: (t) => t.status },
  { name: 'receipt_id', value: (t) => t.receiptId, text: true },
  { name: 'transaction_hash', value: (t) => t.transactionHash },
  { name: 'currency', value: (t) => t.currency },
  { name: 'amount_base_units', value: (t) => t.amountBaseUnits },
  { name: 'fees_base_units', value: (t) => t.feesBaseUnits },
  { name: 'amount', value: (t) => t.amount },
  { name: 'fees', value: (t) => t.fees },
];

export function splitRoutes(app: App, deps: Deps): void {
  // No degraded answer: "unconfigured" would be a false statement about the merchant's split,
  // so an unreachable database is a 503 from the error handler.
  app.get(
    '/api/split/deploy',
    {
      config: { auth: 'key', scope: 'split:read' },
      schema: {
        tags: ['split'],
        summary: "The merchant's split configuration",
        description: 'The current version (version); still 200 when unconfigured, with address null, recipients empty and version null.',
        security,
        response: { 200: SplitAnswer, ...keyErrors() },
      },
    },
    async (request) => deps.splits.config({ wallet: merchantOf(request) }),
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
          'where it is the split contract or the counterparty (payer of a payment, recipient of a release). format=csv exports ' +
          'every matching transaction (no cap), newest first, streamed as one text/csv download with a header row: id, ' +
          'timestamp, status, receipt_id, transaction_hash, currency, amount_base_units, fees_base_units (exact), amount and ' +
          'fees (token units, as the JSON shows them).',
        security,
        querystring: SplitTransactionsQuery,
        response: {
          200: jsonOrCsv('The transactions (JSON), or every matching one as CSV', SplitTransactions, csvHeader(SPLIT_TRANSACTION_CSV)),
          ...keyErrors(400),
        },
      },
    },
    async (request, reply) => {
      const { address, format } = request.query;
      const p = { wallet: merchantOf(request), address };
      if (format === 'csv') {
        return sendCsv(reply, `split-transactions-${Date.now()}.csv`, csvChunks(SPLIT_TRANSACTION_CSV, await deps.splits.exportTransactions(p)));
      }
      return reply.send(await deps.splits.transactions(p));
    },
  );

  app.get(
    '/api/split/balances',
    {
      config: { auth: 'key', scope: 'split:read' },
      schema: {
        tags: ['split'],
        summary: "Each recipient's share of the split: received, released, releasable",
        description:
          'Read from the PaymentSplitter at one block, in token base units: received = released + releasable, ' +
          'for the current version at the top level and for every version in versions (newest first; receipts created ' +
          'before a new version keep paying into theirs), ' +
          'the recipient\'s share of everything the split ever received. Anyone may pay a recipient out with the ' +
          "contract's release(token, account); the recipient never needs to sign in. 404 when the merchant has no " +
          'split contract; 503 chain_unavailable without a chain or when the node does not answer.',
        security,
        errorCodes: { 404: ['not_found'], 503: ['chain_unavailable'] },
        response: { 200: RecipientBalances, ...keyErrors(404) },
      },
    },
    async (request) => deps.splits.recipientBalances({ wallet: merchantOf(request) }),
  );

  // Read from the indexed split transactions, not the chain: it answers without a chain too.
  app.get(
    '/api/split/settlements',
    {
      config: { auth: 'key', scope: 'split:read' },
      schema: {
        tags: ['split'],
        summary: 'The settlement of a period: per transfer into the split and per recipient',
        description:
          'Every transfer into the split, every version of it, in [from, to), in chain order (each line names its split and version), ' +
          'with each recipient\'s share as the difference ' +
          'of cumulative floors (so a recipient\'s shares since the split began sum exactly to what the contract owes it, ' +
          'released + releasable), the platform fee and the rounding owed to nobody; per recipient the period\'s shares and ' +
          `releases, and what it accrued and was paid since the split began. At most ${SETTLEMENT_LINES_CAP} lines (400 ` +
          'invalid_input beyond: ask for a shorter period), and 400 when from is after to. format=csv answers the lines as text/csv. ' +
          'Each version pays by its own cumulative floors; a recipient\'s figures add up over the versions, and a recipient of ' +
          'earlier versions only has sharesBps 0. Before the split contract is deployed, an empty report with split null.',
        security,
        querystring: SettlementQuery,
        response: {
          200: jsonOrCsv('The settlement (JSON), or its lines as CSV', Settlement, 'timestamp,block_number,transaction_hash,log_index,receipt_id,gross,share_0x…,platform_fee,unallocated\r\n'),
          ...keyErrors(400),
        },
      },
    },
    async (request, reply) => {
      const { format, ...period } = request.query;
      const p = { wallet: merchantOf(request), period };
      if (format === 'csv') {
        const { fileName, csv } = await deps.splits.settlementCsv(p);
        return sendCsv(reply, fileName, csv);
      }
      return reply.type('application/json; charset=utf-8').send(await deps.splits.settlement(p));
    },
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
          'null until the admin deploys it from their own wallet. The platform pays that gas only for wallets it approved ' +
          '(a superadmin, an admin, or a wallet a superadmin granted the merchant role; every wallet on the dev chain unless ' +
          'SPLIT_DEPLOYS_APPROVED_ONLY=true): any other is 403 forbidden and deploys from its own wallet, passing splitAddress. ' +
          'Server-paid deployments are capped per wallet (3 a day), per client address or IPv6 /64 (a tenth of ' +
          'SPLIT_DEPLOYS_PER_DAY) and for the platform (SPLIT_DEPLOYS_PER_DAY): beyond, 429 rate_limited with resetAt ' +
          'at the next UTC midnight.',
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
    async (request) => deps.splits.deploy({ wallet: sessionOf(request).wallet, body: request.body, source: budgetAddress(request.ip) }),
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
