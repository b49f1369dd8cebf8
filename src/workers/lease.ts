/**
 * Leader leases in the database: one instance at a time holds a named lease and runs its worker.
 * A holder renews well before expiry; if it dies, another instance takes over once it lapses.
 */
import { sql } from 'drizzle-orm';
import type { Db } from '../db/client.ts';
import { leases } from '../db/schema.ts';

/** Takes or renews the lease; true while `holder` owns it. */
export async function acquireLease(db: Db, name: string, holder: string, ttlMs: number, now = Date.now()): Promise<boolean> {
  const rows = await db
    .insert(leases)
    .values({ name, holder, expiresAt: now + ttlMs })
    .onConflictDoUpdate({
      target: leases.name,
      set: { holder, expiresAt: now + ttlMs },
      setWhere: sql`${leases.holder} = ${holder} or ${leases.expiresAt} < ${now}`,
    })
    .returning({ holder: leases.holder });
  return rows.length === 1 && rows[0]!.holder === holder;
}

export async function releaseLease(db: Db, name: string, holder: string): Promise<void> {
  await db.execute(sql`delete from ${leases} where ${leases.name} = ${name} and ${leases.holder} = ${holder}`);
}
