/**
 * Journal entries: what is written, how a line is read back (checked field by field: the file is
 * external data), and how one entry is applied to the database exactly once.
 */
import type { Db } from '../db/client.ts';
import { rejectedWrites, type StoredLineItem } from '../db/schema.ts';
import type { ReceiptStore } from '../db/receipt-store.ts';
import { applyTrackingStatus, DEFAULT_TTL_MINUTES, expiryOf } from '../domain/receipts.ts';
import { parseMetadata } from '../domain/metadata.ts';
import { isTrackingStatus, type TrackingStatus } from '../contract/receipts.ts';
import type { JournaledWriteKind } from '../contract/rejected-writes.ts';
import type { WriteClaims } from '../db/write-claims.ts';
import { enqueueEvent } from '../webhooks/outbox.ts';

export interface ReceiptCreatePayload {
  id: string;
  lineItems: StoredLineItem[];
  /** Integer cents as a decimal string (JSON has no bigint). */
  totalCents: string;
  requestHash: string;
  payToken: string;
  createdAt: number;
  /** Absent in entries written before receipts expired: then the default time to live applies. */
  expiresAt?: number;
  /** The shop's own fields, as checked (src/domain/metadata.ts); absent when none were sent. */
  metadata?: Record<string, string>;
  /** Checked before it was journaled (src/domain/return-url.ts); absent when none was sent. */
  returnUrl?: string;
}

export interface ReceiptStatusPayload {
  receiptId: string;
  status: TrackingStatus;
  at: number;
}

interface EntryBase {
  /** The write's id (src/domain/writes.ts): the same on the database path and in the journal. */
  entryId: string;
  /** When the entry was written, Unix ms. */
  at: number;
  wallet: string;
}

export type JournalEntry =
  | (EntryBase & { kind: 'receipt.create'; payload: ReceiptCreatePayload })
  | (EntryBase & { kind: 'receipt.status'; payload: ReceiptStatusPayload });

/** An entry that never applies is listed under its kind (GET /api/admin/rejected-writes): the same set, both ways. */
const kindsAgree: [JournalEntry['kind'], JournaledWriteKind] extends [JournaledWriteKind, JournalEntry['kind']] ? true : never = true;
void kindsAgree;

export class UnreadableEntry extends Error {
  constructor(reason: string) {
    super(`Unreadable journal entry: ${reason}`);
    this.name = 'UnreadableEntry';
  }
}

type Obj = Record<string, unknown>;

function obj(v: unknown, what: string): Obj {
  if (typeof v !== 'object' || v === null || Array.isArray(v)) throw new UnreadableEntry(`${what} is not an object`);
  return v as Obj;
}
function str(o: Obj, k: string): string {
  const v = o[k];
  if (typeof v !== 'string' || v === '') throw new UnreadableEntry(`${k} is not a string`);
  return v;
}
function int(o: Obj, k: string): number {
  const v = o[k];
  if (typeof v !== 'number' || !Number.isSafeInteger(v)) throw new UnreadableEntry(`${k} is not an integer`);
  return v;
}
function digits(o: Obj, k: string): string {
  const v = str(o, k);
  if (!/^\d+$/.test(v)) throw new UnreadableEntry(`${k} is not a decimal integer`);
  return v;
}

function lineItem(v: unknown): StoredLineItem {
  const o = obj(v, 'line item');
  const item: StoredLineItem = { label: str(o, 'label'), priceCents: digits(o, 'priceCents') };
  if (o.qty !== undefined) item.qty = int(o, 'qty');
  return item;
}

/** Metadata as the journal wrote it, checked again by the create's own rules: the file is external data. */
function metadata(v: unknown): Record<string, string> {
  try {
    return parseMetadata(v);
  } catch (err) {
    throw new UnreadableEntry(`metadata: ${(err as Error).message}`);
  }
}

/** The identifier of the receipt an entry concerns. */
export function receiptIdOf(e: JournalEntry): string {
  return e.kind === 'receipt.create' ? e.payload.id : e.payload.receiptId;
}

export function receiptKey(wallet: string, receiptId: string): string {
  return `${wallet}\n${receiptId}`;
}

/** Reads one journal line; throws UnreadableEntry when it is not a well-formed entry. */
export function parseEntry(line: string): JournalEntry {
  let raw: unknown;
  try {
    raw = JSON.parse(line);
  } catch (err) {
    throw new UnreadableEntry(`not JSON (${(err as Error).message})`);
  }
  const o = obj(raw, 'entry');
  const base: EntryBase = { entryId: str(o, 'entryId'), at: int(o, 'at'), wallet: str(o, 'wallet') };
  const p = obj(o.payload, 'payload');
  if (o.kind === 'receipt.create') {
    const items = p.lineItems;
    if (!Array.isArray(items) || items.length === 0) throw new UnreadableEntry('lineItems is not a list');
    return {
      ...base,
      kind: 'receipt.create',
      payload: {
        id: str(p, 'id'),
        lineItems: items.map(lineItem),
        totalCents: digits(p, 'totalCents'),
        requestHash: str(p, 'requestHash'),
        payToken: str(p, 'payToken'),
        createdAt: int(p, 'createdAt'),
        ...(p.expiresAt === undefined ? {} : { expiresAt: int(p, 'expiresAt') }),
        ...(p.metadata === undefined ? {} : { metadata: metadata(p.metadata) }),
        ...(p.returnUrl === undefined ? {} : { returnUrl: str(p, 'returnUrl') }),
      },
    };
  }
  if (o.kind === 'receipt.status') {
    const status = str(p, 'status');
    if (!isTrackingStatus(status)) throw new UnreadableEntry(`${status} is not a tracking status`);
    return { ...base, kind: 'receipt.status', payload: { receiptId: str(p, 'receiptId'), status, at: int(p, 'at') } };
  }
  throw new UnreadableEntry(`unknown kind ${String(o.kind)}`);
}

export interface Applied {
  /** 'skipped': the write was already stored (by the database path, another instance, or a replay before a crash). */
  outcome: 'applied' | 'skipped';
  /** The receipt already existed with the same body but another payment token. */
  tokenMismatch?: boolean;
}

/**
 * Applies one entry in one transaction that first claims its write id (write_ids), so an entry
 * whose write is already stored changes nothing: replayed twice (a crash between apply and
 * compaction), or made on the database path by a commit whose answer was lost. Domain errors
 * (Conflict, NotFound) roll the claim back with everything else. `stores`: the app's receipts store
 * and write-id claims (the journal's options).
 */
export async function applyEntry(db: Db, stores: { receipts: ReceiptStore; claims: WriteClaims }, e: JournalEntry, now: number): Promise<Applied> {
  const { receipts, claims } = stores;
  return db.transaction(async (tx) => {
    const kind = e.kind === 'receipt.status' ? 'status' : 'journal';
    const claim = await claims.claim(tx, { id: e.entryId, hash: '' }, { wallet: e.wallet, kind, ref: receiptIdOf(e) }, now);
    if (!claim.fresh) return { outcome: 'skipped' };
    if (e.kind === 'receipt.status') {
      await applyTrackingStatus(tx, { wallet: e.wallet, receiptId: e.payload.receiptId, status: e.payload.status, at: e.payload.at });
      return { outcome: 'applied' };
    }
    const p = e.payload;
    const row = await receipts.insertOne(tx, {
      wallet: e.wallet,
      id: p.id,
      source: 'api',
      status: 'pending',
      lineItems: p.lineItems,
      totalCents: BigInt(p.totalCents),
      requestHash: p.requestHash,
      metadata: p.metadata ?? {},
      returnUrl: p.returnUrl ?? null,
      payToken: p.payToken,
      createdAt: p.createdAt,
      expiresAt: p.expiresAt ?? expiryOf(p.createdAt, undefined, DEFAULT_TTL_MINUTES),
      writeId: e.entryId,
    });
    return { outcome: 'applied', tokenMismatch: row.payToken !== p.payToken };
  });
}

/**
 * Records an acknowledged entry that can never apply, for its merchant to see (the admin app's
 * rejected writes) and to hear of (write.rejected), in one transaction. Recording it twice
 * (a crash before the journal moved it) changes nothing.
 */
export async function recordRejection(db: Db, e: JournalEntry, reason: string, now: number): Promise<void> {
  await db.transaction(async (tx) => {
    const [row] = await tx
      .insert(rejectedWrites)
      .values({
        writeId: e.entryId,
        wallet: e.wallet,
        kind: e.kind,
        receiptId: receiptIdOf(e),
        reason,
        entry: e as unknown as Record<string, unknown>,
        acknowledgedAt: e.at,
        rejectedAt: now,
      })
      .onConflictDoNothing()
      .returning({ writeId: rejectedWrites.writeId });
    if (row === undefined) return;
    await enqueueEvent(
      tx,
      {
        wallet: e.wallet,
        type: 'write.rejected',
        dedupeKey: e.entryId,
        data: {
          writeId: e.entryId,
          kind: e.kind,
          receiptId: receiptIdOf(e),
          reason,
          acknowledgedAt: e.at,
          // The refused creation's own fields, so the shop knows which of its orders it was.
          ...(e.kind === 'receipt.create' ? { metadata: e.payload.metadata ?? {} } : {}),
        },
      },
      now,
    );
  });
}
