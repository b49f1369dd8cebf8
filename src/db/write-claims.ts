/**
 * Write-id claims: the exactly-once mechanism. Every write that is not made unique by its own key
 * carries a write id (src/domain/writes.ts), claimed in the write's own statement or transaction:
 * a retry or a journal replay whose id is already claimed changes nothing and answers with what
 * the first write made (`ref`).
 *
 * The claim is one SQL statement, written here once (claimStatement): a single claim runs it with
 * one row; the stores put it in front of their own statements, so that an order batch's claims and
 * reads (src/db/order-store.ts), or a batch of order receipts with their claims
 * (src/db/receipt-store.ts), are one round trip.
 */
import { lt, sql, type Placeholder, type SQL } from 'drizzle-orm';
import { Conflict } from '../lib/errors.ts';
import { rowsOf } from './rows.ts';
import type { Tx } from './client.ts';
import { idempotencyKeys, writeIds } from './schema.ts';

/** A write's id and the fingerprint of the request that made it. */
export interface Write {
  id: string;
  /** Hash of the request (method, path and body): the same id with another request is a conflict. */
  hash: string;
}

export type WriteKind = 'order' | 'refund' | 'inventory' | 'terminal' | 'status' | 'journal';

/** What a write claims: its id, for whom, what kind of write it is and what it makes or changes. */
export interface ClaimParams {
  wallet: string | null;
  kind: WriteKind;
  ref?: string | null;
}

/** `at`: when the first write claimed the id (its clock), so a retry can answer as it did. */
export type Claim = { fresh: true } | { fresh: false; ref: string | null; at: number };

/** Write ids are kept this long: longer than any journal entry waits and any Idempotency-Key is kept. */
export const WRITE_ID_RETENTION_MS = 7 * 24 * 3600_000;

/** Answers to Idempotency-Keys are kept two days: more than the 24 hours promised, so a retry a day late still finds them. */
export const IDEMPOTENCY_RETENTION_MS = 48 * 3600_000;

/** One claim as claimStatement reads it: a write_ids row as JSON. */
interface ClaimRecord {
  write_id: string;
  wallet: string | null;
  kind: WriteKind;
  ref: string | null;
  request_hash: string | null;
  at: number;
}

/**
 * The claim statement: inserts each claim of `records` (a JSON array of claimRecords, as a
 * parameter or a placeholder), in write-id order so that two batches sharing ids wait for each
 * other rather than deadlock, and returns the ids it claimed (column write_id). An id already
 * held is not claimed: the insert waits for a holder still in flight, and the caller tells a
 * retry from a conflict (WriteClaims.claim).
 */
export function claimStatement(records: SQL | Placeholder): SQL {
  return sql`insert into ${writeIds} (write_id, wallet, kind, ref, request_hash, at)
    select write_id, wallet, kind, ref, request_hash, at from json_to_recordset(${records}::json)
      as c(write_id text, wallet text, kind text, ref text, request_hash text, at bigint)
    order by write_id
    on conflict do nothing
    returning write_id`;
}

/** The claims of `writes` as claimStatement's JSON parameter. */
export function claimRecords(writes: { write: Write; claim: ClaimParams; at: number }[]): string {
  return JSON.stringify(
    writes.map(
      ({ write, claim, at }): ClaimRecord => ({ write_id: write.id, wallet: claim.wallet, kind: claim.kind, ref: claim.ref ?? null, request_hash: write.hash || null, at }),
    ),
  );
}

/** The statement of the ids among `ids` that a write already holds (column write_id). */
export function heldStatement(ids: string[]): SQL {
  return sql`select write_id from ${writeIds} where write_id in (select value from json_array_elements_text(${JSON.stringify(ids)}::json))`;
}

/**
 * The statement that releases claims (column write_id of each deleted): for writes refused after
 * their claim, in the claim's transaction, as if each had rolled back on its own.
 */
export function releaseStatement(ids: string[]): SQL {
  return sql`delete from ${writeIds} where write_id in (select value from json_array_elements_text(${JSON.stringify(ids)}::json)) returning write_id`;
}

/**
 * A write id that a claim found held: the first write's `ref` and time when it was the same
 * request (a retry or a replay), else a Conflict.
 */
async function judgeHeld(tx: Tx, write: Write, p: ClaimParams): Promise<Claim> {
  const [first] = await tx
    .select({ wallet: writeIds.wallet, kind: writeIds.kind, ref: writeIds.ref, requestHash: writeIds.requestHash, at: writeIds.at })
    .from(writeIds)
    .where(sql`${writeIds.writeId} = ${write.id}`);
  const sameRequest =
    first !== undefined &&
    first.kind === p.kind &&
    (first.wallet === null || first.wallet === p.wallet) &&
    (first.requestHash === null || write.hash === '' || first.requestHash === write.hash);
  if (!sameRequest) {
    throw new Conflict('This Idempotency-Key was already used for another request; send a new key for a new request');
  }
  return { fresh: false, ref: first.ref, at: first.at };
}

/**
 * The write-id claims of one app (built in src/deps.ts, shared by its stores): the one claim
 * statement and the one rule that tells a retry from a conflict.
 */
export class WriteClaims {
  /** See claimStatement. */
  readonly statement = claimStatement;
  /** See claimRecords. */
  readonly records = claimRecords;
  /** See heldStatement. */
  readonly held = heldStatement;
  /** See releaseStatement. */
  readonly release = releaseStatement;

  /**
   * Claims one write id in the caller's transaction, before the write itself. `fresh` when no write
   * holds the id; otherwise the first write's `ref`. A concurrent write with the same id waits here
   * until the first one commits or rolls back. Another request under the same id is a conflict.
   */
  async claim(tx: Tx, write: Write, p: ClaimParams, now = Date.now()): Promise<Claim> {
    const claimed = rowsOf(await tx.execute(claimStatement(sql`${claimRecords([{ write, claim: p, at: now }])}`)));
    if (claimed.length === 1) return { fresh: true };
    return judgeHeld(tx, write, p);
  }

  /** Deletes write ids and stored Idempotency-Key answers older than their retention. */
  async purge(tx: Tx, now: number): Promise<{ writeIds: number; idempotencyKeys: number }> {
    const ids = await tx.delete(writeIds).where(lt(writeIds.at, now - WRITE_ID_RETENTION_MS)).returning({ id: writeIds.writeId });
    const keys = await tx
      .delete(idempotencyKeys)
      .where(lt(idempotencyKeys.createdAt, now - IDEMPOTENCY_RETENTION_MS))
      .returning({ key: idempotencyKeys.key });
    return { writeIds: ids.length, idempotencyKeys: keys.length };
  }
}
