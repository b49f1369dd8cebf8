/**
 * Write ids: every write carries one, stored with it, so that a retry or a journal replay whose id
 * is already stored changes nothing and answers with what the first write made. A request with an
 * Idempotency-Key gets an id derived from its caller and key (src/http/idempotency.ts), so the
 * retry of an ambiguous commit finds its own write; without a key, each request gets a fresh id.
 */
import { randomUUID } from 'node:crypto';
import { eq, lt } from 'drizzle-orm';
import type { Tx } from '../db/client.ts';
import { idempotencyKeys, writeIds } from '../db/schema.ts';
import { Conflict } from './errors.ts';

/** A write's id and the fingerprint of the request that made it. */
export interface Write {
  id: string;
  /** Hash of the request (method, path and body): the same id with another request is a conflict. */
  hash: string;
}

export type WriteKind = 'order' | 'refund' | 'inventory' | 'terminal' | 'status' | 'journal';

/** Write ids are kept this long: longer than any journal entry waits and any Idempotency-Key is kept. */
export const WRITE_ID_RETENTION_MS = 7 * 24 * 3600_000;

/** A write id for a request that carried no Idempotency-Key. */
export function freshWrite(hash = ''): Write {
  return { id: randomUUID(), hash };
}

/** `at`: when the first write claimed the id (its clock), so a retry can answer as it did. */
export type Claim = { fresh: true } | { fresh: false; ref: string | null; at: number };

/**
 * Claims a write id in the caller's transaction, before the write itself. `fresh` when no write
 * holds the id; otherwise the first write's `ref`. A concurrent write with the same id waits here
 * until the first one commits or rolls back. Another request under the same id is a conflict.
 */
export async function claimWrite(
  tx: Tx,
  write: Write,
  p: { wallet: string | null; kind: WriteKind; ref?: string | null },
  now = Date.now(),
): Promise<Claim> {
  const claimed = await tx
    .insert(writeIds)
    .values({ writeId: write.id, wallet: p.wallet, kind: p.kind, ref: p.ref ?? null, requestHash: write.hash || null, at: now })
    .onConflictDoNothing()
    .returning({ writeId: writeIds.writeId });
  if (claimed.length === 1) return { fresh: true };
  const [first] = await tx
    .select({ wallet: writeIds.wallet, kind: writeIds.kind, ref: writeIds.ref, requestHash: writeIds.requestHash, at: writeIds.at })
    .from(writeIds)
    .where(eq(writeIds.writeId, write.id));
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

/** Answers to Idempotency-Keys are kept two days: more than the 24 hours promised, so a retry a day late still finds them. */
export const IDEMPOTENCY_RETENTION_MS = 48 * 3600_000;

/** Deletes write ids and stored Idempotency-Key answers older than their retention. */
export async function purgeWrites(tx: Tx, now: number): Promise<{ writeIds: number; idempotencyKeys: number }> {
  const ids = await tx.delete(writeIds).where(lt(writeIds.at, now - WRITE_ID_RETENTION_MS)).returning({ id: writeIds.writeId });
  const keys = await tx
    .delete(idempotencyKeys)
    .where(lt(idempotencyKeys.createdAt, now - IDEMPOTENCY_RETENTION_MS))
    .returning({ key: idempotencyKeys.key });
  return { writeIds: ids.length, idempotencyKeys: keys.length };
}
