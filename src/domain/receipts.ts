/**
 * Receipts: creation (idempotent per merchant and id), reads, and status changes with history.
 */
import { createHmac, hash, randomBytes } from 'node:crypto';
import { and, eq, getTableColumns, or, sql, type SQL, type SQLChunk } from 'drizzle-orm';
import { GroupCommit, LookupBatcher, type Settled } from '../db/batch.ts';
import { isConnectionError, type Db, type Tx } from '../db/client.ts';
import { perDatabase, preparedStatement } from '../db/prepared.ts';
import { receipts, receiptStatusHistory, receiptTransfers, refunds, shopConfigs, type StoredLineItem } from '../db/schema.ts';
import { Conflict, InvalidInput, NotFound } from './errors.ts';
import { nextStatus, type ReceiptException, type ReceiptStatus, type TrackingStatus } from '../payments/states.ts';
import { centsToTokenUnits, centsToUsd, usdToCents } from './money.ts';
import { claimWrite, type Write } from './writes.ts';

export { isSensitiveStatus, isTrackingStatus, TRACKING_STATUSES, type TrackingStatus } from '../payments/states.ts';

/** A receipt is payable from creation for this long unless its creation says otherwise. */
export const DEFAULT_TTL_MINUTES = 60;
import { MAX_EXPIRES_IN_MINUTES, MAX_LINE_ITEMS, RECEIPT_ID } from '../contract/receipts.ts';
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

export interface ReceiptView {
  receiptId: string;
  totalUsd: number;
  currency: string;
  lineItems: LineItemView[];
  createdAt: number;
  brandName: string;
  status: string;
  exception: ReceiptException | null;
  expiresAt: number;
  amountPaid: string;
  amountDue: string;
}

/** A refund as the receipt detail shows it. */
export interface ReceiptRefundView {
  id: string;
  usd: number;
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
  statusHistory: { status: string; at: number; source: string; count?: number }[];
}

/** The refund fields of a detail, beside ReceiptDetail's; see detailJson. */
export interface ReceiptRefunds {
  refundedUsd: number;
  payer: string | null;
  refunds: ReceiptRefundView[];
}

/** The refund fields of a receipt still in the journal: it has neither refunds nor transfers yet. */
export const NO_REFUNDS: Readonly<ReceiptRefunds> = Object.freeze({ refundedUsd: 0, payer: null, refunds: [] });

export interface ReceiptStatusView {
  id: string;
  status: string;
  transactionHash: string | null;
  currency: string;
  amount: number;
  exception: ReceiptException | null;
  expiresAt: number;
  amountPaid: string;
  amountDue: string;
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

const PAY_TOKEN_BYTES = 16;
/** Random bytes for pay tokens, drawn from the system's generator a block at a time. */
let tokenBytes = Buffer.alloc(0);
let tokenOffset = 0;

/**
 * A receipt's pay token: 128 random bits. One call to the generator serves 256 tokens (a call per
 * token cost a receipt creation more than its validation); each token takes bytes no other token
 * took, and a spent block is dropped, never refilled in place.
 */
export function newPayToken(): string {
  if (tokenOffset + PAY_TOKEN_BYTES > tokenBytes.length) {
    tokenBytes = randomBytes(PAY_TOKEN_BYTES * 256);
    tokenOffset = 0;
  }
  const token = tokenBytes.toString('base64url', tokenOffset, tokenOffset + PAY_TOKEN_BYTES);
  tokenOffset += PAY_TOKEN_BYTES;
  return token;
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
  /** Minutes the receipt may be paid in; RECEIPT_TTL_MINUTES when absent. */
  expiresInMinutes?: number | undefined;
}

/**
 * Fingerprint of a create request: the same id with a different body is a conflict. A request
 * without expiresInMinutes hashes as it did before the field existed.
 */
export function receiptRequestHash(id: string, stored: StoredLineItem[], totalCents: bigint, expiresInMinutes?: number): string {
  const body: Record<string, unknown> = { id, stored, total: totalCents.toString() };
  if (expiresInMinutes !== undefined) body.expiresInMinutes = expiresInMinutes;
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
  return { stored, totalCents, requestHash: receiptRequestHash(params.id, stored, totalCents, ttl) };
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
  expiresAt: number;
  jurisdictionCode?: string | null;
  taxRatePpm?: number | null;
  taxComponents?: string[];
  /** The id of the creating write (src/domain/writes.ts). */
  writeId?: string | null;
}

const receiptKey = (wallet: string, id: string) => `${wallet} ${id}`;

/**
 * Receipts and their first history entries in one statement, so it is atomic without a
 * transaction of its own: one round trip for a whole batch. The rows travel as one JSON array
 * (receiptRecords), read by json_to_recordset with a record type made from the table's columns:
 * the text is the same for any number of rows, so each connection parses it once, and the service
 * serialises a batch in one native JSON.stringify rather than escaping a parameter per column and
 * row. Prepared for each handle, because a statement runs on its handle: the application's pool,
 * or the transaction of an order or a journal replay.
 */
const insertReceiptRows = perDatabase((db: Tx) => {
  const columns = Object.entries(getTableColumns(receipts));
  const list = (parts: SQLChunk[]) => sql.join(parts, sql`, `);
  const inserted = db.$with('inserted', getTableColumns(receipts)).as(
    sql`insert into ${receipts} (${list(columns.map(([, column]) => sql.identifier(column.name)))})
      select * from json_to_recordset(${sql.placeholder('rows')}::json)
        as r(${list(columns.map(([key, column]) => sql`${sql.identifier(key)} ${sql.raw(column.getSQLType())}`))})
      on conflict do nothing returning *`,
  );
  const h = receiptStatusHistory;
  const history = db.$with('history', {}).as(
    sql`insert into ${h} (${list([h.seq, h.wallet, h.receiptId, h.status, h.source, h.at].map((c) => sql.identifier(c.name)))}) select nextval(pg_get_serial_sequence('receipt_status_history', 'seq')), wallet, id, status, source, created_at from inserted`,
  );
  return db.with(inserted, history).select().from(inserted).prepare('receipts_insert');
});

/** The rows of insertReceiptRows as JSON: one object per row, keyed by the schema's field names. */
function receiptRecords(rows: InsertReceiptParams[]): string {
  return JSON.stringify(
    rows.map(
      (p): Record<keyof ReceiptRow, unknown> => ({
        wallet: p.wallet,
        id: p.id,
        payToken: p.payToken,
        source: p.source,
        status: p.status,
        currency: 'USD',
        totalCents: p.totalCents.toString(),
        lineItems: p.lineItems,
        jurisdictionCode: p.jurisdictionCode ?? null,
        taxRatePpm: p.taxRatePpm ?? null,
        taxComponents: p.taxComponents ?? [],
        transactionHash: null,
        transactionTimestamp: null,
        requestHash: p.requestHash,
        summaryJson: summaryJson({ id: p.id, totalCents: p.totalCents, currency: 'USD', lineItems: p.lineItems, createdAt: p.createdAt }),
        payAddress: null,
        expiresAt: p.expiresAt,
        exception: null,
        paidUnits: '0',
        expiredAt: null,
        writeId: p.writeId ?? null,
        createdAt: p.createdAt,
        updatedAt: p.createdAt,
      }),
    ),
  );
}

/**
 * Inserts receipts with their first history entries, on the caller's handle (its transaction, or
 * the pool: the insert is one statement), and settles each on its own: the stored row (the new
 * one, or the existing one when the same request was already applied), or a conflict when a
 * different request holds the id. The same id twice in one call behaves as two calls in a row.
 * Rows go in key order, so two concurrent batches that share ids wait for each other rather than
 * deadlock.
 */
export async function insertReceipts(tx: Tx, items: InsertReceiptParams[]): Promise<Settled<ReceiptRow>[]> {
  const first = new Map<string, InsertReceiptParams>();
  for (const p of items) if (!first.has(receiptKey(p.wallet, p.id))) first.set(receiptKey(p.wallet, p.id), p);
  const fresh = [...first.entries()].sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0)).map(([, p]) => p);
  const inserted = await insertReceiptRows(tx).execute({ rows: receiptRecords(fresh) });
  const stored = new Map(inserted.map((row) => [receiptKey(row.wallet, row.id), row]));
  const taken = fresh.filter((p) => !stored.has(receiptKey(p.wallet, p.id)));
  if (taken.length > 0) {
    const existing = await tx
      .select()
      .from(receipts)
      .where(or(...taken.map((p) => and(eq(receipts.wallet, p.wallet), eq(receipts.id, p.id)))));
    for (const row of existing) stored.set(receiptKey(row.wallet, row.id), row);
  }
  return items.map((p): Settled<ReceiptRow> => {
    const row = stored.get(receiptKey(p.wallet, p.id));
    if (row === undefined) return { ok: false, error: new Conflict(`Receipt ${p.id} could not be created`) };
    if (row.requestHash !== p.requestHash) {
      return { ok: false, error: new Conflict(`Receipt ${p.id} already exists with a different body`) };
    }
    return { ok: true, value: row };
  });
}

/** insertReceipts for one receipt: its row, or its conflict thrown. */
export async function insertReceipt(tx: Tx, p: InsertReceiptParams): Promise<ReceiptRow> {
  const [outcome] = await insertReceipts(tx, [p]);
  if (!outcome!.ok) throw outcome!.error;
  return outcome!.value;
}

/**
 * Creations submitted in the same event-loop turn share one statement (src/db/batch.ts), committed
 * on its own: one round trip for the batch (two when an id was already taken). When the batch's
 * statement is refused for a reason other than a lost connection, each receipt is retried alone,
 * so that only the receipt at fault fails; a lost connection fails them all, and each request
 * falls back to the journal as a single one would.
 */
const receiptCommits = perDatabase(
  (db) =>
    new GroupCommit<InsertReceiptParams, ReceiptRow>(async (items) => {
      try {
        return await insertReceipts(db, items);
      } catch (err) {
        if (items.length === 1 || isConnectionError(err)) throw err;
        return Promise.all(
          items.map((p) =>
            insertReceipt(db, p).then(
              (value): Settled<ReceiptRow> => ({ ok: true, value }),
              (error: unknown): Settled<ReceiptRow> => ({ ok: false, error }),
            ),
          ),
        );
      }
    }),
);

export async function createReceipt(
  db: Db,
  siteUrl: string,
  params: CreateReceiptParams,
  opts: { payToken?: string; createdAt?: number; ttlMinutes?: number; writeId?: string } = {},
): Promise<CreatedReceipt> {
  const prepared = prepareReceipt(params);
  const createdAt = opts.createdAt ?? Date.now();
  const row = await receiptCommits(db).submit({
    wallet: params.wallet,
    id: params.id,
    source: 'api',
    status: 'pending',
    lineItems: prepared.stored,
    totalCents: prepared.totalCents,
    requestHash: prepared.requestHash,
    payToken: opts.payToken ?? newPayToken(),
    createdAt,
    expiresAt: expiryOf(createdAt, params.expiresInMinutes, opts.ttlMinutes ?? DEFAULT_TTL_MINUTES),
    writeId: opts.writeId ?? null,
  });
  return { id: row.id, paymentUrl: paymentUrl(siteUrl, row.id, row.payToken), status: 'pending' };
}

export function lineItemViews(items: StoredLineItem[]): LineItemView[] {
  return items.map((i) => {
    const v: LineItemView = { label: i.label, priceUsd: centsToUsd(BigInt(i.priceCents)) };
    if (i.qty !== undefined) v.qty = i.qty;
    return v;
  });
}

/** The columns of a receipt's summary fixed at creation (the status and brand name are joined when read). */
type SummaryRow = Pick<ReceiptRow, 'id' | 'totalCents' | 'currency' | 'lineItems' | 'createdAt'>;

/** The part of a summary fixed at creation; its key order is the summary's. */
function fixedSummary(r: SummaryRow) {
  return {
    receiptId: r.id,
    totalUsd: centsToUsd(r.totalCents),
    currency: r.currency,
    lineItems: lineItemViews(r.lineItems),
    createdAt: r.createdAt,
  };
}

/** The stored `summary_json` of a new receipt: its fixed summary members, without the braces. */
export function summaryJson(r: SummaryRow): string {
  return JSON.stringify(fixedSummary(r)).slice(1, -1);
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

/**
 * The JSON of a merchant's shop name, or of the fallback brand: for a query about one merchant's
 * receipts. Not correlated with the rows, so PostgreSQL reads the name once per query.
 */
const brandNameJson = sql<string>`to_json(coalesce((select ${shopConfigs.name} from ${shopConfigs} where ${shopConfigs.wallet} = ${sql.placeholder('wallet')}), ${sql.placeholder('brand')}::text))::text`;

/** Cents (an integer expression) as the JSON number the API shows: 1275 → 12.75, 1200 → 12. */
const usdText = (cents: SQL) => sql`trim_scale((${cents})::numeric / 100)::text`;

/**
 * summaryJson in SQL, for rows stored without it (written before the column existed, or by an
 * older instance during an upgrade). Slower than the stored text, and equal to it: the tests
 * compare both with the detail route.
 */
const renderedSummary = (() => {
  const item = sql.raw('e.item');
  const lineItem = sql`'{"label":' || to_json(${item}->>'label')::text || ',"priceUsd":' || ${usdText(sql`(${item}->>'priceCents')::bigint`)}
    || case when ${item} ? 'qty' then ',"qty":' || (${item}->'qty')::text else '' end || '}'`;
  const lineItems = sql`coalesce((select '[' || string_agg(${lineItem}, ',' order by e.n) || ']'
    from jsonb_array_elements(${receipts.lineItems}) with ordinality as e(item, n)), '[]')`;
  return sql<string>`'"receiptId":' || to_json(${receipts.id})::text || ',"totalUsd":' || ${usdText(sql`${receipts.totalCents}`)}
    || ',"currency":' || to_json(${receipts.currency})::text || ',"lineItems":' || ${lineItems} || ',"createdAt":' || ${receipts.createdAt}::text`;
})();

/**
 * The members of paymentState as JSON text, each with its leading comma, in the schema's order.
 * 10,000 token base units make a cent (USDC has 6 decimals).
 */
const paymentStateJson = sql<string>`',"exception":' || coalesce(to_json(${receipts.exception})::text, 'null')
  || ',"expiresAt":' || ${receipts.expiresAt}::text
  || ',"amountPaid":"' || ${receipts.paidUnits} || '"'
  || ',"amountDue":"' || greatest(${receipts.totalCents}::numeric * 10000 - ${receipts.paidUnits}::numeric, 0)::text || '"'`;

/** `,"refundedUsd":` and the sum of the receipt's refunds: on the list and the detail, after the payment state. */
const refundedJson = sql<string>`',"refundedUsd":' || ${usdText(sql`coalesce((select sum(${refunds.amountCents}) from ${refunds}
  where ${refunds.wallet} = ${outer(receipts.wallet)} and ${refunds.receiptId} = ${outer(receipts.id)}), 0)`)}`;

/**
 * The newest receipts of a merchant as the JSON text of their summaries. A list is the one read
 * whose cost grows with its length: parsing, mapping and serialising a hundred rows cost the
 * service ten times the query. Here PostgreSQL joins each row's stored summary text with its
 * status and the shop's name, and the service sends the result as it is.
 */
const recentReceiptsJson = preparedStatement((db) => {
  const r = db
    .select({
      id: receipts.id,
      createdAt: receipts.createdAt,
      status: receipts.status,
      payment: sql<string>`${paymentStateJson} || ${refundedJson}`.as('payment'),
      summary: sql<string>`coalesce(${receipts.summaryJson}, ${renderedSummary})`.as('summary'),
    })
    .from(receipts)
    .where(eq(receipts.wallet, sql.placeholder('wallet')))
    // NULLS LAST matches receipts_wallet_created_idx (both columns are NOT NULL, so the order
    // is the same); with the default NULLS FIRST the planner sorts all the merchant's receipts.
    .orderBy(sql`${receipts.createdAt} desc nulls last`, sql`${receipts.id} desc nulls last`)
    .limit(sql.placeholder('limit'))
    .as('r');
  return db
    .select({
      json: sql<string>`'[' || coalesce(string_agg('{' || ${r.summary} || ',"brandName":' || ${brandNameJson} || ',"status":' || to_json(${r.status})::text || ${r.payment} || '}',
        ',' order by ${r.createdAt} desc, ${r.id} desc), '') || ']'`,
    })
    .from(r)
    .prepare('receipts_recent_json');
});

/**
 * Lists asked for in the same event-loop turn by one merchant with the same limit share one query
 * (src/db/batch.ts): a merchant's terminals and dashboards polling together cost one read. As for
 * every batched read, the query starts after each of its requests arrived, never before, so a
 * list always shows every receipt whose creation was acknowledged before it was asked for.
 */
const receiptLists = perDatabase(
  (db) =>
    new LookupBatcher<string>(async (group, limits) => {
      const { wallet, brand } = merchantGroup(group);
      const lists = await Promise.all(limits.map((limit) => recentReceiptsJson(db).execute({ wallet, limit: Number(limit), brand })));
      return new Map(limits.map((limit, i) => [limit, lists[i]![0]?.json ?? '[]']));
    }),
);

/** The batch group of a merchant's reads: its wallet and the service's fallback brand. */
const merchantGroupKey = (wallet: string, fallbackBrand: string) => `${wallet} ${fallbackBrand}`;

function merchantGroup(group: string): { wallet: string; brand: string } {
  // A wallet holds no space (it is checked at the boundary): the rest is the brand.
  const split = group.indexOf(' ');
  return { wallet: group.slice(0, split), brand: group.slice(split + 1) };
}

/** The `receipts` array of GET /api/receipts, as JSON text (see recentReceiptsJson). */
export async function listReceiptsJson(db: Db, wallet: string, limit: number, fallbackBrand: string): Promise<string> {
  return (await receiptLists(db).get(merchantGroupKey(wallet, fallbackBrand), String(limit))) ?? '[]';
}

export async function findReceipt(db: Tx, wallet: string, id: string): Promise<ReceiptRow> {
  const [row] = await db.select().from(receipts).where(and(eq(receipts.wallet, wallet), eq(receipts.id, id)));
  if (row === undefined) throw new NotFound(`Receipt ${id} not found`);
  return row;
}

/** A JSON array of `elements` (JSON text each), in `order`; '[]' when there are none. */
const jsonArray = (elements: SQL, order: SQL, from: SQL) =>
  sql`coalesce((select '[' || string_agg(${elements}, ',' order by ${order}) || ']' from ${from}), '[]')`;

/**
 * A receipt as GET /api/receipts/{id} answers it, as JSON text: the stored summary, then the
 * shop's name, the status, the refunded sum, the payer, tax, transaction, status history (oldest
 * first) and refunds (oldest first), in the order of the route's schema. Compact, as the service's
 * own serializer writes it.
 */
const detailJson = (() => {
  const h = receiptStatusHistory;
  // "count" only on an entry recorded more than once (repeated tracking statuses, src/domain/receipts.ts applyTrackingStatus).
  const entry = sql`'{"status":' || to_json(${h.status})::text || ',"at":' || ${h.at}::text || ',"source":' || to_json(${h.source})::text
    || case when ${h.count} > 1 then ',"count":' || ${h.count}::text else '' end || '}'`;
  const history = jsonArray(
    entry,
    sql`${h.seq}`,
    sql`${h} where ${h.wallet} = ${outer(receipts.wallet)} and ${h.receiptId} = ${outer(receipts.id)}`,
  );
  const components = jsonArray(sql`to_json(c.v)::text`, sql`c.n`, sql`jsonb_array_elements_text(${receipts.taxComponents}) with ordinality as c(v, n)`);
  const f = refunds;
  const refund = sql`'{"id":' || to_json(${f.id})::text || ',"usd":' || ${usdText(sql`${f.amountCents}`)}
    || ',"buyer":' || to_json(${f.buyer})::text || ',"txHash":' || coalesce(to_json(${f.txHash})::text, 'null')
    || ',"verified":' || case when ${f.verifiedAt} is null then 'false' else 'true' end || ',"createdAt":' || ${f.createdAt}::text || '}'`;
  const refundList = jsonArray(
    refund,
    sql`${f.createdAt}, ${f.id}`,
    sql`${f} where ${f.wallet} = ${outer(receipts.wallet)} and ${f.receiptId} = ${outer(receipts.id)}`,
  );
  // The address that sent the receipt's first counted transfer (its token, the earliest log); the
  // token is the chain's, given with the query (null without a chain: no payer).
  const t = receiptTransfers;
  const payer = sql`coalesce((select to_json(${t.fromAddress})::text from ${t}
    where ${t.wallet} = ${outer(receipts.wallet)} and ${t.receiptId} = ${outer(receipts.id)} and ${t.kind} = 'in' and ${t.token} = ${sql.placeholder('token')}::text
    order by ${t.blockNumber}, ${t.logIndex} limit 1), 'null')`;
  return sql<string>`'{' || coalesce(${receipts.summaryJson}, ${renderedSummary})
    || ',"brandName":' || ${brandNameJson}
    || ',"status":' || to_json(${receipts.status})::text
    || ${paymentStateJson}
    || ${refundedJson}
    || ',"payTo":' || coalesce(to_json(${receipts.payAddress})::text, 'null')
    || ',"payer":' || ${payer}
    || ',"jurisdictionCode":' || coalesce(to_json(${receipts.jurisdictionCode})::text, 'null')
    || ',"taxRate":' || coalesce(trim_scale(${receipts.taxRatePpm}::numeric / 1000000)::text, '0')
    || ',"taxComponents":' || ${components}
    || case when ${receipts.transactionHash} is null then '' else ',"transactionHash":' || to_json(${receipts.transactionHash})::text end
    || case when ${receipts.transactionTimestamp} is null then '' else ',"transactionTimestamp":' || ${receipts.transactionTimestamp}::text end
    || ',"statusHistory":' || ${history}
    || ',"refunds":' || ${refundList} || '}'`;
})();

/** detailJson for a batch of one merchant's ids, in one round trip: concurrent reads share it (src/db/batch.ts). */
const receiptDetailsJson = preparedStatement((db) =>
  db
    .select({ id: receipts.id, json: detailJson })
    .from(receipts)
    .where(and(eq(receipts.wallet, sql.placeholder('wallet')), sql`${receipts.id} = any(${sql.placeholder('ids')}::text[])`))
    .prepare('receipt_details_json'),
);

/** Receipt reads of one event-loop turn share a query per merchant and token (src/db/batch.ts). */
const receiptReads = perDatabase(
  (db) =>
    new LookupBatcher<string>(async (group, ids) => {
      const { wallet, token, brand } = detailGroup(group);
      const rows = await receiptDetailsJson(db).execute({ wallet, ids, brand, token });
      return new Map(rows.map((r) => [r.id, r.json]));
    }),
);

/** The batch group of detail reads: the merchant group, and the chain's token ('-' without one). */
const detailGroupKey = (wallet: string, token: string | undefined, fallbackBrand: string) =>
  merchantGroupKey(wallet, `${token?.toLowerCase() ?? '-'} ${fallbackBrand}`);

function detailGroup(group: string): { wallet: string; token: string | null; brand: string } {
  const { wallet, brand: rest } = merchantGroup(group);
  // A token holds no space either: the rest is the brand.
  const split = rest.indexOf(' ');
  const token = rest.slice(0, split);
  return { wallet, token: token === '-' ? null : token, brand: rest.slice(split + 1) };
}

/**
 * One receipt with its status history and refunds as JSON text (see detailJson): parsing, mapping
 * and serialising its row in the service cost more than PostgreSQL writing the text. `token`: the
 * chain's token, whose first transfer into the receipt names its payer; without it, payer is null.
 */
export async function getReceiptJson(db: Db, wallet: string, id: string, fallbackBrand: string, token?: string): Promise<string> {
  const json = await receiptReads(db).get(detailGroupKey(wallet, token, fallbackBrand), id);
  if (json === undefined) throw new NotFound(`Receipt ${id} not found`);
  return json;
}

export async function getReceiptStatus(db: Db, wallet: string, id: string): Promise<ReceiptStatusView> {
  const row = await findReceipt(db, wallet, id);
  return {
    id: row.id,
    status: row.status,
    transactionHash: row.transactionHash,
    currency: 'USDC',
    amount: centsToUsd(row.totalCents),
    ...paymentState(row),
  };
}

/** A receipt's amounts in token base units (USDC, 6 decimals: a cent is 10,000 units). */
export function paymentState(row: Pick<ReceiptRow, 'exception' | 'expiresAt' | 'paidUnits' | 'totalCents'>) {
  const amount = centsToTokenUnits(row.totalCents);
  const paid = BigInt(row.paidUnits);
  return {
    exception: row.exception,
    expiresAt: row.expiresAt,
    amountPaid: paid.toString(),
    amountDue: (paid >= amount ? 0n : amount - paid).toString(),
  };
}

/**
 * Records a tracking status. It becomes the receipt's status only while the receipt is unpaid;
 * after that it is kept in the history alone, so tracking never moves a receipt backwards. A
 * status the receipt's history already holds from tracking is counted on that entry.
 */
export async function recordTrackingStatus(
  db: Db,
  p: { wallet: string; receiptId: string; status: TrackingStatus; at?: number },
  write?: Write,
): Promise<{ status: string }> {
  const at = p.at ?? Date.now();
  return db.transaction(async (tx) => {
    // A write already stored (a retry, or the journal's copy of a commit whose answer was lost) changes nothing.
    if (write !== undefined && !(await claimWrite(tx, write, { wallet: p.wallet, kind: 'status', ref: p.receiptId }, at)).fresh) {
      return { status: (await findReceipt(tx, p.wallet, p.receiptId)).status };
    }
    return applyTrackingStatus(tx, { ...p, at });
  });
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
  const decision = nextStatus(row.status as ReceiptStatus, { type: 'tracking', status: p.status });
  // null: the receipt already holds this status; { record: true }: money has arrived, history only.
  const moves = decision === null || 'move' in decision;
  if (moves) {
    await tx
      .update(receipts)
      .set({ status: p.status, updatedAt: p.at })
      .where(and(eq(receipts.wallet, p.wallet), eq(receipts.id, p.receiptId)));
  }
  // One history row per tracking status and receipt: a repeat adds to its count, so a stranger
  // sending statuses (no credential needed) cannot grow a receipt's history without bound.
  const h = receiptStatusHistory;
  await tx
    .insert(h)
    .values({
      wallet: p.wallet,
      receiptId: p.receiptId,
      status: p.status,
      source: 'tracking',
      note: moves ? null : `recorded only; receipt is ${row.status}`,
      at: p.at,
    })
    .onConflictDoUpdate({
      target: [h.wallet, h.receiptId, h.status],
      targetWhere: sql`${h.source} = 'tracking'`,
      set: { count: sql`${h.count} + 1` },
    });
  return { status: moves ? p.status : row.status };
}
