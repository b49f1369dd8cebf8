/**
 * Receipts: creation (idempotent per merchant and id), reads, and status changes with history.
 */
import { createHash, randomBytes } from 'node:crypto';
import { and, eq, sql } from 'drizzle-orm';
import type { Db, Tx } from '../db/client.ts';
import { receipts, receiptStatusHistory, shopConfigs, type StoredLineItem } from '../db/schema.ts';
import { Conflict, InvalidInput, NotFound } from './errors.ts';
import { centsToUsd, ppmToRate, usdToCents } from './money.ts';

export const RECEIPT_STATUSES = [
  'generated',
  'pending',
  'completed',
  'failed',
  'refunded',
  'tx_mined',
  'recipient_validated',
  'tx_mismatch',
] as const;
export const TRACKING_STATUSES = ['link_opened', 'buyer_logged_in', 'checkout_initialized'] as const;
export type TrackingStatus = (typeof TRACKING_STATUSES)[number];

export function isTrackingStatus(s: string): s is TrackingStatus {
  return (TRACKING_STATUSES as readonly string[]).includes(s);
}
export function isSensitiveStatus(s: string): boolean {
  return s === 'checkout_success' || s.startsWith('refund_');
}
/** States from which a tracking status may still become the receipt's status. */
export const UNPAID = new Set<string>(['pending', 'generated', ...TRACKING_STATUSES]);

const RECEIPT_ID = /^[A-Za-z0-9][A-Za-z0-9._:-]{0,63}$/;
export const MAX_LINE_ITEMS = 200;

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

export interface ReceiptView {
  receiptId: string;
  totalUsd: number;
  currency: string;
  lineItems: LineItemView[];
  createdAt: number;
  brandName: string;
  status: string;
}

export interface ReceiptDetail extends ReceiptView {
  jurisdictionCode: string | null;
  taxRate: number;
  taxComponents: string[];
  transactionHash?: string;
  transactionTimestamp?: number;
  statusHistory: { status: string; at: number; source: string }[];
}

export interface ReceiptStatusView {
  id: string;
  status: string;
  transactionHash: string | null;
  currency: string;
  amount: number;
}

export interface CreatedReceipt {
  id: string;
  paymentUrl: string;
  status: string;
}

type ReceiptRow = typeof receipts.$inferSelect;

export function assertReceiptId(id: unknown): asserts id is string {
  if (typeof id !== 'string' || !RECEIPT_ID.test(id)) {
    throw new InvalidInput('id must be 1-64 characters of letters, digits and . _ : - (starting with a letter or digit)');
  }
}

export function newPayToken(): string {
  return randomBytes(16).toString('base64url');
}

export function paymentUrl(siteUrl: string, id: string, payToken: string): string {
  return `${siteUrl}/pay/${encodeURIComponent(id)}?t=${payToken}`;
}

/** Parses caller-supplied line items into stored form, with exact cents. */
export function parseLineItems(items: readonly LineItemInput[]): { stored: StoredLineItem[]; totalCents: bigint } {
  if (!Array.isArray(items) || items.length === 0) throw new InvalidInput('lineItems must hold at least one item');
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
}

/** Fingerprint of a create request: the same id with a different body is a conflict. */
export function receiptRequestHash(id: string, stored: StoredLineItem[], totalCents: bigint): string {
  return createHash('sha256').update(JSON.stringify({ id, stored, total: totalCents.toString() })).digest('hex');
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
  return { stored, totalCents, requestHash: receiptRequestHash(params.id, stored, totalCents) };
}

export interface InsertReceiptParams {
  wallet: string;
  id: string;
  source: 'api' | 'order' | 'terminal';
  status: 'pending' | 'generated';
  lineItems: StoredLineItem[];
  totalCents: bigint;
  requestHash: string;
  payToken: string;
  createdAt: number;
  jurisdictionCode?: string | null;
  taxRatePpm?: number | null;
  taxComponents?: string[];
}

/**
 * Inserts a receipt and its first history entry. Returns the stored row: the new one, or the
 * existing one when the same request was already applied. A different request under the same id
 * is a conflict.
 */
export async function insertReceipt(tx: Tx, p: InsertReceiptParams): Promise<ReceiptRow> {
  const [row] = await tx
    .insert(receipts)
    .values({
      wallet: p.wallet,
      id: p.id,
      payToken: p.payToken,
      source: p.source,
      status: p.status,
      currency: 'USD',
      totalCents: p.totalCents,
      lineItems: p.lineItems,
      jurisdictionCode: p.jurisdictionCode ?? null,
      taxRatePpm: p.taxRatePpm ?? null,
      taxComponents: p.taxComponents ?? [],
      requestHash: p.requestHash,
      createdAt: p.createdAt,
      updatedAt: p.createdAt,
    })
    .onConflictDoNothing()
    .returning();
  if (row !== undefined) {
    await tx.insert(receiptStatusHistory).values({
      wallet: p.wallet,
      receiptId: p.id,
      status: p.status,
      source: p.source,
      at: p.createdAt,
    });
    return row;
  }
  const [existing] = await tx.select().from(receipts).where(and(eq(receipts.wallet, p.wallet), eq(receipts.id, p.id)));
  if (existing === undefined) throw new Conflict(`Receipt ${p.id} could not be created`);
  if (existing.requestHash !== p.requestHash) {
    throw new Conflict(`Receipt ${p.id} already exists with a different body`);
  }
  return existing;
}

export async function createReceipt(
  db: Db,
  siteUrl: string,
  params: CreateReceiptParams,
  opts: { payToken?: string; createdAt?: number } = {},
): Promise<CreatedReceipt> {
  const prepared = prepareReceipt(params);
  const row = await db.transaction((tx) =>
    insertReceipt(tx, {
      wallet: params.wallet,
      id: params.id,
      source: 'api',
      status: 'pending',
      lineItems: prepared.stored,
      totalCents: prepared.totalCents,
      requestHash: prepared.requestHash,
      payToken: opts.payToken ?? newPayToken(),
      createdAt: opts.createdAt ?? Date.now(),
    }),
  );
  return { id: row.id, paymentUrl: paymentUrl(siteUrl, row.id, row.payToken), status: 'pending' };
}

export function lineItemViews(items: StoredLineItem[]): LineItemView[] {
  return items.map((i) => {
    const v: LineItemView = { label: i.label, priceUsd: centsToUsd(BigInt(i.priceCents)) };
    if (i.qty !== undefined) v.qty = i.qty;
    return v;
  });
}

export function toReceiptView(r: ReceiptRow, brandName: string): ReceiptView {
  return {
    receiptId: r.id,
    totalUsd: centsToUsd(r.totalCents),
    currency: r.currency,
    lineItems: lineItemViews(r.lineItems),
    createdAt: r.createdAt,
    brandName,
    status: r.status,
  };
}

export async function brandNameOf(db: Tx, wallet: string, fallback: string): Promise<string> {
  const [shop] = await db.select({ name: shopConfigs.name }).from(shopConfigs).where(eq(shopConfigs.wallet, wallet));
  return shop?.name ?? fallback;
}

/**
 * A receipts column written "receipts"."column". Drizzle leaves columns unqualified in a
 * single-table select, and inside a subquery an unqualified "wallet" names the subquery's own
 * table: `"wallet" = "wallet"` would match every merchant's rows.
 */
const outer = (column: typeof receipts.wallet | typeof receipts.id) => sql`${receipts}.${sql.identifier(column.name)}`;

/** The shop's name for a receipt row, in the same round trip as the row itself. */
const shopName = sql<string | null>`(select ${shopConfigs.name} from ${shopConfigs} where ${shopConfigs.wallet} = ${outer(receipts.wallet)})`;

export async function listReceipts(db: Db, wallet: string, limit: number, fallbackBrand: string): Promise<ReceiptView[]> {
  const rows = await db
    .select({ receipt: receipts, shopName })
    .from(receipts)
    .where(eq(receipts.wallet, wallet))
    // NULLS LAST matches receipts_wallet_created_idx (both columns are NOT NULL, so the order
    // is the same); with the default NULLS FIRST the planner sorts all the merchant's receipts.
    .orderBy(sql`${receipts.createdAt} desc nulls last`, sql`${receipts.id} desc nulls last`)
    .limit(limit);
  return rows.map((r) => toReceiptView(r.receipt, r.shopName ?? fallbackBrand));
}

export async function findReceipt(db: Tx, wallet: string, id: string): Promise<ReceiptRow> {
  const [row] = await db.select().from(receipts).where(and(eq(receipts.wallet, wallet), eq(receipts.id, id)));
  if (row === undefined) throw new NotFound(`Receipt ${id} not found`);
  return row;
}

export async function getReceipt(db: Db, wallet: string, id: string, fallbackBrand: string): Promise<ReceiptDetail> {
  // One round trip: the row, the shop's name and the status history (oldest first).
  const h = receiptStatusHistory;
  const [found] = await db
    .select({
      receipt: receipts,
      shopName,
      history: sql<{ status: string; at: number; source: string }[]>`coalesce((
        select json_agg(json_build_object('status', ${h.status}, 'at', ${h.at}, 'source', ${h.source}) order by ${h.seq})
        from ${h} where ${h.wallet} = ${outer(receipts.wallet)} and ${h.receiptId} = ${outer(receipts.id)}), '[]'::json)`,
    })
    .from(receipts)
    .where(and(eq(receipts.wallet, wallet), eq(receipts.id, id)));
  if (found === undefined) throw new NotFound(`Receipt ${id} not found`);
  const row = found.receipt;
  const detail: ReceiptDetail = {
    ...toReceiptView(row, found.shopName ?? fallbackBrand),
    jurisdictionCode: row.jurisdictionCode,
    taxRate: row.taxRatePpm === null ? 0 : ppmToRate(BigInt(row.taxRatePpm)),
    taxComponents: row.taxComponents,
    statusHistory: found.history.map((e) => ({ status: e.status, at: Number(e.at), source: e.source })),
  };
  if (row.transactionHash !== null) detail.transactionHash = row.transactionHash;
  if (row.transactionTimestamp !== null) detail.transactionTimestamp = row.transactionTimestamp;
  return detail;
}

export async function getReceiptStatus(db: Db, wallet: string, id: string): Promise<ReceiptStatusView> {
  const row = await findReceipt(db, wallet, id);
  return {
    id: row.id,
    status: row.status,
    transactionHash: row.transactionHash,
    currency: 'USDC',
    amount: centsToUsd(row.totalCents),
  };
}

/**
 * Records a tracking status. It becomes the receipt's status only while the receipt is unpaid;
 * after that it is kept in the history alone, so tracking never moves a receipt backwards.
 */
export async function recordTrackingStatus(
  db: Db,
  p: { wallet: string; receiptId: string; status: TrackingStatus; at?: number },
): Promise<{ status: string }> {
  const at = p.at ?? Date.now();
  return db.transaction((tx) => applyTrackingStatus(tx, { ...p, at }));
}

/** The rules of recordTrackingStatus inside a caller's transaction (journal replay uses it). */
export async function applyTrackingStatus(
  tx: Tx,
  p: { wallet: string; receiptId: string; status: TrackingStatus; at: number },
): Promise<{ status: string }> {
  const [row] = await tx
    .select({ status: receipts.status })
    .from(receipts)
    .where(and(eq(receipts.wallet, p.wallet), eq(receipts.id, p.receiptId)))
    .for('update');
  if (row === undefined) throw new NotFound(`Receipt ${p.receiptId} not found`);
  const moves = UNPAID.has(row.status);
  if (moves) {
    await tx
      .update(receipts)
      .set({ status: p.status, updatedAt: p.at })
      .where(and(eq(receipts.wallet, p.wallet), eq(receipts.id, p.receiptId)));
  }
  await tx.insert(receiptStatusHistory).values({
    wallet: p.wallet,
    receiptId: p.receiptId,
    status: p.status,
    source: 'tracking',
    note: moves ? null : `recorded only; receipt is ${row.status}`,
    at: p.at,
  });
  return { status: moves ? p.status : row.status };
}
