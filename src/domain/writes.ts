/**
 * Write ids: every write carries one, stored with it, so that a retry or a journal replay whose id
 * is already stored changes nothing and answers with what the first write made. A request with an
 * Idempotency-Key gets an id derived from its caller and key (src/http/idempotency.ts), so the
 * retry of an ambiguous commit finds its own write; without a key, each request gets a fresh id.
 * How an id is claimed is src/db/write-claims.ts's.
 */
import { randomUUID } from 'node:crypto';
import type { Write } from '../db/write-claims.ts';

export type { Claim, Write, WriteKind } from '../db/write-claims.ts';

/** A write id for a request that carried no Idempotency-Key. */
export function freshWrite(hash = ''): Write {
  return { id: randomUUID(), hash };
}
