/**
 * The merchant's split: GET /api/split/deploy, GET /api/split/transactions (key),
 * GET /api/split/balances and /api/split/settlements (key), POST /api/split/deploy (admin), GET /api/admin/split/balances
 * (admin), /api/admin/split/payouts and /api/admin/split/versions (admin).
 */
import { Type, type Static } from '@sinclair/typebox';
import { answerEnum, BaseUnits, EXPORT_FORMATS, HANDLER_CHECKS, HandlerCheckedWallet, stringEnum, TokenUnits, TxHash, Wallet, WALLET } from './common.ts';

/** The most transactions one listing answers (src/domain/split-transactions.ts). */
export const SPLIT_TRANSACTIONS_CAP = 200;
export const SPLIT_TRANSACTION_KINDS = ['received', 'released'] as const;

export const SplitConfig = Type.Object({
  address: Type.Union([Wallet, Type.Null()], { description: 'Split contract address; null when unconfigured' }),
  recipients: Type.Array(
    Type.Object({ address: Wallet, sharesBps: Type.Integer({ minimum: 1, maximum: 10_000, description: '10000 = 100%', examples: [9950] }) }),
    { description: 'Empty when unconfigured' },
  ),
  version: Type.Union([Type.Integer({ minimum: 1, examples: [2] }), Type.Null()], {
    description: 'The current split version (1 for the first split; POST /api/admin/split/versions makes the next); null when unconfigured',
  }),
});
export type SplitConfig = Static<typeof SplitConfig>;

export const SplitAnswer = Type.Object({ split: SplitConfig }, { description: "The merchant's split" });
export type SplitAnswer = Static<typeof SplitAnswer>;

export const SplitTransaction = Type.Object({
  id: Type.String({ examples: [`${'0x8f2a55949038a9610f50fb23b5883af3b4ecb3c3bb792cbcefbd1542c692be63'}:3`] }),
  receiptId: Type.Union([Type.String(), Type.Null()], { description: 'null when the transfer settled no receipt', examples: ['order-1001'] }),
  amount: Type.Number({ description: 'Token units (1.5 = 1.5 USDC)', examples: [7] }),
  currency: Type.String({ examples: ['USDC'] }),
  status: answerEnum(SPLIT_TRANSACTION_KINDS, { description: 'received: a transfer into the split; released: a payout to a recipient' }),
  timestamp: Type.String({ description: 'ISO 8601', examples: ['2026-01-01T00:00:00.000Z'] }),
  transactionHash: TxHash,
  fees: Type.Number({ description: "The platform's share, in token units, as the contract computes it (rounded down)" }),
  amountBaseUnits: Type.String({ pattern: '^(0|[1-9][0-9]*)$', description: 'amount exactly, token base units (USDC: 6 decimals)', examples: ['7000000'] }),
  feesBaseUnits: Type.String({ pattern: '^(0|[1-9][0-9]*)$', description: 'fees exactly, token base units', examples: ['35000'] }),
  ...TokenUnits,
});
export type SplitTransaction = Static<typeof SplitTransaction>;

export const SplitTransactionsQuery = Type.Object({
  address: Type.Optional(
    Type.String({ pattern: Wallet.pattern, description: 'Only transactions of this split contract or counterparty', examples: ['0x3c44cdddb6a900fa2b585dd299e03d12fa4293bc'] }),
  ),
  format: Type.Optional(
    stringEnum(EXPORT_FORMATS, {
      description:
        `json (the default): the newest ${SPLIT_TRANSACTIONS_CAP}. csv: every matching transaction, newest first, as one text/csv download ` +
        '(no cap), amounts in token base units beside the decimal token units the JSON shows',
      examples: ['csv'],
    }),
  ),
});
export type SplitTransactionsQuery = Static<typeof SplitTransactionsQuery>;

export const SplitTransactions = Type.Array(SplitTransaction, { description: 'The transactions, newest first' });
export type SplitTransactions = Static<typeof SplitTransactions>;

export const WithdrawBody = Type.Unknown({ description: 'Ignored: the answer is 410 whatever is sent', examples: [{}] });

// POST /api/split/deploy

const Recipient = Type.Object({
  address: Wallet,
  sharesBps: Type.Integer({ minimum: 1, maximum: 10_000, description: 'Basis points: 10000 = 100%', examples: [9950] }),
});

const StoredSplit = Type.Object({
  address: Type.Union([Wallet, Type.Null()], { description: 'The split contract; null until it is deployed' }),
  recipients: Type.Array(Recipient),
  version: Type.Union([Type.Integer({ minimum: 1 }), Type.Null()], { description: 'The current split version' }),
});

/** Checked by the domain, and only on the first call: later calls answer the stored split whatever they send. */
export const DeploySplitBody = Type.Object(
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
);
export type DeploySplitBody = Static<typeof DeploySplitBody>;

export const SplitDeployed = Type.Object(
  { ok: Type.Literal(true), split: StoredSplit, idempotent: Type.Optional(Type.Literal(true, { description: 'The split was configured before; nothing changed' })) },
  { description: 'The split as stored' },
);
export type SplitDeployed = Static<typeof SplitDeployed>;

// /api/admin/split/versions

export const SplitVersion = Type.Object(
  {
    version: Type.Integer({ minimum: 1, examples: [2] }),
    address: Type.Union([Wallet, Type.Null()], { description: 'The version\'s split contract; null only for a first version whose contract was never deployed' }),
    recipients: Type.Array(Recipient),
    startsAt: Type.Integer({ description: 'Unix ms: receipts created from here on (until the next version) pay into this version; 0 for version 1' }),
    createdAt: Type.Integer({ description: 'Unix ms' }),
    current: Type.Boolean({ description: 'New receipts pay into this version' }),
  },
  { description: 'A version of the merchant\'s split. Receipts keep the version they were created under: their payment address commits to its contract.' },
);
export type SplitVersion = Static<typeof SplitVersion>;

export const SplitVersions = Type.Object({ versions: Type.Array(SplitVersion, { description: 'Newest first; empty when unconfigured' }) });
export type SplitVersions = Static<typeof SplitVersions>;

export const SplitVersionBody = Type.Object(
  {
    splitAddress: Type.Optional(HandlerCheckedWallet({ description: 'A PaymentSplitter already deployed whose payees and shares are the recipients; without it the service deploys one' })),
    recipients: Type.Array(
      Type.Object({
        address: HandlerCheckedWallet({ description: 'A recipient; no address twice' }),
        sharesBps: Type.Integer({ description: 'Basis points, 1 to 10000; all of them sum to 10000', [HANDLER_CHECKS]: { minimum: 1, maximum: 10_000 } }),
      }),
      { maxItems: 50, description: "The new version's recipients; the platform recipient's share must be PLATFORM_FEE_BPS" },
    ),
  },
  {
    examples: [
      {
        recipients: [
          { address: '0x3c44cdddb6a900fa2b585dd299e03d12fa4293bc', sharesBps: 6950 },
          { address: '0x90f79bf6eb2c4f870365e785982e1f101e93b906', sharesBps: 3000 },
          { address: '0x000000000000000000000000000000000000beef', sharesBps: 50 },
        ],
      },
    ],
  },
);
export type SplitVersionBody = Static<typeof SplitVersionBody>;

export const SplitVersionCreated = Type.Object(
  {
    ok: Type.Literal(true),
    version: SplitVersion,
    idempotent: Type.Optional(Type.Literal(true, { description: 'The recipients are the current version\'s already: nothing was deployed or stored' })),
  },
  { description: 'The current version after the call' },
);
export type SplitVersionCreated = Static<typeof SplitVersionCreated>;

// GET /api/admin/split/balances

const Units = (description: string) => BaseUnits(description);

const oneSplitBalances = {
  address: Type.String({ ...WALLET, description: 'The split contract' }),
  token: Type.String({ ...WALLET, description: 'The token the amounts are in (the service accepts this one)' }),
  decimals: TokenUnits.decimals,
  totalReceived: Units('Everything the split ever received in the token: balance + totalReleased, base units'),
  totalReleased: Units('Everything released to recipients so far, base units'),
  balance: Units("The split's token balance now, base units"),
  recipients: Type.Array(
    Type.Object({
      address: Wallet,
      sharesBps: Type.Integer({ minimum: 1, maximum: 10_000, description: '10000 = 100%', examples: [9950] }),
      released: Units('Paid out to this recipient so far, base units'),
      releasable: Units('What this recipient can withdraw now with release(token, account), base units'),
    }),
  ),
  version: Type.Integer({ minimum: 1, description: 'The split version of this contract' }),
};

export const SplitBalances = Type.Object(
  {
    ...oneSplitBalances,
    versions: Type.Array(Type.Object(oneSplitBalances), {
      description: 'Every version of the split, newest first, the current one included: receipts of an earlier version still pay into its contract',
    }),
  },
  { description: "What the merchant's current split holds and released, read from the contract at one block, and the same for every version" },
);
export type SplitBalances = Static<typeof SplitBalances>;

// GET /api/split/balances

const recipientBalanceRows = Type.Array(
  Type.Object({
    address: Wallet,
    sharesBps: Type.Integer({ minimum: 1, maximum: 10_000, description: '10000 = 100%', examples: [9950] }),
    received: Units("The recipient's share of everything the split received: released + releasable, base units"),
    released: Units('Paid out to this recipient so far, base units'),
    releasable: Units('What anyone can pay out to this recipient now with release(token, account), base units'),
  }),
);

export const RecipientBalances = Type.Object(
  {
    split: Type.String({ ...WALLET, description: 'The current split contract' }),
    token: Type.String({ ...WALLET, description: 'The token the amounts are in (the service accepts this one)' }),
    decimals: TokenUnits.decimals,
    recipients: recipientBalanceRows,
    version: Type.Integer({ minimum: 1, description: 'The current split version' }),
    versions: Type.Array(
      Type.Object({ version: Type.Integer({ minimum: 1 }), split: Type.String({ ...WALLET, description: "The version's split contract" }), recipients: recipientBalanceRows }),
      { description: 'Every version, newest first, the current one included: receipts of an earlier version still pay into its contract' },
    ),
  },
  { description: "Each recipient's share of the merchant's current split, read from the contract at one block, and the same for every version" },
);
export type RecipientBalances = Static<typeof RecipientBalances>;

// GET /api/split/settlements

export const SETTLEMENT_FORMATS = EXPORT_FORMATS;

export const SettlementQuery = Type.Object({
  from: Type.Optional(Type.Integer({ minimum: 0, description: 'The period starts here (Unix ms, inclusive); 0 by default: since the split began', examples: [1767225600000] })),
  to: Type.Optional(Type.Integer({ minimum: 0, description: 'The period ends here (Unix ms, exclusive); by default it has no end: every transfer indexed so far', examples: [1769904000000] })),
  format: Type.Optional(answerEnum(SETTLEMENT_FORMATS, { description: 'csv: the lines as text/csv, one column per recipient; json by default', examples: ['csv'] })),
});
export type SettlementQuery = Static<typeof SettlementQuery>;

export const Settlement = Type.Object(
  {
    split: Type.Union([Type.String({ ...WALLET, description: 'The split contract' }), Type.Null()], { description: 'null before the split contract is deployed (the report is then empty)' }),
    currency: Type.String({ examples: ['USDC'] }),
    token: TokenUnits.token,
    decimals: Type.Integer({ description: 'Of the token: every amount is in its base units', examples: [6] }),
    from: Type.Integer({ description: 'Unix ms, inclusive' }),
    to: Type.Union([Type.Integer(), Type.Null()], { description: 'Unix ms, exclusive; null when the query gave none' }),
    toBlock: Type.Union([Units('The block of the last indexed split transaction before `to`: accrued and releasedToDate are the chain\'s as of this block'), Type.Null()]),
    versions: Type.Array(Type.Object({ version: Type.Integer({ minimum: 1 }), split: Type.String({ ...WALLET }), recipients: Type.Array(Recipient) }), {
      description: 'Every version of the split the report covers, oldest first: each pays by its own cumulative floors, and recipients add up over them',
    }),
    recipients: Type.Array(
      Type.Object({
        address: Wallet,
        sharesBps: Type.Integer({ minimum: 0, maximum: 10_000, description: 'In the current version; 0 for a recipient of earlier versions only', examples: [9950] }),
        platform: Type.Boolean({ description: 'The platform fee recipient' }),
        share: Units("Σ of the recipient's shares of the period's lines"),
        released: Units('Paid out to the recipient in the period'),
        accrued: Units('Owed to the recipient since the split began, to the end of the period: the contract\'s released + releasable at toBlock'),
        releasedToDate: Units('Paid out to the recipient since the split began, to the end of the period'),
      }),
    ),
    lines: Type.Array(
      Type.Object({
        receiptId: Type.Union([Type.String(), Type.Null()], { description: 'null for a transfer into the split that settled no receipt; a receipt paid in several transfers has several lines' }),
        transactionHash: TxHash,
        logIndex: Type.Integer({ minimum: 0 }),
        blockNumber: Units('The block of the transfer'),
        timestamp: Type.Integer({ description: 'Unix ms of the block' }),
        split: Type.String({ ...WALLET, description: 'The split contract the transfer went into' }),
        version: Type.Integer({ minimum: 1, description: "That contract's split version" }),
        gross: Units('What the transfer brought into the split'),
        shares: Type.Array(Units('A recipient\'s share'), { description: "Each recipient's share, in the order of `recipients`: the difference of cumulative floors" }),
        platformFee: Units("The platform recipient's share"),
        unallocated: Type.String({ pattern: '^-?(0|[1-9][0-9]*)$', description: 'gross − Σ shares: the contract\'s rounding, owed to nobody; may be negative by a unit or a few', examples: ['1'] }),
      }),
    ),
    totals: Type.Object({ gross: Units('Σ gross'), platformFee: Units('Σ platformFee'), unallocated: Type.String({ pattern: '^-?(0|[1-9][0-9]*)$', description: 'Σ unallocated', examples: ['1'] }), released: Units('Σ released in the period') }),
  },
  { description: 'The settlement of the period, from the indexed split transactions; amounts in token base units as decimal strings' },
);
export type Settlement = Static<typeof Settlement>;

// /api/admin/split/payouts

export const PayoutSettingsBody = Type.Object(
  {
    payoutThresholdUsd: Type.Number({ description: 'Release a recipient once its releasable amount reaches this many USD (0.01 to 1,000,000; at most two decimals)', examples: [25] }),
    payoutIntervalHours: Type.Integer({ description: 'At most one automatic run per this many hours (1 to 8760)', examples: [24] }),
  },
  { examples: [{ payoutThresholdUsd: 25, payoutIntervalHours: 24 }] },
);
export type PayoutSettingsBody = Static<typeof PayoutSettingsBody>;

export const PayoutSettingsAnswer = Type.Object(
  {
    payouts: Type.Union(
      [
        Type.Object({
          payoutThresholdUsd: Type.Number({ examples: [25] }),
          payoutIntervalHours: Type.Integer({ examples: [24] }),
          lastRunAt: Type.Union([Type.Integer(), Type.Null()], { description: 'Unix ms of the last automatic run that released something; null before the first' }),
        }),
        Type.Null(),
      ],
      { description: 'null: automatic payouts are off' },
    ),
    automatic: Type.Boolean({ description: 'Whether this service can pay the gas of automatic payouts (a deployer account: always on the dev chain, else SPLIT_DEPLOYER_KEY)' }),
  },
  { description: "The merchant's automatic payouts" },
);
export type PayoutSettingsAnswer = Static<typeof PayoutSettingsAnswer>;

// GET /api/admin/receipts/:id/sweep

export const SweepParams = Type.Object({ id: Type.String({ minLength: 1, maxLength: 64, description: 'The receipt id', examples: ['order-1001'] }) });
export const SweepQuery = Type.Object({
  token: Type.Optional(
    Type.String({
      pattern: '^(eth|0x[0-9a-fA-F]{40})$',
      description:
        "The ERC-20 token to sweep, the receipt's by default; `eth` or the zero address for native ETH (payment addresses of " +
        'forwarder version 2 only: a receipt addressed before it answers 400). An address that is not a token contract answers 400.',
      examples: ['eth', WALLET.examples[0]],
    }),
  ),
});

export const SweepTransaction = Type.Object(
  {
    payTo: Wallet,
    splitAddress: Wallet,
    token: Type.String({ ...WALLET, description: 'The token swept; the zero address for native ETH' }),
    waiting: Type.String({ pattern: '^(0|[1-9][0-9]*)$', description: 'Token base units (wei for ETH) at the payment address now', examples: ['7000000'] }),
    transaction: Type.Object({ to: Wallet, data: Type.String({ pattern: '^0x[0-9a-fA-F]*$', examples: ['0x3a5be8cb'] }), chainId: Type.Integer({ examples: [31337] }) }),
  },
  { description: 'The transaction to send with eth_sendTransaction' },
);
export type SweepTransaction = Static<typeof SweepTransaction>;
