/**
 * The API calls the admin app makes. Every request body and answer is typed by the API contract
 * (src/contract/), and every answer is checked against its schema there (see call in ./http.ts):
 * a server change that breaks a page fails the type check.
 */
import { Ok } from '../../../src/contract/common.ts';
import { ApkList as ApkListSchema, type ApkList, type ApkPackage } from '../../../src/contract/apk.ts';
import { Challenge, SessionAnswer, SignedIn, SignedOut, type Session } from '../../../src/contract/auth.ts';
import { InventoryList, InventorySaved, type InventoryItem, type UpsertInventoryBody } from '../../../src/contract/inventory.ts';
import { OrderCreated, type OrderBody, type OrderReceipt } from '../../../src/contract/orders.ts';
import { Platform as PlatformSchema, type Platform } from '../../../src/contract/platform.ts';
import {
  CHAIN_STATUSES,
  CHECKOUT_SUCCESS,
  INITIAL_STATUSES,
  ReceiptDetail as ReceiptDetailSchema,
  ReceiptList,
  TRACKING_STATUSES,
  type LineItem,
  type Receipt,
  type ReceiptDetail,
  type ReceiptRefundSummary,
} from '../../../src/contract/receipts.ts';
import { RefundList, RefundRecorded, type Refund, type RefundBody, type RefundToken } from '../../../src/contract/refunds.ts';
import { RejectedWriteList, type RejectedWrite } from '../../../src/contract/rejected-writes.ts';
import { SweepStatusAnswer } from '../../../src/contract/sweeps.ts';
import { ShopConfigAnswer, ShopConfigSaved, type SaveShopConfigBody, type ShopConfig } from '../../../src/contract/shop.ts';
import {
  PayoutSettingsAnswer,
  Settlement,
  SplitAnswer,
  SplitBalances as SplitBalancesSchema,
  SplitDeployed,
  SplitVersionCreated,
  SplitVersions,
  SweepTransaction,
  type DeploySplitBody,
  type PayoutSettingsBody,
  type SplitBalances,
  type SplitConfig,
  type SplitVersion,
  type SplitVersionBody,
} from '../../../src/contract/split.ts';
import { KeyRotated, PRODUCT_NAMES, PRODUCTS as PRODUCT_TABLE, SubscriptionCreated, SubscriptionList, SubscriptionRevoked, type CreateSubscriptionBody, type KeySlot, type Subscription } from '../../../src/contract/subscriptions.ts';
import { TerminalCreated, type TerminalBody, type TerminalReceipt } from '../../../src/contract/terminal.ts';
import { LiveUsers, UserSearchResult, type LiveUser, type SearchUsersQuery, type User } from '../../../src/contract/users.ts';
import {
  DeliveryList,
  EndpointCreated,
  EndpointList,
  TestQueued,
  WEBHOOK_EVENT_TYPES,
  type Attempt,
  type CreateEndpointBody,
  type Delivery,
  type Endpoint,
  type Targets,
} from '../../../src/contract/webhooks.ts';
import { apiUrl, call } from './http.ts';

export type {
  ApkList,
  ApkPackage,
  Delivery,
  InventoryItem,
  LineItem,
  LiveUser,
  Platform,
  Receipt,
  ReceiptDetail,
  Refund,
  RefundToken,
  RejectedWrite,
  Session,
  PayoutSettingsAnswer,
  Settlement,
  ShopConfig,
  SplitBalances,
  SplitConfig,
  Subscription,
  User,
};
/** A refund as the receipt detail lists it; `verified`: its transfer to the buyer was found on the chain. */
export type ReceiptRefund = ReceiptRefundSummary;
/** A receipt just created from the terminal or an order, with its payment URL. */
export type CreatedReceipt = TerminalReceipt | OrderReceipt;
export type ShopConfigInput = SaveShopConfigBody;
export type InventoryInput = UpsertInventoryBody;
export type Webhook = Endpoint;
export type WebhookTargets = Targets;
/** An attempt with no answer has its raw error ("CODE: message"), the code, and the same in plain words. */
export type DeliveryAttempt = Attempt;
export type UserQuery = Omit<SearchUsersQuery, 'limit' | 'scan'>;

export const auth = {
  me: () => call('GET', '/api/auth/me', SessionAnswer, { anonymous: true }),
  challenge: (wallet: string) => call('POST', '/api/auth/challenge', Challenge, { body: { wallet }, anonymous: true }),
  login: (wallet: string, nonce: string, signature: string) =>
    call('POST', '/api/auth/login', SignedIn, { body: { wallet, nonce, signature }, anonymous: true }),
  logout: () => call('POST', '/api/auth/logout', SignedOut),
};

export const getPlatform = () => call('GET', '/api/admin/platform', PlatformSchema);

/** A write acknowledged during a database outage that could never apply (GET /api/admin/rejected-writes). */
export const rejectedWrites = {
  list: () => call('GET', '/api/admin/rejected-writes', RejectedWriteList, { query: { limit: 50 } }),
};

export const receipts = {
  list: () => call('GET', '/api/receipts', ReceiptList, { query: { limit: 200 } }),
  get: (id: string) => call('GET', `/api/receipts/${encodeURIComponent(id)}`, ReceiptDetailSchema),
  refunds: (id: string) => call('GET', `/api/receipts/${encodeURIComponent(id)}/refunds`, RefundList),
  /** With txHash the server checks the transfer on the chain (400 when it does not prove the refund); without, it is unverified. */
  refund: (body: RefundBody) => call('POST', '/api/receipts/refund', RefundRecorded, { body }),
  terminal: (body: TerminalBody) => call('POST', '/api/receipts/terminal', TerminalCreated, { body }),
  /**
   * What waits at the receipt's payment address (`token`: the receipt's by default, `eth` for
   * native ETH) and the transaction that sweeps it into the split, for the merchant's wallet to send.
   */
  sweep: (id: string, token?: 'eth') => call('GET', `/api/admin/receipts/${encodeURIComponent(id)}/sweep`, SweepTransaction, { query: { token } }),
  order: (body: OrderBody) => call('POST', '/api/orders', OrderCreated, { body }),
};

export const shop = {
  get: () => call('GET', '/api/shop/config', ShopConfigAnswer),
  save: (body: ShopConfigInput) => call('POST', '/api/shop/config', ShopConfigSaved, { body }),
};

export const split = {
  get: () => call('GET', '/api/split/deploy', SplitAnswer),
  deploy: (body: DeploySplitBody) => call('POST', '/api/split/deploy', SplitDeployed, { body }),
};

/** Every version of the split (newest first), and a new one with new recipients. */
export const splitVersions = {
  list: () => call('GET', '/api/admin/split/versions', SplitVersions),
  create: (body: SplitVersionBody) => call('POST', '/api/admin/split/versions', SplitVersionCreated, { body }),
};
export type { SplitVersion };

/** What the split contract holds and released, per recipient; token base units as decimal strings. */
export const getSplitBalances = () => call('GET', '/api/admin/split/balances', SplitBalancesSchema);

/** The split's settlement from `from` (Unix ms; since the split began without it) to now. */
export const getSettlement = (q: { from?: number }) => call('GET', '/api/split/settlements', Settlement, { query: { from: q.from } });
/** The same period's lines as CSV: a plain link, the session cookie goes with it. */
export const settlementCsvUrl = (q: { from?: number }) => {
  const url = new URL(apiUrl('/api/split/settlements'));
  url.searchParams.set('format', 'csv');
  if (q.from !== undefined) url.searchParams.set('from', String(q.from));
  return url.toString();
};

/**
 * Every receipt (with `status`, only those) as CSV: GET /api/receipts?format=csv, all pages in one
 * download. A plain link: the session cookie goes with it.
 */
export const receiptsCsvUrl = (q: { status?: string }) => {
  const url = new URL(apiUrl('/api/receipts'));
  url.searchParams.set('format', 'csv');
  if (q.status !== undefined && q.status !== '') url.searchParams.set('status', q.status);
  return url.toString();
};

/** Every split transaction as CSV (GET /api/split/transactions?format=csv): a plain link, as above. */
export const splitTransactionsCsvUrl = () => {
  const url = new URL(apiUrl('/api/split/transactions'));
  url.searchParams.set('format', 'csv');
  return url.toString();
};

/** Automatic payouts: a threshold in USD and an interval in hours, released with the service's gas. */
export const payouts = {
  get: () => call('GET', '/api/admin/split/payouts', PayoutSettingsAnswer),
  set: (body: PayoutSettingsBody) => call('PUT', '/api/admin/split/payouts', PayoutSettingsAnswer, { body }),
  off: () => call('DELETE', '/api/admin/split/payouts', PayoutSettingsAnswer),
};

/** Whether sweeps into splits wait for gas or for fees (the banner on every page). */
export const getSweepStatus = () => call('GET', '/api/admin/sweeps/status', SweepStatusAnswer);

export const inventory = {
  list: () => call('GET', '/api/inventory', InventoryList),
  save: (body: InventoryInput) => call('POST', '/api/inventory', InventorySaved(''), { body }),
};

export const subscriptions = {
  list: () => call('GET', '/api/admin/subscriptions', SubscriptionList),
  create: (body: CreateSubscriptionBody) => call('POST', '/api/admin/subscriptions', SubscriptionCreated, { body }),
  rotate: (id: string, key: KeySlot) => call('POST', `/api/admin/subscriptions/${encodeURIComponent(id)}/rotate`, KeyRotated, { body: { key } }),
  revoke: (id: string) => call('DELETE', `/api/admin/subscriptions/${encodeURIComponent(id)}`, SubscriptionRevoked),
};

export const webhooks = {
  list: () => call('GET', '/api/admin/webhooks', EndpointList),
  create: (body: CreateEndpointBody) => call('POST', '/api/admin/webhooks', EndpointCreated, { body }),
  remove: (id: string) => call('DELETE', `/api/admin/webhooks/${encodeURIComponent(id)}`, Ok('Removed')),
  /** Queues one webhook.test event to this endpoint only; its result shows in the deliveries. */
  sendTest: (id: string) => call('POST', `/api/admin/webhooks/${encodeURIComponent(id)}/test`, TestQueued),
  deliveries: () => call('GET', '/api/admin/webhooks/deliveries', DeliveryList),
  redeliver: (id: string) => call('POST', `/api/admin/webhooks/deliveries/${encodeURIComponent(id)}/redeliver`, Ok('Queued')),
};

export const users = {
  search: (query: UserQuery) => call('GET', '/api/users/search', UserSearchResult, { query: { ...query, limit: 50 } }),
  live: () => call('GET', '/api/users/live', LiveUsers),
};

/** The statuses the receipts list filters by: every named one, and the partial refund the admin app sets. */
export const RECEIPT_STATUSES = [...INITIAL_STATUSES, ...TRACKING_STATUSES, CHECKOUT_SUCCESS, ...CHAIN_STATUSES, 'refund_partial'] as const;

/** The products a subscription is issued for, with what each allows. */
export const PRODUCTS = PRODUCT_NAMES.map((name) => ({ name, description: PRODUCT_TABLE[name]?.description ?? '' }));

/** The events an endpoint can subscribe to; webhook.test is sent on request only. */
export const WEBHOOK_EVENTS = WEBHOOK_EVENT_TYPES;

/** The stored signed APKs of the brands asked for (the container's brand by default), and whether this session may upload. */
export const apks = {
  list: (apps: string[]) => call('GET', '/api/admin/apk', ApkListSchema, { query: { apps: apps.join(',') } }),
};

