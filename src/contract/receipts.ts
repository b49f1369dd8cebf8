/**
 * Receipts: every status a receipt can hold and the exceptions beside it, the line item, the
 * receipt as lists and the detail show it, its creation and its tracking statuses.
 */
import { Type, type Static } from '@sinclair/typebox';
import { answerEnum, BaseUnits, Degraded, EXPORT_FORMATS, HANDLER_CHECKS, Nullable, PositiveUsd, ref, stringEnum, TokenUnits, TxHash, Usd, Wallet, WALLET } from './common.ts';

// ---------------------------------------------------------------------------------------------
// Statuses (the state machine over them is src/domain/receipt-states.ts)

export const CHAIN_STATUSES = ['tx_mined', 'recipient_validated', 'tx_mismatch', 'completed', 'failed', 'refunded'] as const;
export const INITIAL_STATUSES = ['pending', 'generated'] as const;
export const TRACKING_STATUSES = ['link_opened', 'buyer_logged_in', 'checkout_initialized'] as const;
/** The sensitive status with a name; the others are refund_* (set from the admin app). */
export const CHECKOUT_SUCCESS = 'checkout_success';
/** Every sensitive status other than checkout_success starts with it (refund_partial, ...). */
export const REFUND_STATUS_PREFIX = 'refund_';
/** The named statuses of a receipt that no money has reached yet; so is every refund_* status. */
export const AWAITING_STATUSES = [...INITIAL_STATUSES, ...TRACKING_STATUSES, CHECKOUT_SUCCESS] as const;
/** Every named status, in the order a receipt meets them. */
export const RECEIPT_STATUSES = [...INITIAL_STATUSES, ...TRACKING_STATUSES, CHECKOUT_SUCCESS, ...CHAIN_STATUSES] as const;

export type InitialStatus = (typeof INITIAL_STATUSES)[number];
export type TrackingStatus = (typeof TRACKING_STATUSES)[number];
export type SensitiveStatus = typeof CHECKOUT_SUCCESS | `refund_${string}`;
export type ChainStatus = (typeof CHAIN_STATUSES)[number];
export type ReceiptStatus = InitialStatus | TrackingStatus | SensitiveStatus | ChainStatus;

export const RECEIPT_EXCEPTIONS = ['underpaid', 'overpaid', 'wrong_token', 'expired', 'paid_late'] as const;
export type ReceiptException = (typeof RECEIPT_EXCEPTIONS)[number];

export function isTrackingStatus(s: string): s is TrackingStatus {
  return (TRACKING_STATUSES as readonly string[]).includes(s);
}

export function isSensitiveStatus(s: string): s is SensitiveStatus {
  return s === CHECKOUT_SUCCESS || s.startsWith(REFUND_STATUS_PREFIX);
}

/**
 * No money has reached the receipt's payment address yet: the statuses a person may still set.
 * The receipts_expiry_idx index and the chain worker's expiry query say the same in SQL
 * (src/db/schema.ts receiptCanExpire), from the same two constants.
 */
export function isAwaitingMoney(s: string): boolean {
  return (AWAITING_STATUSES as readonly string[]).includes(s) || s.startsWith(REFUND_STATUS_PREFIX);
}

/** Who recorded a status history entry. */
export const HISTORY_SOURCES = ['api', 'order', 'terminal', 'tracking', 'chain', 'admin'] as const;
export type HistorySource = (typeof HISTORY_SOURCES)[number];

// ---------------------------------------------------------------------------------------------
// Limits (src/domain/receipts.ts enforces them)

export const RECEIPT_ID = /^[A-Za-z0-9][A-Za-z0-9._:-]{0,63}$/;
export const MAX_LINE_ITEMS = 200;
export const MAX_EXPIRES_IN_MINUTES = 43_200;
/** Quantities of a receipt's line item (src/domain/receipts.ts parseLineItems). */
export const MAX_LINE_QTY = 1_000_000;
/** A receipt's metadata (src/domain/metadata.ts parseMetadata): keys, key length, value length, in characters. */
export const MAX_METADATA_KEYS = 50;
export const MAX_METADATA_KEY_LENGTH = 40;
export const MAX_METADATA_VALUE_LENGTH = 500;

// ---------------------------------------------------------------------------------------------
// Shared pieces

const RECEIPT_ID_RULE = '1-64 letters, digits and . _ : -, starting with a letter or digit';

/** A receipt id as POST /api/receipts takes it. */
export function ReceiptId(description = '') {
  return Type.String({
    pattern: RECEIPT_ID.source,
    maxLength: 64,
    description: description === '' ? RECEIPT_ID_RULE : `${description}: ${RECEIPT_ID_RULE}`,
    examples: ['order-1001'],
  });
}

const METADATA_EXAMPLE = { shopOrder: 'SO-20417', customerRef: 'cus_8812' };

/**
 * The shop's own fields on a receipt, as it sent them: kept and echoed, never read by the service.
 * The limits are checked by the handler (src/domain/metadata.ts), whose message names the key at
 * fault; the document shows them.
 */
export const Metadata = Type.Object(
  {},
  {
    $id: 'Metadata',
    title: 'Metadata',
    additionalProperties: Type.String({ [HANDLER_CHECKS]: { maxLength: MAX_METADATA_VALUE_LENGTH } }),
    description:
      `The shop's own fields (an order number, a customer reference): at most ${MAX_METADATA_KEYS} keys of 1-${MAX_METADATA_KEY_LENGTH} ` +
      `characters, string values of at most ${MAX_METADATA_VALUE_LENGTH}; anything else is 400 invalid_input naming the problem. ` +
      'Kept as sent and echoed by the receipt detail, the list, the status answer and every webhook event about the receipt; {} when none was sent',
    examples: [METADATA_EXAMPLE],
    [HANDLER_CHECKS]: { maxProperties: MAX_METADATA_KEYS, propertyNames: { minLength: 1, maxLength: MAX_METADATA_KEY_LENGTH } },
  },
);
export type Metadata = Record<string, string>;
export const MetadataRef = ref(Metadata);

/** Where the payment page's "Back to shop" link leads (src/domain/return-url.ts checks it). */
export function ReturnUrl(description: string) {
  return Type.String({
    maxLength: 2048,
    ...(description === '' ? {} : { description }),
    examples: ['https://shop.example/orders/SO-20417'],
  });
}

export const RETURN_URL_RULE =
  'An absolute https URL (http on localhost only on the dev chain) whose origin is one of the shop\'s allowedEmbedOrigins ' +
  '(shop settings); else 400 invalid_input naming the problem. The payment page links back to it ("Back to shop") once ' +
  'the receipt is paid, failed or expired';

/** A stored returnUrl as answers echo it. */
export const ReturnUrlAnswer = Type.Union([ReturnUrl(''), Type.Null()], {
  description: 'Where the payment page links back to the shop once the receipt is paid, failed or expired; null when none was sent',
  examples: ['https://shop.example/orders/SO-20417'],
});

export const LineItem = Type.Object(
  {
    label: Type.String({ minLength: 1, maxLength: 200, pattern: '\\S', description: '1-200 characters, trimmed', examples: ['Flat white'] }),
    priceUsd: Usd({ description: 'Unit price, USD, at most two decimals', examples: [3.5] }),
    qty: Type.Optional(Type.Integer({ minimum: 1, maximum: MAX_LINE_QTY, description: '1 when omitted', examples: [2] })),
  },
  { $id: 'LineItem', title: 'LineItem' },
);
export type LineItem = Static<typeof LineItem>;
export const LineItemRef = ref(LineItem);

/** A receipt status, described for its place. */
export function receiptStatus(description: string) {
  return Type.Union(
    [
      answerEnum(RECEIPT_STATUSES),
      Type.String({ pattern: '^refund_', description: 'A sensitive status set from the admin app, such as refund_partial' }),
    ],
    { description },
  );
}

/** Every status a receipt can hold: the named ones, and refund_* set from the admin app. */
export const ReceiptStatusSchema = receiptStatus(
  'pending (API) or generated (terminal); the tracking statuses while unpaid; tx_mined → recipient_validated → completed ' +
    'as the chain confirms the payment; tx_mismatch when too little or another token arrived; failed when it expired ' +
    'unpaid; refunded when refunds cover the total. Sensitive statuses (checkout_success, refund_*) are set from the admin app',
);

/** Tracking statuses (no credential) and the sensitive ones that need the admin session. */
export function SettableStatus(description: string) {
  return Type.Union(
    [stringEnum([...TRACKING_STATUSES, CHECKOUT_SUCCESS]), Type.String({ pattern: '^refund_', description: 'A sensitive refund_* status' })],
    { description, examples: ['link_opened'] },
  );
}

/** How a receipt's payment stands: on the list, the detail, the status answer. */
export const ReceiptExceptionSchema = Type.Unsafe<ReceiptException | null>({
  type: ['string', 'null'],
  enum: [...RECEIPT_EXCEPTIONS, null],
  description: 'Beside the status: underpaid, overpaid, wrong_token, expired or paid_late; null when the payment is as asked',
});

export const PaymentState = {
  exception: ReceiptExceptionSchema,
  expiresAt: Type.Integer({ description: 'Unix ms; a receipt with nothing received by then fails with exception expired', examples: [1767229200000] }),
  amountPaid: BaseUnits("What the receipt's payment address received in its token, token base units (USDC: 6 decimals); also amountPaidBaseUnits"),
  amountDue: BaseUnits('What is still missing, token base units; also amountDueBaseUnits'),
};

/** The payment's token amounts named by their unit (docs/decisions.md "Units"); the token beside them. */
export const TokenAmounts = {
  totalBaseUnits: BaseUnits("The total in the token's base units: what the buyer pays"),
  amountPaidBaseUnits: BaseUnits("What the receipt's payment address received in its token, base units"),
  amountDueBaseUnits: BaseUnits('What is still missing, base units'),
  decimals: TokenUnits.decimals,
};

/** The sum of a receipt's refunds; a receipt keeps its status until they cover its total (then refunded). */
export const RefundedUsd = Usd({
  description: "The sum of the receipt's refunds, USD; below the total the receipt keeps its status, at the total it is refunded",
  examples: [0],
});

// ---------------------------------------------------------------------------------------------
// GET /api/receipts, GET /api/receipts/:id

export const Receipt = Type.Object(
  {
    receiptId: Type.String({ examples: ['order-1001'] }),
    totalUsd: Usd({ examples: [7] }),
    currency: Type.String({ examples: ['USD'] }),
    lineItems: Type.Array(LineItemRef),
    createdAt: Type.Integer({ description: 'Unix ms', examples: [1767225600000] }),
    metadata: MetadataRef,
    returnUrl: ReturnUrlAnswer,
    brandName: Type.String({ examples: ['Splitline'] }),
    status: ReceiptStatusSchema,
    ...PaymentState,
    refundedUsd: RefundedUsd,
    ...TokenAmounts,
    token: TokenUnits.token,
  },
  { $id: 'Receipt', title: 'Receipt' },
);
export type Receipt = Static<typeof Receipt>;

/** A receipt status as a list filter: a named one, or refund_* (set from the admin app). */
const STATUS_FILTER = `^(${RECEIPT_STATUSES.join('|')}|${REFUND_STATUS_PREFIX}[a-z0-9_]+)$`;

export const ListReceiptsQuery = Type.Object({
  limit: Type.Optional(
    Type.Integer({ minimum: 1, maximum: 200, default: 100, description: 'How many receipts, newest first; outside 1..200: 400 invalid_input', examples: [20] }),
  ),
  starting_after: Type.Optional(
    Type.String({
      pattern: RECEIPT_ID.source,
      description:
        "A receipt id, the last one of the previous page: this page continues after it in the list's order (newest first). " +
        'Not a receipt of this merchant: 400 invalid_input. The example is the receipt the example of POST /api/receipts creates',
      examples: ['order-1001'],
    }),
  ),
  status: Type.Optional(
    Type.String({
      pattern: STATUS_FILTER,
      description: `Only receipts in this status: ${RECEIPT_STATUSES.join(', ')} or refund_*; anything else: 400 invalid_input`,
      examples: ['completed'],
    }),
  ),
  created_gte: Type.Optional(
    Type.Integer({ minimum: 0, description: 'Only receipts created at or after this time (Unix ms)', examples: [1767225600000] }),
  ),
  created_lte: Type.Optional(
    Type.Integer({ minimum: 0, description: 'Only receipts created at or before this time (Unix ms)', examples: [1769904000000] }),
  ),
  format: Type.Optional(
    stringEnum(EXPORT_FORMATS, {
      description:
        'json (the default): one page. csv: every receipt the other filters match, newest first, all pages in one text/csv ' +
        'download (limit does not apply; has_more is not needed); one row per receipt, amounts as the JSON has them',
      examples: ['csv'],
    }),
  ),
});
export type ListReceiptsQuery = Static<typeof ListReceiptsQuery>;

export const ReceiptList = Type.Object(
  {
    receipts: Type.Array(ref(Receipt)),
    has_more: Type.Boolean({
      description: 'More receipts match beyond this page: ask again with starting_after set to the last receipt id of this one',
      examples: [true],
    }),
    ...Degraded,
  },
  { description: "The merchant's receipts, newest first; an empty list with degraded: true while the database is unreachable" },
);
export type ReceiptList = Static<typeof ReceiptList>;

export const ReceiptIdParams = Type.Object({ id: Type.String({ description: 'The receipt id', examples: ['order-1001'] }) });
export type ReceiptIdParams = Static<typeof ReceiptIdParams>;

export const StatusHistoryEntry = Type.Object({
  status: Type.String({ examples: ['pending'] }),
  at: Type.Integer({ description: 'When it was first recorded', examples: [1767225600000] }),
  source: answerEnum(HISTORY_SOURCES, { description: 'Who recorded it' }),
  count: Type.Optional(Type.Integer({ minimum: 2, description: 'How many times it was recorded, when more than once (a repeated tracking status)' })),
});
export type StatusHistoryEntry = Static<typeof StatusHistoryEntry>;

/**
 * How far a refund's transfer is proven (DESIGN "Refunds"): `none` (no txHash, or a transfer not
 * from the merchant's wallet, split or payment address), `confirming` (its transfer is on the
 * chain, fewer than CONFIRMATIONS blocks deep), `verified` (CONFIRMATIONS deep), `removed` (a
 * reorganisation removed its transfer; verified again if it is mined again).
 */
export const REFUND_VERIFICATIONS = ['none', 'confirming', 'verified', 'removed'] as const;
export type RefundVerification = (typeof REFUND_VERIFICATIONS)[number];
export const RefundVerificationSchema = stringEnum(REFUND_VERIFICATIONS, {
  description:
    "none: no txHash, or a transfer not from the merchant's wallet, split or payment address; confirming: its transfer is on the chain, " +
    'fewer than CONFIRMATIONS blocks deep (the chain worker verifies it then: receipt.refund_verified); verified; removed: a ' +
    'reorganisation removed its transfer (receipt.refund_unverified), verified again if it is mined again',
});

export const ReceiptRefundSummary = Type.Object({
  id: Type.String(),
  usd: PositiveUsd({ examples: [3.5] }),
  amountUsd: PositiveUsd({ description: 'The same amount, named by its unit', examples: [3.5] }),
  buyer: Wallet,
  txHash: Nullable(TxHash),
  verified: Type.Boolean({ description: "Its transfer of the token to the buyer, from the merchant's own addresses, is CONFIRMATIONS deep on the chain" }),
  verification: RefundVerificationSchema,
  createdAt: Type.Integer({ description: 'Unix ms' }),
});
export type ReceiptRefundSummary = Static<typeof ReceiptRefundSummary>;

export const ReceiptDetail = Type.Object({
  // The list's fields first, in the same order: the detail is a receipt with more.
  ...Receipt.properties,
  payTo: Type.Union([Wallet, Type.Null()], { description: "The receipt's own payment address; null until the merchant's split is known" }),
  payer: Type.Union([Wallet, Type.Null()], {
    description:
      "The address that sent the receipt's first transfer of its token; null before one. It may be an exchange's or a " +
      'smart wallet that cannot receive a refund: confirm the refund address with the buyer',
  }),
  jurisdictionCode: Type.Union([Type.String(), Type.Null()], { examples: ['CA'] }),
  taxRate: Type.Number({ minimum: 0, maximum: 1, description: 'Fraction: 0.0825 means 8.25%', examples: [0] }),
  taxComponents: Type.Array(Type.String()),
  transactionHash: Type.Optional(TxHash),
  transactionTimestamp: Type.Optional(Type.Integer({ description: 'Unix ms of the block' })),
  statusHistory: Type.Array(StatusHistoryEntry, { description: 'Every status change, oldest first' }),
  refunds: Type.Array(ReceiptRefundSummary, { description: 'Every refund, oldest first' }),
  paymentUrl: Type.Optional(
    Type.String({
      description:
        "The receipt's payment URL ({SITE_URL}/pay/<id>?t=...). Only in the admin app's answer (session cookie), " +
        'so the merchant can show it again; never with a subscription key, and never on the payment page API',
    }),
  ),
  ...Degraded,
}, { description: 'The receipt with its status history and refunds' });
export type ReceiptDetail = Static<typeof ReceiptDetail>;

// ---------------------------------------------------------------------------------------------
// POST /api/receipts

export const CreateReceiptBody = Type.Object(
  {
    id: ReceiptId('Assigned by the caller; unique per merchant'),
    lineItems: Type.Array(LineItem, { minItems: 1, maxItems: MAX_LINE_ITEMS }),
    totalUsd: PositiveUsd({ description: 'Must equal the sum of priceUsd × qty (qty 1 when omitted), and be above zero' }),
    expiresInMinutes: Type.Optional(
      Type.Integer({
        minimum: 1,
        maximum: MAX_EXPIRES_IN_MINUTES,
        description: 'Minutes the receipt may be paid in; RECEIPT_TTL_MINUTES (60) by default',
      }),
    ),
    metadata: Type.Optional(MetadataRef),
    returnUrl: Type.Optional(ReturnUrl(RETURN_URL_RULE)),
  },
  {
    examples: [
      {
        id: 'order-1001',
        lineItems: [
          { label: 'Flat white', priceUsd: 3.5, qty: 2 },
          { label: 'Croissant', priceUsd: 2.25 },
        ],
        totalUsd: 9.25,
        metadata: METADATA_EXAMPLE,
        // No returnUrl: on a fresh service no shop allows its origin yet, and "Try it out" would
        // answer 400. Its own example is on the field (ReturnUrl), shown by the reference's schema.
      },
    ],
  },
);
export type CreateReceiptBody = Static<typeof CreateReceiptBody>;

export const CreatedReceipt = Type.Object(
  {
    id: Type.String({ examples: ['order-1001'] }),
    paymentUrl: Type.String({ description: '{SITE_URL}/pay/<id>?t=<token>: the only way to the payment page' }),
    status: answerEnum(['pending']),
    ...Degraded,
  },
  { description: 'The receipt was created (or, for the same id and body, had been): show the buyer paymentUrl' },
);
export type CreatedReceipt = Static<typeof CreatedReceipt>;

// ---------------------------------------------------------------------------------------------
// GET /api/receipts/status

export const ReceiptStatusQuery = Type.Object({ receiptId: Type.String({ minLength: 1, description: 'The receipt id', examples: ['order-1001'] }) });
export type ReceiptStatusQuery = Static<typeof ReceiptStatusQuery>;

export const ReceiptStatusView = Type.Object(
  {
    id: Type.String({ examples: ['order-1001'] }),
    status: ReceiptStatusSchema,
    transactionHash: Type.Union([TxHash, Type.Null()], {
      description: "The newest transfer of the receipt's token into its payment address as of its payment's last change (kept once completed); null before one",
    }),
    currency: Type.String({ description: 'The token the receipt is paid in', examples: ['USDC'] }),
    amount: Usd({ description: 'The total, in token units (1 USDC = 1 USD); also amountUsd', examples: [7] }),
    amountUsd: Usd({ description: "The receipt's total, USD", examples: [7] }),
    ...PaymentState,
    ...TokenAmounts,
    token: TokenUnits.token,
    metadata: MetadataRef,
    returnUrl: ReturnUrlAnswer,
  },
  { description: 'Where the payment stands' },
);
export type ReceiptStatusView = Static<typeof ReceiptStatusView>;

// ---------------------------------------------------------------------------------------------
// POST /api/receipts/status

/**
 * Documents the body; the receipts service checks it itself (attachValidation; checkStatusBody in
 * src/domain/receipts.ts), in the specification's order, so that each field answers its own code:
 * missing_receipt_id, invalid_wallet, missing_status.
 */
export const RecordStatusBody = Type.Object(
  {
    receiptId: ReceiptId('The receipt (missing or empty: 400 missing_receipt_id)'),
    wallet: Type.String({ ...WALLET, description: "The merchant's wallet, 0x-prefixed 40 hex (else 400 invalid_wallet)" }),
    status: SettableStatus(
      `A tracking status (${TRACKING_STATUSES.join(', ')}), with no credential; or a sensitive one (checkout_success, ` +
        'refund_*), with the admin session and its x-csrf-token. Missing or empty: 400 missing_status',
    ),
  },
  { examples: [{ receiptId: 'order-1001', wallet: '0x3c44cdddb6a900fa2b585dd299e03d12fa4293bc', status: 'link_opened' }] },
);
export type RecordStatusBody = Static<typeof RecordStatusBody>;

export const StatusRecorded = Type.Object(
  { ok: Type.Literal(true), ...Degraded },
  { description: 'Recorded (a tracking status answers so whether or not the receipt exists); degraded: true when journaled' },
);
export type StatusRecorded = Static<typeof StatusRecorded>;
