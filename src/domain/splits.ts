/**
 * Split configuration: the contract address and the recipients' shares in basis points.
 */
import { eq } from 'drizzle-orm';
import type { Tx } from '../db/client.ts';
import { splitConfigs, type SplitRecipient } from '../db/schema.ts';

export interface SplitView {
  address: string | null;
  recipients: SplitRecipient[];
}

export const UNCONFIGURED: SplitView = { address: null, recipients: [] };

export async function getSplitConfig(db: Tx, wallet: string): Promise<SplitView> {
  const [row] = await db.select().from(splitConfigs).where(eq(splitConfigs.wallet, wallet));
  if (row === undefined) return { address: null, recipients: [] };
  return { address: row.address, recipients: row.recipients };
}

/** A split counts as configured once recipients are stored (the contract may deploy later). */
export function isConfigured(split: SplitView): boolean {
  return split.recipients.length > 0;
}
