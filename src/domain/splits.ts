/**
 * Split configuration: the contract address and the recipients' shares in basis points.
 */
import { eq } from 'drizzle-orm';
import type { Tx } from '../db/client.ts';
import { splitConfigs, type SplitRecipient } from '../db/schema.ts';
import { InvalidInput } from '../lib/errors.ts';
import { isAddress, normalizeWallet } from './wallet.ts';

export interface SplitView {
  address: string | null;
  recipients: SplitRecipient[];
  /** The current version's number (1 for the first split); null when unconfigured. */
  version: number | null;
}

export const UNCONFIGURED: SplitView = { address: null, recipients: [], version: null };

export async function getSplitConfig(db: Tx, wallet: string): Promise<SplitView> {
  const [row] = await db.select().from(splitConfigs).where(eq(splitConfigs.wallet, wallet));
  if (row === undefined) return { ...UNCONFIGURED };
  return { address: row.address, recipients: row.recipients, version: row.version };
}

/** A split counts as configured once recipients are stored (the contract may deploy later). */
export function isConfigured(split: SplitView): boolean {
  return split.recipients.length > 0;
}

/**
 * Checks recipients: whole basis points from 1 to 10000 summing to 10000, each address a
 * 0x-prefixed 40-hex wallet appearing once (compared in lower case, the form stored).
 */
export function parseSplitRecipients(value: unknown): SplitRecipient[] {
  if (!Array.isArray(value) || value.length === 0) throw new InvalidInput('recipients must be a non-empty array');
  const seen = new Set<string>();
  let total = 0;
  const recipients = value.map((r: unknown, i): SplitRecipient => {
    const { address, sharesBps } = (typeof r === 'object' && r !== null ? r : {}) as Record<string, unknown>;
    if (!isAddress(address)) throw new InvalidInput(`recipients[${i}].address must be a 0x-prefixed 40-hex address`);
    const lower = normalizeWallet(address);
    if (seen.has(lower)) throw new InvalidInput(`recipients[${i}].address ${lower} appears twice`);
    seen.add(lower);
    if (typeof sharesBps !== 'number' || !Number.isInteger(sharesBps) || sharesBps < 1 || sharesBps > 10000) {
      throw new InvalidInput(`recipients[${i}].sharesBps must be an integer from 1 to 10000`);
    }
    total += sharesBps;
    return { address: lower, sharesBps };
  });
  if (total !== 10000) throw new InvalidInput(`recipients' sharesBps must sum to 10000 (got ${total})`);
  return recipients;
}

/**
 * Stores (or replaces) a merchant's split configuration after checking it. Checking a contract
 * address against the chain is the caller's business; this only stores the checked shape.
 */
export async function storeSplitConfig(
  db: Tx,
  wallet: string,
  input: { address: string | null; recipients: readonly SplitRecipient[] },
  now = Date.now(),
): Promise<SplitView> {
  if (input.address !== null && !isAddress(input.address)) {
    throw new InvalidInput('address must be a 0x-prefixed 40-hex address or null');
  }
  const address = input.address === null ? null : normalizeWallet(input.address);
  const recipients = parseSplitRecipients(input.recipients);
  const values = { wallet: normalizeWallet(wallet), address, recipients, createdAt: now };
  await db.insert(splitConfigs).values(values).onConflictDoUpdate({ target: splitConfigs.wallet, set: { address, recipients } });
  const [row] = await db.select({ version: splitConfigs.version }).from(splitConfigs).where(eq(splitConfigs.wallet, values.wallet));
  return { address, recipients, version: row?.version ?? 1 };
}
