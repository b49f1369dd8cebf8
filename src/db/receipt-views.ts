/**
 * The statements of receipts as the API reads them, written as JSON text by PostgreSQL: the
 * merchant's list and one receipt with its history and refunds. Parsing, mapping and serialising
 * rows cost the service more than PostgreSQL writing the text, which the routes send as it is.
 * Most of the text is stored with the receipt's row and rendered again by the database whenever
 * the receipt changes (migrations/0017_receipt_json_one_definition.sql), so a read joins a few
 * stored strings rather than running a subquery per history entry and refund. The store of one
 * app prepares them and batches the reads of one event-loop turn (src/db/receipt-store.ts);
 * nothing is cached in the service.
 */
import { and, eq, sql } from 'drizzle-orm';
import type { Db } from './client.ts';
import { receipts, receiptTransfers, shopConfigs } from './schema.ts';

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

/**
 * The token the receipt's amounts in base units are in (DESIGN "Integrator API", Units): the
 * chain's, as configured (checksummed), given with the query; null on an instance without a chain.
 */
const tokenJson = sql<string>`',"token":' || coalesce(to_json(${sql.placeholder('token')}::text)::text, 'null')`;

/**
 * The receipt's fixed summary members, as stored with the row, or rendered by the database's
 * function for a row stored without them (written before the column existed, or directly).
 */
const summaryJson = sql<string>`coalesce(${receipts.summaryJson}, receipt_summary_json(${receipts}))`;

/**
 * The receipt's status, payment state and refunded sum as JSON members, each with its leading
 * comma: as stored with the row (kept by the database's triggers, migrations/0010_receipt_views.sql),
 * or rendered by the same SQL function for a row stored without it.
 */
const stateJson = sql<string>`coalesce(${receipts.stateJson}, receipt_state_json(${receipts}))`;

/** The detail's tax, transaction, status history and refunds members, as stateJson is. */
const detailPartJson = sql<string>`coalesce(${receipts.detailJson}, receipt_detail_json(${receipts}))`;

/**
 * One page of a merchant's receipts, newest first, as the JSON text of their summaries. A list is
 * the one read whose cost grows with its length: parsing, mapping and serialising a hundred rows
 * cost the service ten times the query. Here PostgreSQL joins each row's stored summary and state
 * with the shop's name, and the service sends the result as it is.
 *
 * Placeholders: `wallet`, `token` (the chain's token, null without one), `limit`, and the filters, each null when not asked for: `after` (a
 * receipt id: the page continues after that receipt), `status`, `gte` and `lte` (created_at
 * bounds, Unix ms). Keyset pagination on (created_at, id), the list's order, so a page never
 * repeats or skips a receipt when others are created between pages (no OFFSET). One row more than
 * the page (`take`, limit + 1) is read to answer `hasMore`; `cursorFound` is false when `after` names no receipt of
 * this merchant.
 */
export const receiptPageJson = (db: Db) => {
  const wallet = sql.placeholder('wallet');
  const after = sql`${sql.placeholder('after')}::text`;
  const status = sql`${sql.placeholder('status')}::text`;
  const gte = sql`${sql.placeholder('gte')}::bigint`;
  const lte = sql`${sql.placeholder('lte')}::bigint`;
  const limit = sql`${sql.placeholder('limit')}::int`;
  // Aliased: an unqualified column inside it would name the subquery's own table (see outer).
  const cursor = sql`(select c.created_at, c.id from ${receipts} c where c.wallet = ${wallet} and c.id = ${after})`;
  const r = db
    .select({
      id: receipts.id,
      createdAt: receipts.createdAt,
      state: stateJson.as('state'),
      summary: summaryJson.as('summary'),
      // NULLS LAST as the ORDER BY below and the index: with the default NULLS FIRST the window
      // needs its own sort of every receipt of the merchant, and the planner reads them all.
      n: sql<number>`row_number() over (order by ${receipts.createdAt} desc nulls last, ${receipts.id} desc nulls last)`.as('n'),
    })
    .from(receipts)
    .where(
      and(
        eq(receipts.wallet, wallet),
        sql`(${after} is null or (${receipts.createdAt}, ${receipts.id}) < ${cursor})`,
        sql`(${status} is null or ${receipts.status} = ${status})`,
        sql`(${gte} is null or ${receipts.createdAt} >= ${gte})`,
        sql`(${lte} is null or ${receipts.createdAt} <= ${lte})`,
      ),
    )
    // NULLS LAST matches receipts_wallet_created_idx (both columns are NOT NULL, so the order
    // is the same); with the default NULLS FIRST the planner sorts all the merchant's receipts.
    .orderBy(sql`${receipts.createdAt} desc nulls last`, sql`${receipts.id} desc nulls last`)
    .limit(sql.placeholder('take'))
    .as('r');
  return db
    .select({
      json: sql<string>`'[' || coalesce(string_agg('{' || ${r.summary} || ',"brandName":' || ${brandNameJson} || ${r.state} || ${tokenJson} || '}',
        ',' order by ${r.createdAt} desc, ${r.id} desc) filter (where ${r.n} <= ${limit}), '') || ']'`,
      hasMore: sql<boolean>`count(*) > ${limit}`,
      cursorFound: sql<boolean>`(${after} is null or exists ${sql`(select 1 from ${receipts} c where c.wallet = ${wallet} and c.id = ${after})`})`,
    })
    .from(r)
    .prepare('receipts_page_json');
};

/** The batch group of a merchant's reads: its wallet and the service's fallback brand. */
export const merchantGroupKey = (wallet: string, fallbackBrand: string) => `${wallet} ${fallbackBrand}`;

export function merchantGroup(group: string): { wallet: string; brand: string } {
  // A wallet holds no space (it is checked at the boundary): the rest is the brand.
  const split = group.indexOf(' ');
  return { wallet: group.slice(0, split), brand: group.slice(split + 1) };
}

/**
 * A receipt as GET /api/receipts/{id} answers it, as JSON text: the stored summary, then the
 * shop's name, the stored state, the payment address, the payer, and the stored tax, transaction,
 * status history (oldest first) and refunds (oldest first), in the order of the route's schema.
 * Compact, as the service's own serializer writes it.
 */
const detailJson = (() => {
  // The address that sent the receipt's first counted transfer (its token, more than zero, the
  // earliest log); the token is the chain's, given with the query (null without a chain: no payer).
  // The scanner records no zero-value transfer; rows stored before it did are passed over here.
  const t = receiptTransfers;
  const payer = sql`coalesce((select to_json(${t.fromAddress})::text from ${t}
    where ${t.wallet} = ${outer(receipts.wallet)} and ${t.receiptId} = ${outer(receipts.id)} and ${t.kind} = 'in' and ${t.token} = lower(${sql.placeholder('token')}::text) and ${t.amountUnits} <> '0'
    order by ${t.blockNumber}, ${t.logIndex} limit 1), 'null')`;
  return sql<string>`'{' || ${summaryJson}
    || ',"brandName":' || ${brandNameJson}
    || ${stateJson}
    || ${tokenJson}
    || ',"payTo":' || coalesce(to_json(${receipts.payAddress})::text, 'null')
    || ',"payer":' || ${payer}
    || ${detailPartJson} || '}'`;
})();

/** detailJson for a batch of one merchant's ids, in one round trip: concurrent reads share it (src/db/batch.ts). */
export const receiptDetailsJson = (db: Db) =>
  db
    .select({ id: receipts.id, json: detailJson })
    .from(receipts)
    .where(and(eq(receipts.wallet, sql.placeholder('wallet')), sql`${receipts.id} = any(${sql.placeholder('ids')}::text[])`))
    .prepare('receipt_details_json');

/** The batch group of detail reads: the merchant group, and the chain's token ('-' without one). */
export const detailGroupKey = (wallet: string, token: string | undefined, fallbackBrand: string) =>
  merchantGroupKey(wallet, `${token ?? '-'} ${fallbackBrand}`);

export function detailGroup(group: string): { wallet: string; token: string | null; brand: string } {
  const { wallet, brand: rest } = merchantGroup(group);
  // A token holds no space either: the rest is the brand.
  const split = rest.indexOf(' ');
  const token = rest.slice(0, split);
  return { wallet, token: token === '-' ? null : token, brand: rest.slice(split + 1) };
}
