/**
 * The receipts store of one app (built in src/deps.ts): every statement, batched write and batched
 * read of the receipts table and its stored views. The rules (what a receipt may hold, when it is
 * a retry or a conflict) are src/domain/receipts.ts's.
 *
 * Writes: one statement inserts a batch of receipts with their first history entries and their
 * stored views, and creations of one event-loop turn share it (GroupCommit, src/db/batch.ts).
 * Reads: the API's list and detail as JSON text written by PostgreSQL (src/db/receipt-views.ts),
 * reads of one turn sharing a query (LookupBatcher). A receipt's answer JSON is defined once, by
 * the database's functions (migrations/0017_receipt_json_one_definition.sql): the creating
 * statement renders a new receipt's views with them, the triggers render them again on every
 * change, and a read renders a row stored without them.
 */
import { and, eq, getTableColumns, or, sql, type SQLChunk } from 'drizzle-orm';
import { Conflict, NotFound } from '../lib/errors.ts';
import { GroupCommit, LookupBatcher, type Settled } from './batch.ts';
import { type Db, type Tx } from './client.ts';
import { isConnectionError } from '../lib/db-errors.ts';
import { perDatabase } from './prepared.ts';
import { detailGroup, detailGroupKey, receiptDetailsJson, receiptPageJson } from './receipt-views.ts';
import { receipts, receiptStatusHistory, writeIds, type StoredLineItem } from './schema.ts';
import { claimRecords, claimStatement, type Write } from './write-claims.ts';

export type ReceiptRow = typeof receipts.$inferSelect;

export interface InsertReceiptParams {
  wallet: string;
  id: string;
  source: 'api' | 'order' | 'terminal';
  status: 'pending' | 'generated';
  lineItems: StoredLineItem[];
  totalCents: bigint;
  requestHash: string;
  /** The shop's own fields, checked (src/domain/metadata.ts); {} when none were sent. */
  metadata?: Record<string, string>;
  /** Checked (src/domain/return-url.ts); null or absent when none was sent. */
  returnUrl?: string | null;
  payToken: string;
  createdAt: number;
  expiresAt: number;
  jurisdictionCode?: string | null;
  taxRatePpm?: number | null;
  taxComponents?: string[];
  /** The id of the creating write (src/db/write-claims.ts). */
  writeId?: string | null;
}

/** Which page of a merchant's receipts, newest first: every filter optional. */
export interface ReceiptPage {
  limit: number;
  /** A receipt id: the page continues after it in the list's order. */
  startingAfter?: string;
  status?: string;
  /** Bounds on createdAt, Unix ms, inclusive. */
  createdGte?: number;
  createdLte?: number;
}

export interface ReceiptPageJson {
  /** The page's receipts as a JSON array. */
  json: string;
  hasMore: boolean;
}

const receiptKey = (wallet: string, id: string) => `${wallet} ${id}`;

/** The stored views, rendered by the creating statement rather than sent. */
const VIEWS = new Set(['summaryJson', 'stateJson', 'detailJson']);

/**
 * The statement that inserts receipts with their first history entries and their stored views:
 * one statement, so it is atomic without a transaction of its own, and one round trip for a batch.
 * The rows travel as one JSON array (receiptRecords), read by json_populate_recordset as rows of
 * the receipts table: the text is the same for any number of rows, so each connection parses it
 * once. Each row's summary, state and detail views are rendered by the database's functions from
 * the row itself (nothing paid, nothing refunded, the creation entry as its whole history), so
 * creation costs no second write and the JSON has one definition.
 *
 * `claimed`: the statement also claims each receipt's write id (src/db/write-claims.ts) and
 * inserts only the receipts whose claim it made: a claim, its receipt and its history entry are
 * then one atomic statement, with no transaction around it (src/db/order-store.ts). A receipt id
 * already taken then fails the whole statement rather than leave a claim without its receipt.
 */
function receiptInsert(db: Tx, name: string, opts: { claimed: boolean }) {
  const columns = Object.entries(getTableColumns(receipts));
  const list = (parts: SQLChunk[]) => sql.join(parts, sql`, `);
  const claimed = db.$with('claimed', { writeId: writeIds.writeId }).as(claimStatement(sql.placeholder('claims')));
  const values = columns.map(([key, column]) => {
    if (key === 'summaryJson') return sql`receipt_summary_json(r)`;
    if (key === 'stateJson') return sql`receipt_state_json(r, 0)`;
    if (key === 'detailJson') return sql`receipt_detail_json(r, '[' || receipt_history_entry_json(r.status, r.created_at, r.source, 1) || ']', '[]')`;
    return sql`r.${sql.identifier(column.name)}`;
  });
  const inserted = db.$with('inserted', getTableColumns(receipts)).as(
    sql`insert into ${receipts} (${list(columns.map(([, column]) => sql.identifier(column.name)))})
      select ${list(values)} from json_populate_recordset(null::receipts, ${sql.placeholder('rows')}::json) as r
      ${opts.claimed ? sql`where r.write_id in (select write_id from claimed)` : sql`on conflict do nothing`} returning *`,
  );
  const h = receiptStatusHistory;
  const history = db.$with('history', {}).as(
    sql`insert into ${h} (${list([h.seq, h.wallet, h.receiptId, h.status, h.source, h.at].map((c) => sql.identifier(c.name)))}) select nextval(pg_get_serial_sequence('receipt_status_history', 'seq')), wallet, id, status, source, created_at from inserted`,
  );
  return (opts.claimed ? db.with(claimed, inserted, history) : db.with(inserted, history)).select().from(inserted).prepare(name);
}

/** The receipts table's column names, in the order receiptRecords writes them. */
const COLUMN_NAMES = Object.entries(getTableColumns(receipts)).filter(([key]) => !VIEWS.has(key));

/** The rows of receiptInsert as JSON: one object per row, keyed by the table's column names. */
function receiptRecords(rows: InsertReceiptParams[]): string {
  return JSON.stringify(
    rows.map((p) => {
      const row: Omit<Record<keyof ReceiptRow, unknown>, 'summaryJson' | 'stateJson' | 'detailJson'> = {
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
        metadata: p.metadata ?? {},
        returnUrl: p.returnUrl ?? null,
        payAddress: null,
        payFactory: null,
        paySplit: null,
        otherMoney: null,
        balancesCheckedAt: null,
        balancesCheckDue: null,
        earlyMoneyCheckedAt: null,
        payAddressBlock: null,
        expiresAt: p.expiresAt,
        exception: null,
        paidUnits: '0',
        expiredAt: null,
        writeId: p.writeId ?? null,
        createdAt: p.createdAt,
        updatedAt: p.createdAt,
      };
      const values = row as Record<string, unknown>;
      return Object.fromEntries(COLUMN_NAMES.map(([key, column]) => [column.name, values[key]]));
    }),
  );
}

export class ReceiptStore {
  /** Prepared for each handle, because a statement runs on its handle: the pool, or the transaction of a journal replay. */
  readonly #insertRows = perDatabase((tx: Tx) => receiptInsert(tx, 'receipts_insert', { claimed: false }));
  readonly #insertClaimedRows = perDatabase((db: Db) => receiptInsert(db, 'receipts_insert_claimed', { claimed: true }));
  readonly #pages = perDatabase(receiptPageJson);
  readonly #details = perDatabase(receiptDetailsJson);
  readonly #commits: GroupCommit<InsertReceiptParams, ReceiptRow>;
  readonly #lists: LookupBatcher<ReceiptPageJson | 'unknown_cursor'>;
  readonly #reads: LookupBatcher<string>;

  constructor(private readonly db: Db) {
    this.#commits = new GroupCommit((items) => this.#commitBatch(items));
    // Lists asked for in the same event-loop turn by one merchant with the same page (limit,
    // cursor and filters) share one query: a merchant's terminals and dashboards polling together
    // cost one read. As for every batched read, the query starts after each of its requests
    // arrived, never before, so a list always shows every receipt whose creation was acknowledged
    // before it was asked for.
    this.#lists = new LookupBatcher(async (group, keys) => {
      const { wallet, token, brand } = detailGroup(group);
      const pages = await Promise.all(
        keys.map(async (key) => {
          const p = JSON.parse(key) as ReceiptPage;
          const [row] = await this.#pages(this.db).execute({
            wallet,
            token,
            brand,
            limit: p.limit,
            take: p.limit + 1,
            after: p.startingAfter ?? null,
            status: p.status ?? null,
            gte: p.createdGte ?? null,
            lte: p.createdLte ?? null,
          });
          return row === undefined || row.cursorFound ? { json: row?.json ?? '[]', hasMore: row?.hasMore ?? false } : ('unknown_cursor' as const);
        }),
      );
      return new Map(keys.map((key, i) => [key, pages[i]!]));
    });
    // Receipt reads of one event-loop turn share a query per merchant and token.
    this.#reads = new LookupBatcher(async (group, ids) => {
      const { wallet, token, brand } = detailGroup(group);
      const rows = await this.#details(this.db).execute({ wallet, ids, brand, token });
      return new Map(rows.map((r) => [r.id, r.json]));
    });
  }

  /**
   * Inserts receipts with their first history entries, on the caller's handle (its transaction, or
   * the pool: the insert is one statement), and settles each on its own: the stored row (the new
   * one, or the existing one when the same request was already applied), or a conflict when a
   * different request holds the id. The same id twice in one call behaves as two calls in a row.
   * Rows go in key order, so two concurrent batches that share ids wait for each other rather than
   * deadlock.
   */
  async insert(tx: Tx, items: InsertReceiptParams[]): Promise<Settled<ReceiptRow>[]> {
    const first = new Map<string, InsertReceiptParams>();
    for (const p of items) if (!first.has(receiptKey(p.wallet, p.id))) first.set(receiptKey(p.wallet, p.id), p);
    const fresh = [...first.entries()].sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0)).map(([, p]) => p);
    const inserted = await this.#insertRows(tx).execute({ rows: receiptRecords(fresh) });
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

  /** insert for one receipt: its row, or its conflict thrown. */
  async insertOne(tx: Tx, p: InsertReceiptParams): Promise<ReceiptRow> {
    const [outcome] = await this.insert(tx, [p]);
    if (!outcome!.ok) throw outcome!.error;
    return outcome!.value;
  }

  /** One receipt, committed with the others of its event-loop turn: its row, or its conflict thrown. */
  commit(p: InsertReceiptParams): Promise<ReceiptRow> {
    return this.#commits.submit(p);
  }

  /**
   * A turn's creations in one statement, committed on its own: one round trip for the batch (two
   * when an id was already taken). When the statement is refused for a reason other than a lost
   * connection, each receipt is retried alone, so that only the receipt at fault fails; a lost
   * connection fails them all, and each request falls back to the journal as a single one would.
   */
  async #commitBatch(items: InsertReceiptParams[]): Promise<Settled<ReceiptRow>[]> {
    try {
      return await this.insert(this.db, items);
    } catch (err) {
      if (items.length === 1 || isConnectionError(err)) throw err;
      return Promise.all(
        items.map((p) =>
          this.insertOne(this.db, p).then(
            (value): Settled<ReceiptRow> => ({ ok: true, value }),
            (error: unknown): Settled<ReceiptRow> => ({ ok: false, error }),
          ),
        ),
      );
    }
  }

  /**
   * Claims each receipt's write id (`write`: its id and request hash) and inserts the receipts whose
   * claims it made, with their first history entries, in one statement committed on its own. A
   * receipt whose write id another write holds is left out (the statement waits for a holder still
   * in flight), and the caller tells a retry from a conflict. Returns the rows inserted.
   */
  async insertClaimed(kind: 'order', items: { params: InsertReceiptParams; write: Write }[]): Promise<ReceiptRow[]> {
    const claims = claimRecords(items.map(({ params: p, write }) => ({ write, claim: { wallet: p.wallet, kind, ref: p.id }, at: p.createdAt })));
    const rows = receiptRecords(items.map(({ params, write }) => ({ ...params, writeId: write.id })));
    return this.#insertClaimedRows(this.db).execute({ rows, claims });
  }

  /** One stored receipt, read on the caller's handle (a retry's, in its transaction); NotFound when there is none. */
  async find(tx: Tx, wallet: string, id: string): Promise<ReceiptRow> {
    const [row] = await tx.select().from(receipts).where(and(eq(receipts.wallet, wallet), eq(receipts.id, id)));
    if (row === undefined) throw new NotFound(`Receipt ${id} not found`);
    return row;
  }

  /**
   * One page of GET /api/receipts: its `receipts` array as JSON text (src/db/receipt-views.ts
   * receiptPageJson) and whether more receipts match beyond it; 'unknown_cursor' when
   * `startingAfter` names no receipt of this merchant.
   */
  async pageJson(wallet: string, page: ReceiptPage, fallbackBrand: string, token?: string): Promise<ReceiptPageJson | 'unknown_cursor'> {
    // Members in a fixed order, so equal pages share a key (and a query).
    const { limit, startingAfter, status, createdGte, createdLte } = page;
    const key = JSON.stringify({ limit, startingAfter, status, createdGte, createdLte });
    return (await this.#lists.get(detailGroupKey(wallet, token, fallbackBrand), key)) ?? { json: '[]', hasMore: false };
  }

  /**
   * One receipt with its status history and refunds as JSON text (src/db/receipt-views.ts
   * detailJson). `token`: the chain's token, whose first transfer into the receipt names its
   * payer; without it, payer is null.
   */
  async detailJson(wallet: string, id: string, fallbackBrand: string, token?: string): Promise<string> {
    const json = await this.#reads.get(detailGroupKey(wallet, token, fallbackBrand), id);
    if (json === undefined) throw new NotFound(`Receipt ${id} not found`);
    return json;
  }
}
