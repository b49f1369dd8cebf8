/**
 * Receipts: the rules of creation (idempotent per merchant and id), pay tokens and payment URLs,
 * where a payment stands, and tracking statuses with history. How they are stored and read as
 * JSON is the receipts store's: src/db/receipt-store.ts.
 */
import { createHmac, hash } from 'node:crypto';
import { and, eq } from 'drizzle-orm';
import type { Db, Tx } from '../db/client.ts';
import type { ReceiptStore } from '../db/receipt-store.ts';
import { receipts, type StoredLineItem } from '../db/schema.ts';
import { CommitOutcomeUnknown, InvalidInput, NotFound } from '../lib/errors.ts';
import { randomText } from '../lib/ids.ts';
import { setsStatus, transition, type ReceiptException, type ReceiptStatus, type TrackingStatus } from './receipt-states.ts';
import { applyReceiptEvent } from '../db/receipt-events.ts';
import { centsToTokenUnits, centsToUsd, ppmToRate, usdToCents } from '../lib/money.ts';
import { WriteClaims, type Write } from '../db/write-claims.ts';
import { canonicalMetadata, parseMetadata, type Metadata } from './metadata.ts';
import { parseReturnUrl } from './return-url.ts';
import { isAddress, normalizeWallet } from './wallet.ts';

export type { InsertReceiptParams } from '../db/receipt-store.ts';

export { isSensitiveStatus, isTrackingStatus, TRACKING_STATUSES, type TrackingStatus } from './receipt-states.ts';

/** A receipt is payable from creation for this long unless its creation says otherwise. */
export const DEFAULT_TTL_MINUTES = 60;
import { MAX_EXPIRES_IN_MINUTES, MAX_LINE_ITEMS, RECEIPT_ID, type CreatedReceipt, type HistorySource, type ReceiptStatusView } from '../contract/receipts.ts';
export { MAX_EXPIRES_IN_MINUTES, MAX_LINE_ITEMS, RECEIPT_ID };

export interface LineItemInput {
  label: string;
  priceUsd: number;
  qty?: number | undefined;
}

export interface LineItemView {
  label: string;
  priceUsd: number;
  qty?: number;
}

/** Stored line items as answers show them, in dollars. */
export function lineItemViews(items: StoredLineItem[]): LineItemView[] {
  return items.map((i) => {
    const v: LineItemView = { label: i.label, priceUsd: centsToUsd(BigInt(i.priceCents)) };
    if (i.qty !== undefined) v.qty = i.qty;
    return v;
  });
}

export interface ReceiptView {
  receiptId: string;
  totalUsd: number;
  currency: string;
  lineItems: LineItemView[];
  createdAt: number;
  brandName: string;
  status: ReceiptStatus;
  exception: ReceiptException | null;
  expiresAt: number;
  amountPaid: string;
  amountDue: string;
  totalBaseUnits: string;
  amountPaidBaseUnits: string;
  amountDueBaseUnits: string;
  decimals: number;
  token: string | null;
  metadata: Metadata;
  returnUrl: string | null;
}

/** A refund as the receipt detail shows it. */
export interface ReceiptRefundView {
  id: string;
  usd: number;
  amountUsd: number;
  buyer: string;
  txHash: string | null;
  /** Its transfer to the buyer was found on the chain. */
  verified: boolean;
  createdAt: number;
}

export interface ReceiptDetail extends ReceiptView {
  payTo: string | null;
  jurisdictionCode: string | null;
  taxRate: number;
  taxComponents: string[];
  transactionHash?: string;
  transactionTimestamp?: number;
  /** `count`: how many times the entry was recorded, when more than once (a repeated tracking status). */
  statusHistory: { status: ReceiptStatus; at: number; source: HistorySource; count?: number }[];
}

/** The refund fields of a detail, beside ReceiptDetail's; see detailJson. */
export interface ReceiptRefunds {
  refundedUsd: number;
  payer: string | null;
  refunds: ReceiptRefundView[];
}

/** The refund fields of a receipt still in the journal: it has neither refunds nor transfers yet. */
export const NO_REFUNDS: Readonly<ReceiptRefunds> = Object.freeze({ refundedUsd: 0, payer: null, refunds: [] });

type ReceiptRow = typeof receipts.$inferSelect;

export function assertReceiptId(id: unknown): asserts id is string {
  if (typeof id !== 'string' || !RECEIPT_ID.test(id)) {
    throw new InvalidInput('id must be 1-64 characters of letters, digits and . _ : - (starting with a letter or digit)');
  }
}

/** A status sent to POST /api/receipts/status, its fields checked (the status not yet told apart). */
export interface StatusBody {
  receiptId: string;
  wallet: string;
  status: string;
}

/**
 * The body of POST /api/receipts/status, checked in the specification's order so that each field
 * answers its own code (missing_receipt_id, invalid_wallet, missing_status): a schema would answer
 * invalid_input, and in its own order. The wallet comes back lower-case.
 */
export function checkStatusBody(body: unknown): StatusBody {
  const { receiptId, wallet, status } = (body ?? {}) as Record<string, unknown>;
  if (typeof receiptId !== 'string' || receiptId.trim() === '') throw new InvalidInput('receiptId is required', 'missing_receipt_id');
  if (!isAddress(wallet)) throw new InvalidInput('wallet must be a 0x-prefixed 40-hex address', 'invalid_wallet');
  if (typeof status !== 'string' || status.trim() === '') throw new InvalidInput('status is required', 'missing_status');
  return { receiptId, wallet: normalizeWallet(wallet), status };
}

const PAY_TOKEN_BYTES = 16;

/** A receipt's pay token: 128 random bits, URL-safe. */
export function newPayToken(): string {
  return randomText(PAY_TOKEN_BYTES);
}

/**
 * The pay token of a merchant's receipt id, derived rather than drawn: an HMAC under the service's
 * secret (JWT_SECRET, shared by every instance), truncated to 128 bits. A create retried after a
 * timeout, on another instance, or journaled during an outage and replayed later always answers
 * the same payment URL, and the URL still cannot be guessed from the id without the secret.
 */
export function payTokenFor(secret: Uint8Array, wallet: string, id: string): string {
  return createHmac('sha256', secret).update(`splitline.pay-token\0${wallet.toLowerCase()}\0${id}`).digest().toString('base64url', 0, PAY_TOKEN_BYTES);
}

export function paymentUrl(siteUrl: string, id: string, payToken: string): string {
  return `${siteUrl}/pay/${encodeURIComponent(id)}?t=${payToken}`;
}

/** A receipt that a sale just created (an order, or a terminal sale), as both routes answer it. */
export interface CreatedSale {
  receiptId: string;
  totalUsd: number;
  currency: string;
  lineItems: LineItemView[];
  createdAt: number;
  status: ReceiptStatus;
  paymentUrl: string;
  jurisdictionCode: string | null;
  taxRate: number;
  taxComponents: string[];
  metadata: Metadata;
  returnUrl: string | null;
}

export function createdSaleView(row: ReceiptRow, siteUrl: string): CreatedSale {
  return {
    receiptId: row.id,
    totalUsd: centsToUsd(row.totalCents),
    currency: row.currency,
    lineItems: lineItemViews(row.lineItems),
    createdAt: row.createdAt,
    status: row.status,
    paymentUrl: paymentUrl(siteUrl, row.id, row.payToken),
    jurisdictionCode: row.jurisdictionCode,
    taxRate: ppmToRate(BigInt(row.taxRatePpm ?? 0)),
    taxComponents: row.taxComponents,
    metadata: row.metadata,
    returnUrl: row.returnUrl,
  };
}

/** Parses caller-supplied line items into stored form, with exact cents. */
export function parseLineItems(items: readonly LineItemInput[]): { stored: StoredLineItem[]; totalCents: bigint } {
  // Checked at run time as well; through `unknown`, so that the check does not erase the item type.
  const list: unknown = items;
  if (!Array.isArray(list) || items.length === 0) throw new InvalidInput('lineItems must hold at least one item');
  if (items.length > MAX_LINE_ITEMS) throw new InvalidInput(`lineItems may hold at most ${MAX_LINE_ITEMS} items`);
  let total = 0n;
  const stored = items.map((item, i) => {
    const label = typeof item.label === 'string' ? item.label.trim() : '';
    if (label === '' || label.length > 200) throw new InvalidInput(`lineItems[${i}].label must be 1-200 characters`);
    const price = usdToCents(item.priceUsd, `lineItems[${i}].priceUsd`);
    const qty = item.qty ?? 1;
    if (!Number.isInteger(qty) || qty < 1 || qty > 1_000_000) {
      throw new InvalidInput(`lineItems[${i}].qty must be an integer from 1 to 1000000`);
    }
    total += price * BigInt(qty);
    const out: StoredLineItem = { label, priceCents: price.toString() };
    if (item.qty !== undefined) out.qty = qty;
    return out;
  });
  return { stored, totalCents: total };
}

export interface CreateReceiptParams {
  wallet: string;
  id: string;
  lineItems: LineItemInput[];
  totalUsd: number;
  /** Minutes the receipt may be paid in; RECEIPT_TTL_MINUTES when absent. */
  expiresInMinutes?: number | undefined;
  /** The shop's own fields, as sent (unchecked: prepareReceipt checks them). */
  metadata?: unknown;
  /**
   * Where the payment page links back to, as checked by the caller for the deployment's rules and
   * the shop's origins (ReceiptService.create: src/domain/return-url.ts).
   */
  returnUrl?: string | null | undefined;
}

/**
 * Fingerprint of a create request: the same id with a different body is a conflict. A request
 * without expiresInMinutes, or without metadata (or with {}), hashes as it did before the field
 * existed; metadata is compared whatever the order of its keys.
 */
export function receiptRequestHash(
  id: string,
  stored: StoredLineItem[],
  totalCents: bigint,
  expiresInMinutes?: number,
  extra: { metadata?: Metadata; returnUrl?: string | null } = {},
): string {
  const body: Record<string, unknown> = { id, stored, total: totalCents.toString() };
  if (expiresInMinutes !== undefined) body.expiresInMinutes = expiresInMinutes;
  if (extra.metadata !== undefined && Object.keys(extra.metadata).length > 0) body.metadata = canonicalMetadata(extra.metadata);
  if (extra.returnUrl !== undefined && extra.returnUrl !== null) body.returnUrl = extra.returnUrl;
  return hash('sha256', JSON.stringify(body), 'hex');
}

/** When a receipt created at `createdAt` expires. */
export function expiryOf(createdAt: number, expiresInMinutes: number | undefined, ttlMinutes: number): number {
  return createdAt + (expiresInMinutes ?? ttlMinutes) * 60_000;
}

/** Everything a create needs, checked without touching the database (the journal relies on it). */
export function prepareReceipt(params: CreateReceiptParams) {
  assertReceiptId(params.id);
  const { stored, totalCents } = parseLineItems(params.lineItems);
  const declared = usdToCents(params.totalUsd, 'totalUsd');
  if (declared !== totalCents) {
    throw new InvalidInput(
      `totalUsd (${centsToUsd(declared)}) must equal the sum of lineItems priceUsd × qty (${centsToUsd(totalCents)})`,
    );
  }
  if (totalCents === 0n) throw new InvalidInput('totalUsd must be greater than zero');
  const ttl = params.expiresInMinutes;
  if (ttl !== undefined && (!Number.isInteger(ttl) || ttl < 1 || ttl > MAX_EXPIRES_IN_MINUTES)) {
    throw new InvalidInput(`expiresInMinutes must be an integer from 1 to ${MAX_EXPIRES_IN_MINUTES}`);
  }
  const metadata = parseMetadata(params.metadata);
  // The caller applied the deployment's rule for http on localhost and the shop's origins; this
  // keeps what any stored returnUrl must be (the journal relies on it), normalised for the fingerprint.
  const returnUrl = parseReturnUrl(params.returnUrl, { allowLoopbackHttp: true });
  return { stored, totalCents, metadata, returnUrl, requestHash: receiptRequestHash(params.id, stored, totalCents, ttl, { metadata, returnUrl }) };
}

export async function createReceipt(
  store: ReceiptStore,
  siteUrl: string,
  params: CreateReceiptParams,
  opts: { payToken?: string; createdAt?: number; ttlMinutes?: number; writeId?: string } = {},
): Promise<CreatedReceipt> {
  const prepared = prepareReceipt(params);
  const createdAt = opts.createdAt ?? Date.now();
  const row = await store.commit({
    wallet: params.wallet,
    id: params.id,
    source: 'api',
    status: 'pending',
    lineItems: prepared.stored,
    totalCents: prepared.totalCents,
    requestHash: prepared.requestHash,
    metadata: prepared.metadata,
    returnUrl: prepared.returnUrl,
    payToken: opts.payToken ?? newPayToken(),
    createdAt,
    expiresAt: expiryOf(createdAt, params.expiresInMinutes, opts.ttlMinutes ?? DEFAULT_TTL_MINUTES),
    writeId: opts.writeId ?? null,
  });
  return { id: row.id, paymentUrl: paymentUrl(siteUrl, row.id, row.payToken), status: 'pending' };
}

export async function findReceipt(db: Tx, wallet: string, id: string): Promise<ReceiptRow> {
  const [row] = await db.select().from(receipts).where(and(eq(receipts.wallet, wallet), eq(receipts.id, id)));
  if (row === undefined) throw new NotFound(`Receipt ${id} not found`);
  return row;
}

/** `token`: the chain's token (null without a chain), which the BaseUnits amounts are in. */
export async function getReceiptStatus(db: Db, wallet: string, id: string, token: string | null = null): Promise<ReceiptStatusView> {
  const row = await findReceipt(db, wallet, id);
  return {
    id: row.id,
    status: row.status,
    transactionHash: row.transactionHash,
    currency: 'USDC',
    amount: centsToUsd(row.totalCents),
    amountUsd: centsToUsd(row.totalCents),
    ...paymentState(row),
    token,
    metadata: row.metadata,
    returnUrl: row.returnUrl,
  };
}

/** The decimals of the token receipts are paid in (USDC): a cent is 10,000 base units. */
export const TOKEN_DECIMALS = 6;

/**
 * A receipt's amounts in token base units (USDC, 6 decimals: a cent is 10,000 units): the spec's
 * amountPaid and amountDue, and the same named by their unit (docs/decisions.md "Units"), as
 * migrations/0024_receipt_units.sql renders them for the list and the detail.
 */
export function paymentState(row: Pick<ReceiptRow, 'exception' | 'expiresAt' | 'paidUnits' | 'totalCents'>) {
  const amount = centsToTokenUnits(row.totalCents);
  const paid = BigInt(row.paidUnits);
  const due = (paid >= amount ? 0n : amount - paid).toString();
  return {
    exception: row.exception,
    expiresAt: row.expiresAt,
    amountPaid: paid.toString(),
    amountDue: due,
    totalBaseUnits: amount.toString(),
    amountPaidBaseUnits: paid.toString(),
    amountDueBaseUnits: due,
    decimals: TOKEN_DECIMALS,
  };
}

/** The write-id claims when a caller brings none (they hold no state of an app). */
const DEFAULT_CLAIMS = new WriteClaims();

/**
 * Records a tracking status. It becomes the receipt's status only while the receipt is unpaid;
 * after that it is kept in the history alone, so tracking never moves a receipt backwards. A
 * status the receipt's history already holds from tracking is counted on that entry.
 *
 * Anyone may send one, for any wallet and id, so an unknown receipt must cost what a known one
 * costs, or the answer's time would count a merchant's receipts: both run the same statements in
 * one transaction that commits (the write id is stored either way), and NotFound is thrown only
 * after the commit. `claims`: the app's WriteClaims (ReceiptService passes them).
 */
export async function recordTrackingStatus(
  db: Db,
  p: { wallet: string; receiptId: string; status: TrackingStatus; at?: number },
  write?: Write,
  claims: WriteClaims = DEFAULT_CLAIMS,
): Promise<{ status: ReceiptStatus }> {
  const at = p.at ?? Date.now();
  // Whether the transaction found the receipt, known before its COMMIT is sent.
  let found: boolean | undefined;
  const answer = await db
    .transaction(async (tx) => {
      // A write already stored (a retry, or the journal's copy of a commit whose answer was lost) changes nothing.
      if (write !== undefined && !(await claims.claim(tx, write, { wallet: p.wallet, kind: 'status', ref: p.receiptId }, at)).fresh) {
        const [row] = await tx.select({ status: receipts.status }).from(receipts).where(and(eq(receipts.wallet, p.wallet), eq(receipts.id, p.receiptId)));
        found = row !== undefined;
        return row ?? null;
      }
      const result = await trackingStatusOrNull(tx, { ...p, at });
      found = result !== null;
      return result;
    })
    .catch((err: unknown) => {
      // A COMMIT left unanswered for a receipt that does not exist changed nothing either way.
      if (err instanceof CommitOutcomeUnknown && found === false) throw new TrackedNothing(p.receiptId, true);
      throw err;
    });
  if (answer === null) throw new TrackedNothing(p.receiptId, false);
  return answer;
}

/**
 * The receipt of a tracking status does not exist, so nothing was or will be recorded.
 * `commitUnanswered`: its transaction's COMMIT went unanswered (a hung commit), which the caller
 * answers as it answers a known receipt's status in that case, without keeping anything.
 */
export class TrackedNothing extends NotFound {
  constructor(
    receiptId: string,
    readonly commitUnanswered: boolean,
  ) {
    super(`Receipt ${receiptId} not found`);
  }
}

/** The rules of recordTrackingStatus inside a caller's transaction (journal replay uses it). */
export async function applyTrackingStatus(
  tx: Tx,
  p: { wallet: string; receiptId: string; status: TrackingStatus; at: number },
): Promise<{ status: ReceiptStatus }> {
  const answer = await trackingStatusOrNull(tx, p);
  if (answer === null) throw new NotFound(`Receipt ${p.receiptId} not found`);
  return answer;
}

/**
 * A tracking status, the same statements whether or not the receipt exists (null when it does
 * not): applyReceiptEvent locks the row, sets the status where the state machine moves it, and
 * inserts or counts the history entry from the receipt row itself, so a missing receipt changes
 * nothing without a branch of its own.
 */
async function trackingStatusOrNull(
  tx: Tx,
  p: { wallet: string; receiptId: string; status: TrackingStatus; at: number },
): Promise<{ status: ReceiptStatus } | null> {
  const { row, change } = await applyReceiptEvent(tx, {
    wallet: p.wallet,
    receiptId: p.receiptId,
    source: 'tracking',
    at: p.at,
    columns: 'status',
    decide(found) {
      // An unknown receipt decides as an unpaid one would; its statements match no row.
      const current = (found?.status ?? 'pending');
      const t = transition(current, { type: 'tracking', status: p.status });
      return { transition: t, note: setsStatus(t) ? null : `recorded only; receipt is ${current}` };
    },
  });
  return row === undefined || change === null ? null : { status: change.transition.to };
}
