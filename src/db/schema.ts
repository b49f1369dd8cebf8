/**
 * Every merchant-owned table is keyed by the merchant wallet first (lower-case 0x address), so it
 * can be distributed by that column. Amounts are integer cents or token base units.
 */
import { sql, type SQL } from 'drizzle-orm';
import { AWAITING_STATUSES, REFUND_STATUS_PREFIX, type HistorySource, type ReceiptException, type ReceiptStatus } from '../contract/receipts.ts';
import type { SPLIT_TRANSACTION_KINDS } from '../contract/split.ts';
import {
  bigint,
  boolean,
  index,
  integer,
  jsonb,
  pgTable,
  primaryKey,
  bigserial,
  text,
  uniqueIndex,
  type AnyPgColumn,
} from 'drizzle-orm/pg-core';

const ms = (name: string) => bigint(name, { mode: 'number' });

/** A string constant as an SQL literal, so that it is part of the statement's text. */
const literal = (s: string) => `'${s.replaceAll("'", "''")}'`;

/**
 * A receipt that can still expire: not expired yet, nothing received, and a status that awaits
 * money (isAwaitingMoney in src/contract/receipts.ts, from the same constants). It is the
 * predicate of receipts_expiry_idx and the chain worker's expiry query says it word for word, so
 * PostgreSQL proves the index applies. The constants are written into the text rather than bound
 * as parameters, so a prepared statement's generic plan can prove it too.
 */
export function receiptCanExpire(t: { status: AnyPgColumn; expiredAt: AnyPgColumn; paidUnits: AnyPgColumn }): SQL {
  const awaiting = sql.raw(AWAITING_STATUSES.map(literal).join(', '));
  const refund = sql.raw(literal(REFUND_STATUS_PREFIX));
  return sql`${t.expiredAt} is null and ${t.paidUnits} = '0' and (${t.status} in (${awaiting}) or starts_with(${t.status}, ${refund}))`;
}

export interface StoredLineItem {
  label: string;
  /** Unit price in cents, as a decimal string (JSON has no bigint). */
  priceCents: string;
  qty?: number;
  sku?: string;
  kind?: 'item' | 'tax' | 'fee';
}

export interface TaxJurisdiction {
  code: string;
  /** Rate in parts per million (82500 = 8.25%). */
  ratePpm: number;
  components: string[];
}

export interface SplitRecipient {
  address: string;
  sharesBps: number;
}

export const shopConfigs = pgTable('shop_configs', {
  wallet: text('wallet').primaryKey(),
  name: text('name'),
  processingFeeBps: integer('processing_fee_bps').notNull().default(0),
  taxJurisdictions: jsonb('tax_jurisdictions').$type<TaxJurisdiction[]>().notNull().default([]),
  allowedEmbedOrigins: jsonb('allowed_embed_origins').$type<string[]>().notNull().default([]),
  updatedAt: ms('updated_at').notNull(),
});

export const splitConfigs = pgTable(
  'split_configs',
  {
    wallet: text('wallet').primaryKey(),
    address: text('address'),
    recipients: jsonb('recipients').$type<SplitRecipient[]>().notNull(),
    createdAt: ms('created_at').notNull(),
    /** The current version's number (split_versions): 1 for the first split, one more per new version. */
    version: integer('version').notNull().default(1),
    /** Receipts created from this time (Unix ms) on pay into the current version; 0 for version 1. */
    startsAt: ms('starts_at').notNull().default(0),
  },
  // A split contract belongs to one merchant: its transfers are indexed under that merchant alone.
  (t) => [uniqueIndex('split_configs_address_idx').on(t.address)],
);

/**
 * Every split a merchant ever had (DESIGN.md "Split versions"), the current one included: a
 * trigger on split_configs (migrations/0025_split_versions.sql) writes the current version here
 * whenever split_configs changes, so every writer of split_configs keeps the history. A receipt
 * pays into the version whose startsAt is the latest not after the receipt's creation
 * (receipts.pay_split records it once the chain worker stores the address). Old versions stay
 * indexed, paid out and settled.
 */
export const splitVersions = pgTable(
  'split_versions',
  {
    wallet: text('wallet').notNull(),
    version: integer('version').notNull(),
    address: text('address'),
    recipients: jsonb('recipients').$type<SplitRecipient[]>().notNull(),
    startsAt: ms('starts_at').notNull(),
    createdAt: ms('created_at').notNull(),
  },
  (t) => [primaryKey({ columns: [t.wallet, t.version] }), uniqueIndex('split_versions_address_idx').on(t.address)],
);

/**
 * A merchant's automatic payouts (DESIGN.md "Recipients"): the chain worker's payout loop releases
 * every recipient whose releasable amount reaches the threshold, at most once per interval.
 * `lastRunAt` is the once-per-interval record: a run claims it with one conditional update, so
 * two instances can never both run inside one interval.
 */
export const splitPayouts = pgTable('split_payouts', {
  wallet: text('wallet').primaryKey(),
  /** The threshold in USD cents (USDC is 1:1, so the token amount is cents × 10^(decimals − 2)). */
  thresholdCents: ms('threshold_cents').notNull(),
  intervalHours: integer('interval_hours').notNull(),
  /** When the last automatic run released something; null before the first. */
  lastRunAt: ms('last_run_at'),
  updatedAt: ms('updated_at').notNull(),
});

export const receipts = pgTable(
  'receipts',
  {
    wallet: text('wallet').notNull(),
    id: text('id').notNull(),
    /** Unguessable token that the public payment URL carries. */
    payToken: text('pay_token').notNull(),
    source: text('source').$type<'api' | 'order' | 'terminal'>().notNull(),
    status: text('status').$type<ReceiptStatus>().notNull(),
    currency: text('currency').notNull(),
    totalCents: bigint('total_cents', { mode: 'bigint' }).notNull(),
    lineItems: jsonb('line_items').$type<StoredLineItem[]>().notNull(),
    jurisdictionCode: text('jurisdiction_code'),
    taxRatePpm: integer('tax_rate_ppm'),
    taxComponents: jsonb('tax_components').$type<string[]>().notNull().default([]),
    transactionHash: text('transaction_hash'),
    transactionTimestamp: ms('transaction_timestamp'),
    /** Hash of the creating request, so a retried create can be told from a conflicting one. */
    requestHash: text('request_hash').notNull(),
    /**
     * The shop's own fields, as its create sent them (src/domain/metadata.ts checks them): echoed by
     * the receipt's answers and its webhook events, never read by the service.
     */
    metadata: jsonb('metadata').$type<Record<string, string>>().notNull().default({}),
    /**
     * Where the payment page links back to the shop once the receipt is settled (src/domain/return-url.ts):
     * checked against the shop's allowed origins at creation and again when the page shows it.
     */
    returnUrl: text('return_url'),
    /**
     * The members of the receipt's summary that never change after creation (id, total,
     * currency, line items, creation time, metadata, returnUrl) as JSON text, written with the row, so that a list
     * is joined text rather than a hundred rows parsed and serialised (SQL function
     * receipt_summary_json, migrations/0017_receipt_json_one_definition.sql, rendered by the
     * creating statement). Null for rows written before it existed; reads render those.
     */
    summaryJson: text('summary_json'),
    /**
     * The receipt's state as the list and the detail show it, JSON members after the brand name:
     * status, payment state and refunded sum (SQL function receipt_state_json). Kept by the
     * database: triggers render it again whenever the row, its history or its refunds change
     * (migrations/0010_receipt_views.sql). Null for rows inserted without it; reads then render
     * it. Reads are the hot path, and a stored rendering saves every read the subqueries.
     */
    stateJson: text('state_json'),
    /**
     * The detail's members after the payer: tax, transaction, status history and refunds (SQL
     * function receipt_detail_json), kept as stateJson is.
     */
    detailJson: text('detail_json'),
    /**
     * The receipt's own payment address (src/chain/payment-address.ts): the CREATE2 address of a
     * forwarder into the merchant's split. Filled in by the chain worker once the merchant's split
     * is known; it is derived from the merchant, the receipt id and the split alone, so a retry or
     * a journal replay gives the same address.
     */
    payAddress: text('pay_address'),
    /**
     * The forwarder factory payAddress commits to (src/payments/pay-address.ts): the version-2
     * factory, lowercase, for every address stored since factory versions exist. Null with an
     * address: stored before, a version-1 address, swept through PAYMENT_FACTORY_V1_ADDRESS.
     */
    payFactory: text('pay_factory'),
    /**
     * The split contract payAddress commits to, lowercase: the split version in effect when the
     * receipt was created (split_versions). A receipt keeps it when the merchant's split changes;
     * its money is swept there. Null with an address only for rows stored before versions: the
     * migration filled those with the merchant's split of the time.
     */
    paySplit: text('pay_split'),
    /**
     * Money other than the receipt's token found at its payment address by balance, never by logs
     * (src/payments/other-money.ts): token address (the zero address for native ETH) to the most
     * base units seen there, positive amounts only. Null: none seen. Gives exception wrong_token.
     */
    otherMoney: jsonb('other_money').$type<Record<string, string>>(),
    /** When the payment address's other balances were last read. */
    balancesCheckedAt: ms('balances_checked_at'),
    /** A read of the other balances was asked for (payment page, hint): the worker does it soon. */
    balancesCheckDue: ms('balances_check_due'),
    /**
     * When the chain worker looked for money that reached the payment address before the address
     * was stored (src/payments/early-money.ts): the address derives from public data, so a buyer
     * can pay it before the receipt exists, or before a journaled receipt is replayed. Null while
     * that is still to do.
     */
    earlyMoneyCheckedAt: ms('early_money_checked_at'),
    /**
     * The scanner's cursor when payAddress was stored: the newest block read without the address.
     * The scanner records every transfer into it from the next block on, so money can only have
     * come early up to here, and the early-money look reads the balance at this block. Null for
     * addresses stored before the column existed (the look then reads at the cursor).
     */
    payAddressBlock: bigint('pay_address_block', { mode: 'bigint' }),
    /** After this, a receipt with nothing received becomes failed (exception expired). */
    expiresAt: ms('expires_at').notNull(),
    /** null, underpaid, overpaid, wrong_token, expired or paid_late (src/domain/receipt-states.ts). */
    exception: text('exception').$type<ReceiptException>(),
    /** What the receipt's counted transfers brought, token base units as a decimal string. */
    paidUnits: text('paid_units').notNull().default('0'),
    /** When the receipt expired with nothing received; money arriving afterwards is paid_late. */
    expiredAt: ms('expired_at'),
    /** The id of the write that created it (src/domain/writes.ts); null for rows older than write ids. */
    writeId: text('write_id'),
    createdAt: ms('created_at').notNull(),
    updatedAt: ms('updated_at').notNull(),
  },
  (t) => [
    primaryKey({ columns: [t.wallet, t.id] }),
    uniqueIndex('receipts_pay_token_idx').on(t.payToken),
    index('receipts_wallet_created_idx').on(t.wallet, t.createdAt.desc(), t.id.desc()),
    uniqueIndex('receipts_pay_address_idx').on(t.payAddress),
    index('receipts_unaddressed_idx').on(t.wallet).where(sql`${t.payAddress} is null`),
    index('receipts_balances_due_idx').on(t.balancesCheckDue).where(sql`${t.balancesCheckDue} is not null`),
    // Only receipts that can still expire: a receipt that received only another token, or was
    // refunded unpaid, never expires and must not weigh on every expiry pass (docs/decisions.md).
    index('receipts_expiry_idx').on(t.expiresAt).where(receiptCanExpire(t)),
    index('receipts_early_money_idx').on(t.wallet).where(sql`${t.payAddress} is not null and ${t.earlyMoneyCheckedAt} is null`),
  ],
);

export const receiptStatusHistory = pgTable(
  'receipt_status_history',
  {
    seq: bigserial('seq', { mode: 'number' }).primaryKey(),
    wallet: text('wallet').notNull(),
    receiptId: text('receipt_id').notNull(),
    status: text('status').$type<ReceiptStatus>().notNull(),
    /** Who moved it: api, order, terminal, tracking, admin, chain. */
    source: text('source').$type<HistorySource>().notNull(),
    note: text('note'),
    at: ms('at').notNull(),
    /**
     * How many times this entry was recorded: a tracking status sent again for the same receipt
     * adds to the count of its one row instead of a new row, so strangers cannot grow a history.
     */
    count: integer('count').notNull().default(1),
  },
  (t) => [
    index('receipt_status_history_receipt_idx').on(t.wallet, t.receiptId, t.seq),
    uniqueIndex('receipt_status_history_tracking_idx').on(t.wallet, t.receiptId, t.status).where(sql`${t.source} = 'tracking'`),
  ],
);

export const inventoryItems = pgTable(
  'inventory_items',
  {
    wallet: text('wallet').notNull(),
    sku: text('sku').notNull(),
    id: text('id').notNull(),
    name: text('name').notNull(),
    description: text('description'),
    category: text('category'),
    priceCents: bigint('price_cents', { mode: 'bigint' }).notNull(),
    /** -1 means unlimited. */
    stockQty: integer('stock_qty').notNull(),
    taxable: boolean('taxable').notNull(),
    createdAt: ms('created_at').notNull(),
    updatedAt: ms('updated_at').notNull(),
  },
  (t) => [primaryKey({ columns: [t.wallet, t.sku] }), uniqueIndex('inventory_items_wallet_id_idx').on(t.wallet, t.id)],
);

export const splitTransactions = pgTable(
  'split_transactions',
  {
    wallet: text('wallet').notNull(),
    id: text('id').notNull(),
    kind: text('kind').$type<'payment' | 'release'>().notNull(),
    splitAddress: text('split_address').notNull(),
    /** Payer for a payment, payee for a release. */
    counterparty: text('counterparty').notNull(),
    receiptId: text('receipt_id'),
    /** Token base units, as a decimal string (numeric keeps every digit). */
    amountUnits: text('amount_units').notNull(),
    feeUnits: text('fee_units').notNull(),
    currency: text('currency').notNull(),
    /** received (into the split) or released (a payout); src/contract/split.ts. */
    status: text('status').$type<(typeof SPLIT_TRANSACTION_KINDS)[number]>().notNull(),
    transactionHash: text('transaction_hash').notNull(),
    logIndex: integer('log_index').notNull(),
    blockNumber: bigint('block_number', { mode: 'bigint' }).notNull(),
    timestamp: ms('timestamp').notNull(),
  },
  (t) => [
    primaryKey({ columns: [t.wallet, t.id] }),
    uniqueIndex('split_transactions_log_idx').on(t.transactionHash, t.logIndex),
    index('split_transactions_wallet_time_idx').on(t.wallet, t.timestamp.desc()),
  ],
);

export const subscriptions = pgTable(
  'subscriptions',
  {
    id: text('id').primaryKey(),
    wallet: text('wallet').notNull(),
    name: text('name').notNull(),
    product: text('product').notNull(),
    scopes: jsonb('scopes').$type<string[]>().notNull(),
    rateLimitPerMinute: integer('rate_limit_per_minute').notNull(),
    status: text('status').$type<'active' | 'revoked'>().notNull(),
    createdAt: ms('created_at').notNull(),
    revokedAt: ms('revoked_at'),
  },
  (t) => [index('subscriptions_wallet_idx').on(t.wallet)],
);

export const subscriptionKeys = pgTable(
  'subscription_keys',
  {
    /** SHA-256 of the key, hex. The key itself is never stored. */
    keyHash: text('key_hash').primaryKey(),
    subscriptionId: text('subscription_id')
      .notNull()
      .references(() => subscriptions.id),
    slot: text('slot').$type<'primary' | 'secondary'>().notNull(),
    /** First characters of the key, so a person can tell keys apart. */
    prefix: text('prefix').notNull(),
    createdAt: ms('created_at').notNull(),
    revokedAt: ms('revoked_at'),
  },
  (t) => [index('subscription_keys_subscription_idx').on(t.subscriptionId, t.slot)],
);

export const users = pgTable(
  'users',
  {
    wallet: text('wallet').primaryKey(),
    displayName: text('display_name').notNull().default(''),
    pfpUrl: text('pfp_url'),
    xp: bigint('xp', { mode: 'number' }).notNull().default(0),
    live: boolean('live').notNull().default(false),
    spacePublic: boolean('space_public').notNull().default(false),
    spaceUrl: text('space_url'),
    platform: text('platform'),
    liveSince: ms('live_since'),
    lastSeen: ms('last_seen'),
    lastHeartbeat: ms('last_heartbeat'),
    domains: text('domains').array().notNull().default(sql`'{}'::text[]`),
    platforms: text('platforms').array().notNull().default(sql`'{}'::text[]`),
    languages: text('languages').array().notNull().default(sql`'{}'::text[]`),
    updatedAt: ms('updated_at').notNull(),
  },
  (t) => [
    index('users_xp_idx').on(t.xp.desc(), t.wallet),
    index('users_heartbeat_idx').on(t.lastHeartbeat.desc()),
  ],
);

/**
 * The write id of every write that is not made unique by its own key (src/db/write-claims.ts):
 * statuses, orders, refunds, inventory changes, terminal receipts and journal replays. It is
 * claimed in the write's own transaction, so a retry or a replay whose id is here changes nothing
 * and answers with what the first write made (`ref`). Kept for WRITE_ID_RETENTION_MS.
 */
export const writeIds = pgTable(
  'write_ids',
  {
    writeId: text('write_id').primaryKey(),
    /** The merchant the write belongs to (null for journal replays recorded before write ids). */
    wallet: text('wallet'),
    kind: text('kind').notNull(),
    /** What the write made or changed: an order's receipt id, a refund id, an item's sku. */
    ref: text('ref'),
    /** Fingerprint of the request: the same id with another request is a conflict. */
    requestHash: text('request_hash'),
    at: ms('at').notNull(),
  },
  (t) => [index('write_ids_at_idx').on(t.at)],
);

/**
 * Answers to requests that carried an Idempotency-Key (src/http/idempotency.ts), per caller:
 * the same key with the same request answers this again, with another request 409. Kept for
 * IDEMPOTENCY_RETENTION_MS (more than the 24 hours DESIGN.md promises).
 */
export const idempotencyKeys = pgTable(
  'idempotency_keys',
  {
    scope: text('scope').notNull(),
    key: text('key').notNull(),
    requestHash: text('request_hash').notNull(),
    status: integer('status').notNull(),
    contentType: text('content_type'),
    body: text('body').notNull(),
    createdAt: ms('created_at').notNull(),
  },
  (t) => [primaryKey({ columns: [t.scope, t.key] }), index('idempotency_keys_created_idx').on(t.createdAt)],
);

/**
 * Acknowledged writes from an instance's journal that can never apply (a create whose id another
 * request took with another body, a status whose receipt never appeared), kept for the merchant
 * to see in the admin app and sent to their webhooks as write.rejected: never dropped silently.
 */
export const rejectedWrites = pgTable(
  'rejected_writes',
  {
    writeId: text('write_id').primaryKey(),
    wallet: text('wallet').notNull(),
    kind: text('kind').notNull(),
    receiptId: text('receipt_id'),
    reason: text('reason').notNull(),
    /** The journal entry as it was acknowledged. */
    entry: jsonb('entry').$type<Record<string, unknown>>().notNull(),
    acknowledgedAt: ms('acknowledged_at').notNull(),
    rejectedAt: ms('rejected_at').notNull(),
  },
  (t) => [index('rejected_writes_wallet_idx').on(t.wallet, t.rejectedAt.desc())],
);

/** Sign-in challenges: single use, short-lived; the signed message is rebuilt from this row. */
export const authNonces = pgTable(
  'auth_nonces',
  {
    nonce: text('nonce').primaryKey(),
    wallet: text('wallet').notNull(),
    issuedAt: ms('issued_at').notNull(),
    expiresAt: ms('expires_at').notNull(),
    usedAt: ms('used_at'),
  },
  // The purge (src/auth/purge.ts) finds expired challenges through it.
  (t) => [index('auth_nonces_expires_idx').on(t.expiresAt)],
);

/** Admin sessions: the JWT names one, so logout and revocation take effect on the server. */
export const sessions = pgTable(
  'sessions',
  {
    id: text('id').primaryKey(),
    wallet: text('wallet').notNull(),
    createdAt: ms('created_at').notNull(),
    expiresAt: ms('expires_at').notNull(),
    revokedAt: ms('revoked_at'),
  },
  (t) => [index('sessions_wallet_idx').on(t.wallet), index('sessions_expires_idx').on(t.expiresAt)],
);

/**
 * Per-merchant counters behind the caps the database enforces (src/db/counters.ts): active
 * subscriptions, webhook endpoints, server-side split deployments of one day. A slot is taken by
 * one conditional increment, so concurrent requests can never get past a cap together.
 */
export const usageCounters = pgTable(
  'usage_counters',
  {
    wallet: text('wallet').notNull(),
    /** What is counted: subscriptions, webhook_endpoints, split_deploys:<YYYY-MM-DD>. */
    name: text('name').notNull(),
    n: integer('n').notNull().default(0),
  },
  (t) => [primaryKey({ columns: [t.wallet, t.name] })],
);

/** Platform roles granted to wallets (superadmins come from configuration). */
export const userRoles = pgTable(
  'user_roles',
  {
    wallet: text('wallet').notNull(),
    /** admin: a platform role; merchant: approved for split deployments the platform pays for. */
    role: text('role').$type<'admin' | 'merchant'>().notNull(),
    grantedBy: text('granted_by').notNull(),
    grantedAt: ms('granted_at').notNull(),
  },
  (t) => [primaryKey({ columns: [t.wallet, t.role] })],
);

export interface RefundItem {
  label: string;
  priceCents: string;
  qty: number;
}

export const refunds = pgTable(
  'refunds',
  {
    wallet: text('wallet').notNull(),
    id: text('id').notNull(),
    receiptId: text('receipt_id').notNull(),
    buyer: text('buyer').notNull(),
    amountCents: bigint('amount_cents', { mode: 'bigint' }).notNull(),
    items: jsonb('items').$type<RefundItem[]>().notNull(),
    txHash: text('tx_hash'),
    /** The Transfer log of txHash that pays the buyer, once verified on chain; one refund per transfer. */
    logIndex: integer('log_index'),
    /** Token base units that transfer moved, as a decimal string. */
    amountUnits: text('amount_units'),
    /**
     * The proving transfer's place among its transaction's logs (0 for the first): unlike the log
     * index, it stays the same when a reorganisation moves the transaction to another block, so it
     * is the key one transfer proves one refund by. Null on refunds recorded before it was kept.
     */
    logPosition: integer('log_position'),
    /** The block that held the transfer when last read; both null once a reorganisation removed it. */
    blockNumber: bigint('block_number', { mode: 'bigint' }),
    /** Null also when a reorganisation replaced blocks from at or below blockNumber: to be read again. */
    blockHash: text('block_hash'),
    /** When the transfer was CONFIRMATIONS deep; null until then, and again once a reorganisation removed it. */
    verifiedAt: ms('verified_at'),
    /** When the worker found that a reorganisation had removed the transfer; null while it is on the chain. */
    removedAt: ms('removed_at'),
    createdBy: text('created_by').notNull(),
    createdAt: ms('created_at').notNull(),
  },
  (t) => [
    primaryKey({ columns: [t.wallet, t.id] }),
    index('refunds_receipt_idx').on(t.wallet, t.receiptId),
    // One transfer proves one refund: by its place in its transaction, which a reorganisation that
    // moves the transaction does not change (its log index in the block does).
    uniqueIndex('refunds_transfer_position_idx').on(t.txHash, t.logPosition),
    // The proofs the chain worker follows (src/payments/refund-proofs.ts).
    index('refunds_proof_idx').on(t.blockNumber).where(sql`${t.logPosition} is not null`),
  ],
);

export const webhookEndpoints = pgTable(
  'webhook_endpoints',
  {
    wallet: text('wallet').notNull(),
    id: text('id').notNull(),
    url: text('url').notNull(),
    events: jsonb('events').$type<string[]>().notNull(),
    /** Standard Webhooks signing secret (whsec_…); needed in clear to sign deliveries. */
    secret: text('secret').notNull(),
    createdAt: ms('created_at').notNull(),
    disabledAt: ms('disabled_at'),
  },
  (t) => [primaryKey({ columns: [t.wallet, t.id] })],
);

/** One row per event a merchant's webhooks hear about (the outbox). */
export const webhookEvents = pgTable(
  'webhook_events',
  {
    wallet: text('wallet').notNull(),
    /** Standard Webhooks message id (msg_…), the same on every retry. */
    id: text('id').notNull(),
    type: text('type').notNull(),
    payload: jsonb('payload').$type<Record<string, unknown>>().notNull(),
    /** A key that makes enqueueing the same event twice a no-op (e.g. type + receipt). */
    dedupeKey: text('dedupe_key').notNull(),
    createdAt: ms('created_at').notNull(),
  },
  (t) => [
    primaryKey({ columns: [t.wallet, t.id] }),
    uniqueIndex('webhook_events_dedupe_idx').on(t.wallet, t.dedupeKey),
    // GET /api/events: a merchant's events newest first, keyset-paginated (src/webhooks/events.ts).
    index('webhook_events_wallet_created_idx').on(t.wallet, t.createdAt.desc(), t.id.desc()),
  ],
);

/** One row per event and endpoint: what is due, and how it went. */
export const webhookDeliveries = pgTable(
  'webhook_deliveries',
  {
    wallet: text('wallet').notNull(),
    id: text('id').notNull(),
    eventId: text('event_id').notNull(),
    endpointId: text('endpoint_id').notNull(),
    status: text('status').$type<'pending' | 'delivered' | 'failed'>().notNull(),
    attempts: integer('attempts').notNull().default(0),
    nextAttemptAt: ms('next_attempt_at').notNull(),
    lastStatusCode: integer('last_status_code'),
    lastError: text('last_error'),
    createdAt: ms('created_at').notNull(),
    deliveredAt: ms('delivered_at'),
  },
  (t) => [
    primaryKey({ columns: [t.wallet, t.id] }),
    uniqueIndex('webhook_deliveries_event_endpoint_idx').on(t.eventId, t.endpointId),
    index('webhook_deliveries_due_idx').on(t.status, t.nextAttemptAt),
  ],
);

/** Every delivery attempt, for the admin app. */
export const webhookAttempts = pgTable(
  'webhook_attempts',
  {
    seq: bigserial('seq', { mode: 'number' }).primaryKey(),
    wallet: text('wallet').notNull(),
    deliveryId: text('delivery_id').notNull(),
    at: ms('at').notNull(),
    statusCode: integer('status_code'),
    error: text('error'),
    durationMs: integer('duration_ms').notNull(),
  },
  (t) => [index('webhook_attempts_delivery_idx').on(t.wallet, t.deliveryId, t.seq)],
);

/** Leader leases: exactly one instance at a time runs each background worker. */
export const leases = pgTable('leases', {
  name: text('name').primaryKey(),
  holder: text('holder').notNull(),
  expiresAt: ms('expires_at').notNull(),
});

/**
 * Token transfers into a receipt's payment address ('in') and out of it into the merchant's split
 * (the sweep, 'sweep'): the only facts a receipt's payment is read from. One row per log, from
 * the block it was read in; a reorganisation that removes the block withdraws the row.
 */
export const receiptTransfers = pgTable(
  'receipt_transfers',
  {
    transactionHash: text('transaction_hash').notNull(),
    logIndex: integer('log_index').notNull(),
    wallet: text('wallet').notNull(),
    receiptId: text('receipt_id').notNull(),
    kind: text('kind').$type<'in' | 'sweep'>().notNull(),
    /** The ERC-20 contract that emitted the Transfer. */
    token: text('token').notNull(),
    fromAddress: text('from_address').notNull(),
    amountUnits: text('amount_units').notNull(),
    blockNumber: bigint('block_number', { mode: 'bigint' }).notNull(),
    blockHash: text('block_hash').notNull(),
    timestamp: ms('timestamp').notNull(),
  },
  (t) => [
    primaryKey({ columns: [t.transactionHash, t.logIndex] }),
    index('receipt_transfers_receipt_idx').on(t.wallet, t.receiptId),
    index('receipt_transfers_block_idx').on(t.blockNumber),
  ],
);

/**
 * Receipts whose money the chain worker still has to follow: something arrived and the receipt is
 * not yet completed at depth, or a sweep is owed. The worker reads this small set every pass
 * instead of every open receipt.
 */
export const receiptWatch = pgTable('receipt_watch', {
  wallet: text('wallet').notNull(),
  receiptId: text('receipt_id').notNull(),
  /** The last sweep sent for this receipt and when; a sweep not seen on chain is sent again later. */
  sweepTx: text('sweep_tx'),
  sweepSentAt: ms('sweep_sent_at'),
  since: ms('since').notNull(),
  /**
   * The first block at which settling the receipt again can change anything: its newest transfer
   * or sweep at depth. Null: every pass (new money, a sweep owed, a reorganisation). A receipt
   * waiting for depth costs no pass any work before then, so hundreds of dusted addresses do not
   * slow another merchant's payment.
   */
  dueBlock: bigint('due_block', { mode: 'bigint' }),
}, (t) => [primaryKey({ columns: [t.wallet, t.receiptId] }), index('receipt_watch_due_idx').on(t.dueBlock)]);

/**
 * Transaction hashes a payment page sent: hints of where to look sooner, never a claim on money.
 * A receipt holds at most a few unresolved ones; the worker checks them oldest-checked first.
 */
export const paymentHints = pgTable(
  'payment_hints',
  {
    wallet: text('wallet').notNull(),
    receiptId: text('receipt_id').notNull(),
    transactionHash: text('transaction_hash').notNull(),
    createdAt: ms('created_at').notNull(),
    checkedAt: ms('checked_at').notNull().default(0),
    resolvedAt: ms('resolved_at'),
    /** mined (the block scan covers it), or not_found. */
    outcome: text('outcome'),
  },
  (t) => [
    primaryKey({ columns: [t.wallet, t.receiptId, t.transactionHash] }),
    index('payment_hints_open_idx').on(t.checkedAt).where(sql`${t.resolvedAt} is null`),
  ],
);

/** Hashes of the blocks the chain worker read, to notice a reorganisation. */
export const chainBlocks = pgTable(
  'chain_blocks',
  {
    cursor: text('cursor').notNull(),
    number: bigint('number', { mode: 'bigint' }).notNull(),
    hash: text('hash').notNull(),
  },
  (t) => [primaryKey({ columns: [t.cursor, t.number] })],
);

/** How far each chain scanner has read. */
export const chainCursors = pgTable('chain_cursors', {
  name: text('name').primaryKey(),
  block: bigint('block', { mode: 'bigint' }).notNull(),
  updatedAt: ms('updated_at').notNull(),
});

/** One attempt at a sweep's transaction: the first send or a replacement with the same nonce. */
export interface SweepAttempt {
  hash: string;
  /** Wei, as decimal strings. */
  maxFeePerGas: string;
  maxPriorityFeePerGas: string;
  /** The chain's head when it was sent, and when. */
  block: string;
  at: number;
}

/**
 * Sweeps the service sent (src/payments/sweeper.ts): one nonce of the sending account each, with
 * every transaction sent for it (a replacement keeps the nonce and raises the fee), so whichever
 * of them is mined, the sweep is done once. An address has at most one pending sweep.
 *
 *   pending  sent, not yet mined (as far as the chain's latest block says)
 *   mined    one of its transactions is in a block (mined_hash, mined_block)
 *   lost     its nonce was used by a transaction that is none of its own; the money stays at the
 *            address and a new sweep may be sent for it
 */
export const sweeps = pgTable(
  'sweeps',
  {
    id: bigserial('id', { mode: 'number' }).primaryKey(),
    /** The sending account, lower-case. */
    account: text('account').notNull(),
    nonce: bigint('nonce', { mode: 'bigint' }).notNull(),
    wallet: text('wallet').notNull(),
    receiptId: text('receipt_id').notNull(),
    payAddress: text('pay_address').notNull(),
    token: text('token').notNull(),
    /** The contract called and the call, the same in every attempt. */
    target: text('target').notNull(),
    data: text('data').notNull(),
    gas: bigint('gas', { mode: 'bigint' }).notNull(),
    /** The balance at the address when the sweep was first sent, token base units. */
    amountUnits: text('amount_units').notNull(),
    state: text('state').$type<'pending' | 'mined' | 'lost'>().notNull(),
    attempts: jsonb('attempts').$type<SweepAttempt[]>().notNull(),
    /** The signed transaction of the newest attempt, sent again if a node forgot it. */
    raw: text('raw').notNull(),
    /** The fee a replacement would need is above MAX_FEE_GWEI: it waits. */
    atFeeCap: boolean('at_fee_cap').notNull().default(false),
    minedHash: text('mined_hash'),
    minedBlock: bigint('mined_block', { mode: 'bigint' }),
    createdAt: ms('created_at').notNull(),
    updatedAt: ms('updated_at').notNull(),
  },
  (t) => [
    uniqueIndex('sweeps_pending_address_idx').on(t.payAddress).where(sql`${t.state} = 'pending'`),
    uniqueIndex('sweeps_pending_nonce_idx').on(t.account, t.nonce).where(sql`${t.state} = 'pending'`),
    index('sweeps_address_idx').on(t.payAddress, t.id),
  ],
);

/**
 * The next nonce of each account the service sends from, kept here rather than asked of a node:
 * a load-balanced node that lags answers a stale pending count. Reconciled with the chain's latest
 * count (never the pending one) before each use.
 */
export const chainNonces = pgTable('chain_nonces', {
  account: text('account').primaryKey(),
  next: bigint('next', { mode: 'bigint' }).notNull(),
  updatedAt: ms('updated_at').notNull(),
});

/**
 * Facts the chain worker leader publishes for every instance (the admin app may ask any of them):
 * name 'sweeps' holds the sweeper's health (src/payments/sweeper.ts, SweepHealth).
 */
export const chainStatus = pgTable('chain_status', {
  name: text('name').primaryKey(),
  data: jsonb('data').notNull(),
  updatedAt: ms('updated_at').notNull(),
});
