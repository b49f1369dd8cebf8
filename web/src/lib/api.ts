/** The API calls the admin app makes, each with the shape of its answer. */
import { arr, bool, nullable, num, optional, record, str } from './decode.ts';
import { call } from './http.ts';

const lineItem = record({ label: str, priceUsd: num, qty: optional(num) });
export type LineItem = ReturnType<typeof lineItem>;

const session = record({ wallet: str, roles: arr(str), csrfToken: str });
export type Session = ReturnType<typeof session>;

export const auth = {
  me: () => call('GET', '/api/auth/me', session, { anonymous: true }),
  challenge: (wallet: string) =>
    call('POST', '/api/auth/challenge', record({ nonce: str, typedData: (v) => v }), { body: { wallet }, anonymous: true }),
  login: (wallet: string, nonce: string, signature: string) =>
    call('POST', '/api/auth/login', session, { body: { wallet, nonce, signature }, anonymous: true }),
  logout: () => call('POST', '/api/auth/logout', record({ ok: bool })),
};

const platform = record({
  platformRecipientAddress: nullable(str),
  platformFeeBps: num,
  chainId: num,
  brandName: str,
  containerType: str,
  brandKey: str,
});
export type Platform = ReturnType<typeof platform>;
export const getPlatform = () => call('GET', '/api/admin/platform', platform);

const receipt = record({
  receiptId: str,
  totalUsd: num,
  currency: str,
  lineItems: arr(lineItem),
  createdAt: num,
  status: str,
  /** The sum of its refunds: above 0 and below the total, the receipt keeps its status (partly refunded). */
  refundedUsd: num,
});
export type Receipt = ReturnType<typeof receipt>;

/** A refund as the receipt detail lists it; `verified`: its transfer to the buyer was found on the chain. */
const receiptRefund = record({ id: str, usd: num, buyer: str, txHash: nullable(str), verified: bool, createdAt: num });
export type ReceiptRefund = ReturnType<typeof receiptRefund>;

const receiptDetail = record({
  receiptId: str,
  totalUsd: num,
  currency: str,
  lineItems: arr(lineItem),
  createdAt: num,
  brandName: str,
  status: str,
  /** null, underpaid, overpaid, wrong_token, expired or paid_late (DESIGN.md "Receipt states"). */
  exception: nullable(str),
  /** Unix ms after which a receipt with nothing received fails (expired). */
  expiresAt: optional(num),
  refundedUsd: num,
  payTo: nullable(str),
  /** The address that sent the receipt's first payment: perhaps an exchange's, so the buyer confirms it before a refund. */
  payer: nullable(str),
  jurisdictionCode: nullable(str),
  taxRate: num,
  taxComponents: arr(str),
  transactionHash: optional(str),
  transactionTimestamp: optional(num),
  // count: a repeated tracking status, recorded once with how many times it came.
  statusHistory: arr(record({ status: str, at: num, source: str, count: optional(num) })),
  refunds: arr(receiptRefund),
  /** The payment URL, in the admin session's answer only: shown again while the receipt is unpaid. */
  paymentUrl: optional(str),
});
export type ReceiptDetail = ReturnType<typeof receiptDetail>;

const refund = record({ id: str, receiptId: str, buyer: str, usd: num, txHash: nullable(str), verified: bool, createdBy: str, createdAt: num });
export type Refund = ReturnType<typeof refund>;

/** The token a refund is sent in from the merchant's wallet; null when the server runs without a chain. */
const refundToken = record({ chainId: num, address: str, symbol: str, decimals: num });
export type RefundToken = ReturnType<typeof refundToken>;

/** A receipt just created, with its payment URL. */
const created = record({
  receiptId: str,
  totalUsd: num,
  currency: str,
  lineItems: arr(lineItem),
  createdAt: num,
  status: str,
  paymentUrl: str,
  jurisdictionCode: nullable(str),
  taxRate: num,
});
export type CreatedReceipt = ReturnType<typeof created>;

/** A write acknowledged during a database outage that could never apply (GET /api/admin/rejected-writes). */
const rejectedWrite = record({ writeId: str, kind: str, receiptId: nullable(str), reason: str, acknowledgedAt: num, rejectedAt: num });
export type RejectedWrite = ReturnType<typeof rejectedWrite>;
export const rejectedWrites = {
  list: () => call('GET', '/api/admin/rejected-writes', record({ writes: arr(rejectedWrite) }), { query: { limit: 50 } }),
};

export const receipts = {
  list: () => call('GET', '/api/receipts', record({ receipts: arr(receipt), degraded: optional(bool) }), { query: { limit: 200 } }),
  get: (id: string) => call('GET', `/api/receipts/${encodeURIComponent(id)}`, receiptDetail),
  refunds: (id: string) =>
    call('GET', `/api/receipts/${encodeURIComponent(id)}/refunds`, record({ refunds: arr(refund), token: nullable(refundToken) })),
  /** With txHash the server checks the transfer on the chain (400 when it does not prove the refund); without, it is unverified. */
  refund: (body: { receiptId: string; wallet: string; buyer: string; usd: number; txHash?: string }) =>
    call('POST', '/api/receipts/refund', record({ ok: bool, refundId: str, refundedUsd: num, status: str, verified: bool }), { body }),
  terminal: (body: { amountUsd: number; label: string; jurisdictionCode?: string; taxRate?: number }) =>
    call('POST', '/api/receipts/terminal', record({ ok: bool, receipt: created }), { body }),
  order: (body: { items: { sku: string; qty: number }[]; jurisdictionCode?: string }) =>
    call('POST', '/api/orders', record({ ok: bool, receipt: created }), { body }),
};

const jurisdiction = record({ code: str, rate: num, components: arr(str) });
const shopConfig = record({
  name: nullable(str),
  brandName: str,
  processingFeePct: num,
  taxJurisdictions: arr(jurisdiction),
  allowedEmbedOrigins: arr(str),
});
export type ShopConfig = ReturnType<typeof shopConfig>;
export type ShopConfigInput = {
  processingFeePct: number;
  name?: string;
  taxJurisdictions: { code: string; rate: number; components?: string[] }[];
  allowedEmbedOrigins: string[];
};
export const shop = {
  get: () => call('GET', '/api/shop/config', record({ config: shopConfig })),
  save: (body: ShopConfigInput) => call('POST', '/api/shop/config', record({ ok: bool, config: shopConfig }), { body }),
};

const splitConfig = record({ address: nullable(str), recipients: arr(record({ address: str, sharesBps: num })) });
export type SplitConfig = ReturnType<typeof splitConfig>;
export const split = {
  get: () => call('GET', '/api/split/deploy', record({ split: splitConfig })),
  deploy: (body: { splitAddress?: string; recipients: { address: string; sharesBps: number }[] }) =>
    call('POST', '/api/split/deploy', record({ ok: bool, split: splitConfig, idempotent: optional(bool) }), { body }),
};

/** What the split contract holds and released, per recipient; token base units as decimal strings. */
const splitBalances = record({
  address: str,
  token: str,
  totalReceived: str,
  totalReleased: str,
  balance: str,
  recipients: arr(record({ address: str, sharesBps: num, released: str, releasable: str })),
});
export type SplitBalances = ReturnType<typeof splitBalances>;
export const getSplitBalances = () => call('GET', '/api/admin/split/balances', splitBalances);

const item = record({
  id: str,
  sku: str,
  name: str,
  description: optional(str),
  category: optional(str),
  priceUsd: num,
  stockQty: num,
  taxable: bool,
  updatedAt: num,
});
export type InventoryItem = ReturnType<typeof item>;
export type InventoryInput = {
  sku: string;
  name: string;
  priceUsd: number;
  stockQty?: number;
  taxable?: boolean;
  description?: string | null;
  category?: string | null;
};
export const inventory = {
  list: () => call('GET', '/api/inventory', record({ items: arr(item) })),
  save: (body: InventoryInput) => call('POST', '/api/inventory', record({ ok: bool, item }), { body }),
};

const subscription = record({
  id: str,
  wallet: str,
  name: str,
  product: str,
  scopes: arr(str),
  rateLimitPerMinute: num,
  status: str,
  createdAt: num,
  revokedAt: nullable(num),
  keys: arr(record({ slot: str, prefix: str, createdAt: num })),
});
export type Subscription = ReturnType<typeof subscription>;
export const subscriptions = {
  list: () => call('GET', '/api/admin/subscriptions', record({ subscriptions: arr(subscription) })),
  create: (body: { name?: string; product: string }) =>
    call('POST', '/api/admin/subscriptions', record({ id: str, name: str, product: str, scopes: arr(str), primaryKey: str, secondaryKey: str }), {
      body,
    }),
  rotate: (id: string, key: 'primary' | 'secondary') =>
    call('POST', `/api/admin/subscriptions/${encodeURIComponent(id)}/rotate`, record({ id: str, slot: str, key: str }), { body: { key } }),
  revoke: (id: string) => call('DELETE', `/api/admin/subscriptions/${encodeURIComponent(id)}`, record({ ok: bool, status: str })),
};

const webhook = record({ id: str, url: str, events: arr(str), createdAt: num });
export type Webhook = ReturnType<typeof webhook>;
/** Targets besides public https URLs that the service accepts: loopback on the dev chain, private ranges in tests. */
const webhookTargets = record({ loopback: bool, private: bool });
export type WebhookTargets = ReturnType<typeof webhookTargets>;
/** An attempt with no answer has its raw error ("CODE: message"), the code, and the same in plain words. */
const attempt = record({
  at: num,
  statusCode: nullable(num),
  error: nullable(str),
  errorCode: nullable(str),
  errorText: nullable(str),
  durationMs: num,
});
export type DeliveryAttempt = ReturnType<typeof attempt>;
const delivery = record({
  id: str,
  eventId: str,
  endpointId: str,
  type: str,
  status: str,
  /** The receipt the event is about; null for events about none (a test event). */
  receiptId: nullable(str),
  attempts: num,
  nextAttemptAt: num,
  lastStatusCode: nullable(num),
  lastError: nullable(str),
  lastErrorCode: nullable(str),
  lastErrorText: nullable(str),
  createdAt: num,
  deliveredAt: nullable(num),
  log: arr(attempt),
});
export type Delivery = ReturnType<typeof delivery>;
export const webhooks = {
  list: () => call('GET', '/api/admin/webhooks', record({ webhooks: arr(webhook), targets: webhookTargets })),
  create: (body: { url: string; events: string[] }) =>
    call('POST', '/api/admin/webhooks', record({ id: str, url: str, events: arr(str), secret: str }), { body }),
  remove: (id: string) => call('DELETE', `/api/admin/webhooks/${encodeURIComponent(id)}`, record({ ok: bool })),
  /** Queues one webhook.test event to this endpoint only; its result shows in the deliveries. */
  sendTest: (id: string) => call('POST', `/api/admin/webhooks/${encodeURIComponent(id)}/test`, record({ deliveryId: str })),
  deliveries: () => call('GET', '/api/admin/webhooks/deliveries', record({ deliveries: arr(delivery) })),
  redeliver: (id: string) =>
    call('POST', `/api/admin/webhooks/deliveries/${encodeURIComponent(id)}/redeliver`, record({ ok: bool })),
};

const user = record({
  wallet: str,
  displayName: str,
  pfpUrl: nullable(str),
  xp: num,
  live: bool,
  lastSeen: nullable(num),
  domains: arr(str),
  platforms: arr(str),
  languages: arr(str),
});
export type User = ReturnType<typeof user>;
const liveUser = record({
  wallet: str,
  displayName: str,
  spaceUrl: nullable(str),
  liveSince: nullable(num),
  lastHeartbeat: num,
  languages: arr(str),
  domains: arr(str),
  platform: nullable(str),
});
export type LiveUser = ReturnType<typeof liveUser>;
export type UserQuery = { q?: string; domains?: string; platforms?: string; languages?: string; minXp?: number; maxXp?: number; live?: boolean };
export const users = {
  search: (query: UserQuery) =>
    call('GET', '/api/users/search', record({ users: arr(user), total: optional(num), degraded: optional(bool) }), { query: { ...query, limit: 50 } }),
  live: () => call('GET', '/api/users/live', record({ live: arr(liveUser), degraded: optional(bool) })),
};

export const RECEIPT_STATUSES = [
  'generated',
  'pending',
  'link_opened',
  'buyer_logged_in',
  'checkout_initialized',
  'checkout_success',
  'tx_mined',
  'recipient_validated',
  'completed',
  'failed',
  'tx_mismatch',
  'refund_partial',
  'refunded',
] as const;

export const PRODUCTS = [
  { name: 'full', description: 'Every developer scope' },
  { name: 'checkout', description: 'Orders, receipts and their status' },
  { name: 'readonly', description: 'Read-only access' },
] as const;

/** The events an endpoint can subscribe to (src/webhooks/outbox.ts WEBHOOK_EVENT_TYPES); webhook.test is sent on request only. */
export const WEBHOOK_EVENTS = [
  'receipt.payment_received',
  'receipt.completed',
  'receipt.tx_mismatch',
  'receipt.expired',
  'receipt.refunded',
  'write.rejected',
] as const;

/** The stored signed APKs of the brands asked for (the container's brand by default), and whether this session may upload. */
const apkPackage = record({ app: str, stored: bool, size: nullable(num), lastModified: nullable(num), etag: nullable(str) });
export type ApkPackage = ReturnType<typeof apkPackage>;
const apkList = record({ containerType: str, brandKey: str, canUpload: bool, packages: arr(apkPackage) });
export type ApkList = ReturnType<typeof apkList>;
export const apks = {
  list: (apps: string[]) => call('GET', '/api/admin/apk', apkList, { query: { apps: apps.join(',') } }),
};
