/**
 * How receipts are written: one statement inserts a batch of receipts with their first history
 * entries, and creations of one event-loop turn share it (GroupCommit, src/db/batch.ts). The
 * rules (what a receipt may hold, when it is a retry or a conflict) are src/domain/receipts.ts's.
 */
import { and, eq, getTableColumns, or, sql, type SQLChunk } from 'drizzle-orm';
import { Conflict } from '../domain/errors.ts';
import { centsToTokenUnits, centsToUsd, ppmToRate } from '../domain/money.ts';
import { GroupCommit, type Settled } from './batch.ts';
import { isConnectionError, type Db, type Tx } from './client.ts';
import { perDatabase } from './prepared.ts';
import { receipts, receiptStatusHistory, writeIds, type StoredLineItem } from './schema.ts';

type ReceiptRow = typeof receipts.$inferSelect;

export interface LineItemView {
  label: string;
  priceUsd: number;
  qty?: number;
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
const insertReceiptRows = perDatabase((db: Tx) => receiptInsert(db, 'receipts_insert', { claimed: false }));

/**
 * The statement of insertReceiptRows. `claimed`: the statement also claims each receipt's write id
 * (src/domain/writes.ts), in write-id order, and inserts only the receipts whose claim it made:
 * a claim, its receipt and its history entry are then one atomic statement, with no transaction
 * around it (src/domain/orders.ts). A receipt id already taken then fails the whole statement
 * rather than leave a claim without its receipt.
 */
function receiptInsert(db: Tx, name: string, opts: { claimed: boolean }) {
  const columns = Object.entries(getTableColumns(receipts));
  const list = (parts: SQLChunk[]) => sql.join(parts, sql`, `);
  const w = writeIds;
  const claimed = db.$with('claimed', { writeId: w.writeId }).as(
    sql`insert into ${w} (${list([w.writeId, w.wallet, w.kind, w.ref, w.requestHash, w.at].map((c) => sql.identifier(c.name)))})
      select write_id, wallet, kind, ref, request_hash, at from json_to_recordset(${sql.placeholder('claims')}::json)
        as c(write_id text, wallet text, kind text, ref text, request_hash text, at bigint)
      order by write_id
      on conflict do nothing returning ${sql.identifier(w.writeId.name)}`,
  );
  const inserted = db.$with('inserted', getTableColumns(receipts)).as(
    sql`insert into ${receipts} (${list(columns.map(([, column]) => sql.identifier(column.name)))})
      select * from json_to_recordset(${sql.placeholder('rows')}::json)
        as r(${list(columns.map(([key, column]) => sql`${sql.identifier(key)} ${sql.raw(column.getSQLType())}`))})
      ${opts.claimed ? sql`where r."writeId" in (select write_id from claimed)` : sql`on conflict do nothing`} returning *`,
  );
  const h = receiptStatusHistory;
  const history = db.$with('history', {}).as(
    sql`insert into ${h} (${list([h.seq, h.wallet, h.receiptId, h.status, h.source, h.at].map((c) => sql.identifier(c.name)))}) select nextval(pg_get_serial_sequence('receipt_status_history', 'seq')), wallet, id, status, source, created_at from inserted`,
  );
  return (opts.claimed ? db.with(claimed, inserted, history) : db.with(inserted, history)).select().from(inserted).prepare(name);
}

const insertClaimedReceiptRows = perDatabase((db: Db) => receiptInsert(db, 'receipts_insert_claimed', { claimed: true }));

/**
 * Claims each receipt's write id (`write`: its id and request hash, src/domain/writes.ts) and
 * inserts the receipts whose claims it made, with their first history entries, in one statement
 * committed on its own. A receipt whose write id another write holds is left out (the statement
 * waits for a holder still in flight), and the caller tells a retry from a conflict. Returns the
 * rows inserted.
 */
export async function insertClaimedReceipts(db: Db, kind: 'order', items: { params: InsertReceiptParams; write: { id: string; hash: string } }[]): Promise<ReceiptRow[]> {
  const claims = items.map(({ params: p, write }) => ({ write_id: write.id, wallet: p.wallet, kind, ref: p.id, request_hash: write.hash || null, at: p.createdAt }));
  const rows = receiptRecords(items.map(({ params, write }) => ({ ...params, writeId: write.id })));
  return insertClaimedReceiptRows(db).execute({ rows, claims: JSON.stringify(claims) });
}

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
        stateJson: newStateJson(p),
        detailJson: newDetailJson(p),
        payAddress: null,
        payFactory: null,
        otherMoney: null,
        balancesCheckedAt: null,
        balancesCheckDue: null,
        earlyMoneyCheckedAt: null,
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

/** One receipt, committed with the others of its turn: its row, or its conflict thrown. */
export function commitReceipt(db: Db, p: InsertReceiptParams): Promise<ReceiptRow> {
  return receiptCommits(db).submit(p);
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

/**
 * The stored views of a new receipt (state_json and detail_json), as the database's
 * receipt_state_json and receipt_detail_json render them (migrations/0010_receipt_views.sql):
 * nothing paid, nothing refunded, and the creation entry as its whole history. The creating
 * statement stores them with the row, so creation costs no second write; every later change is
 * rendered by the database. The tests compare both renderings.
 */
function newStateJson(p: InsertReceiptParams): string {
  const state = { status: p.status, exception: null, expiresAt: p.expiresAt, amountPaid: '0', amountDue: centsToTokenUnits(p.totalCents).toString(), refundedUsd: 0 };
  return `,${JSON.stringify(state).slice(1, -1)}`;
}

function newDetailJson(p: InsertReceiptParams): string {
  const detail = {
    jurisdictionCode: p.jurisdictionCode ?? null,
    taxRate: p.taxRatePpm === null || p.taxRatePpm === undefined ? 0 : ppmToRate(BigInt(p.taxRatePpm)),
    taxComponents: p.taxComponents ?? [],
    statusHistory: [{ status: p.status, at: p.createdAt, source: p.source }],
    refunds: [],
  };
  return `,${JSON.stringify(detail).slice(1, -1)}`;
}
