/**
 * Receipts as the API reads them, built as JSON text by PostgreSQL: the merchant's list and one
 * receipt with its history and refunds. Parsing, mapping and serialising rows cost the service
 * more than PostgreSQL writing the text, which the routes send as it is. Most of the text is
 * stored with the receipt's row and rendered again by the database whenever the receipt changes
 * (migrations/0010_receipt_views.sql), so a read joins a few stored strings rather than running
 * a subquery per history entry and refund. Reads of one event-loop turn share a query
 * (LookupBatcher, src/db/batch.ts); nothing is cached in the service.
 */
import { and, eq, sql, type SQL } from 'drizzle-orm';
import { NotFound } from '../domain/errors.ts';
import { LookupBatcher } from './batch.ts';
import type { Db, Tx } from './client.ts';
import { perDatabase, preparedStatement } from './prepared.ts';
import { receipts, receiptTransfers, shopConfigs } from './schema.ts';

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
 * The receipt's status, payment state and refunded sum as JSON members, each with its leading
 * comma: as stored with the row (kept by the database's triggers, migrations/0010_receipt_views.sql),
 * or rendered by the same SQL function for a row stored without it.
 */
const stateJson = sql<string>`coalesce(${receipts.stateJson}, receipt_state_json(${receipts}))`;

/** The detail's tax, transaction, status history and refunds members, as stateJson is. */
const detailPartJson = sql<string>`coalesce(${receipts.detailJson}, receipt_detail_json(${receipts}))`;

/**
 * The newest receipts of a merchant as the JSON text of their summaries. A list is the one read
 * whose cost grows with its length: parsing, mapping and serialising a hundred rows cost the
 * service ten times the query. Here PostgreSQL joins each row's stored summary and state with
 * the shop's name, and the service sends the result as it is.
 */
const recentReceiptsJson = preparedStatement((db) => {
  const r = db
    .select({
      id: receipts.id,
      createdAt: receipts.createdAt,
      state: stateJson.as('state'),
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
      json: sql<string>`'[' || coalesce(string_agg('{' || ${r.summary} || ',"brandName":' || ${brandNameJson} || ${r.state} || '}',
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
    where ${t.wallet} = ${outer(receipts.wallet)} and ${t.receiptId} = ${outer(receipts.id)} and ${t.kind} = 'in' and ${t.token} = ${sql.placeholder('token')}::text and ${t.amountUnits} <> '0'
    order by ${t.blockNumber}, ${t.logIndex} limit 1), 'null')`;
  return sql<string>`'{' || coalesce(${receipts.summaryJson}, ${renderedSummary})
    || ',"brandName":' || ${brandNameJson}
    || ${stateJson}
    || ',"payTo":' || coalesce(to_json(${receipts.payAddress})::text, 'null')
    || ',"payer":' || ${payer}
    || ${detailPartJson} || '}'`;
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
