/**
 * Split versions (DESIGN.md "Recipients: split versions"): a merchant's recipients change by a new
 * version, never by editing the old one. The new version's contract is deployed or verified like
 * the first split's (src/domain/split-setup.ts); receipts created from its start pay into it, and
 * every receipt created before keeps the split its payment address commits to
 * (receipts.pay_split, src/payments/pay-address.ts).
 *
 * split_configs holds the current version; a trigger writes every change of it to split_versions
 * (migrations/0025_split_versions.sql).
 */
import { and, desc, eq, sql } from 'drizzle-orm';
import type { Db, Tx } from '../db/client.ts';
import { receipts, splitConfigs, splitVersions, type SplitRecipient } from '../db/schema.ts';
import { AppError, Conflict, InvalidInput } from '../lib/errors.ts';
import { checkRecipients, checkSplitAddress, splitContractFor, type DeployCaller, type PlatformShare, type SplitChain } from './split-setup.ts';
import { normalizeWallet } from './wallet.ts';

export interface SplitVersion {
  version: number;
  /** The split contract; null only for a first version stored before its contract was deployed. */
  address: string | null;
  recipients: SplitRecipient[];
  /** Receipts created from this time (Unix ms) on pay into this version; 0 for version 1. */
  startsAt: number;
  createdAt: number;
  current: boolean;
}

export interface SplitVersionInput {
  splitAddress?: unknown;
  recipients?: unknown;
}

export interface SplitVersionResult {
  version: SplitVersion;
  /** The recipients are the current version's already: nothing was deployed or stored. */
  idempotent: boolean;
}

/** A new version needs a first split: 403 split_required, as orders and terminal receipts do. */
export class NoSplitYet extends AppError {
  constructor() {
    super(403, 'split_required', 'Configure the split first (POST /api/split/deploy); a new version replaces an existing one');
  }
}

/** Every version of the merchant's split, newest first; empty when unconfigured. */
export async function listSplitVersions(db: Tx, wallet: string): Promise<SplitVersion[]> {
  const owner = normalizeWallet(wallet);
  const rows = await db.select().from(splitVersions).where(eq(splitVersions.wallet, owner)).orderBy(desc(splitVersions.version));
  return rows.map((r, i) => ({ version: r.version, address: r.address, recipients: r.recipients, startsAt: r.startsAt, createdAt: r.createdAt, current: i === 0 }));
}

/** Every split contract the merchant ever had, oldest version first. */
export async function splitAddressesOf(db: Tx, wallet: string): Promise<{ version: number; address: string; recipients: SplitRecipient[] }[]> {
  const rows = await db.select().from(splitVersions).where(eq(splitVersions.wallet, normalizeWallet(wallet))).orderBy(splitVersions.version);
  return rows.filter((r) => r.address !== null).map((r) => ({ version: r.version, address: r.address!, recipients: r.recipients }));
}

/** The same payees with the same shares, in any order (PaymentSplitter pays by payee, not by position). */
export function sameRecipients(a: readonly SplitRecipient[], b: readonly SplitRecipient[]): boolean {
  const key = (rs: readonly SplitRecipient[]) => rs.map((r) => `${r.address.toLowerCase()}:${r.sharesBps}`).sort().join(',');
  return key(a) === key(b);
}

async function currentVersion(db: Tx, owner: string): Promise<SplitVersion | undefined> {
  const [current] = (await listSplitVersions(db, owner)).slice(0, 1);
  return current;
}

/**
 * Makes the recipients the merchant's new split version and returns it. Recipients equal to the
 * current version's (in any order) answer the current version with idempotent: true, so a retry
 * never deploys twice; a splitAddress other than the current one with them is a new version.
 * A first version whose contract was never deployed has received nothing: it is replaced in place
 * (same number) rather than kept.
 */
export async function createSplitVersion(
  db: Db,
  wallet: string,
  input: SplitVersionInput,
  platform: PlatformShare,
  now = Date.now(),
  chain?: SplitChain,
  caller?: DeployCaller,
): Promise<SplitVersionResult> {
  const owner = normalizeWallet(wallet);
  const current = await currentVersion(db, owner);
  if (current === undefined) throw new NoSplitYet();
  checkSplitAddress(input.splitAddress);
  if (input.recipients === undefined) throw new InvalidInput('recipients are required for a new split version');
  const recipients = checkRecipients(input.recipients, platform);
  const given = typeof input.splitAddress === 'string' ? normalizeWallet(input.splitAddress) : null;
  if (sameRecipients(recipients, current.recipients) && current.address !== null && (given === null || given === current.address)) {
    return { version: current, idempotent: true };
  }
  if (given === null && chain === undefined) {
    throw new AppError(503, 'chain_unavailable', 'This instance runs without a chain: it can neither deploy nor verify the new version\'s split contract');
  }
  if (given === null && chain?.deploy === undefined) {
    throw new InvalidInput(
      'This service has no deployer account: deploy the PaymentSplitter for the new recipients from your own wallet and send its splitAddress',
    );
  }
  const address = await splitContractFor(db, owner, given ?? undefined, recipients, now, chain, caller);
  if (address === null) throw new InvalidInput('splitAddress is required: this service cannot deploy the split contract');

  const replaceInPlace = current.address === null;
  // Receipts created from startsAt on pay into the new version. Never before a receipt already
  // stored: its payment page may have shown the address of the version it was created under.
  const startsAt = sql<number>`greatest(${now}::bigint, coalesce((select max(${receipts.createdAt}) + 1 from ${receipts} where ${receipts.wallet} = ${owner}), 0))`;
  const [updated] = await db
    .update(splitConfigs)
    .set(
      replaceInPlace
        ? { address, recipients }
        : { address, recipients, version: sql`${splitConfigs.version} + 1`, startsAt },
    )
    .where(and(eq(splitConfigs.wallet, owner), eq(splitConfigs.version, current.version)))
    .returning();
  if (updated === undefined) {
    // Another request made a version between our read and write: a repeat of it answers as one.
    const now2 = await currentVersion(db, owner);
    if (now2 !== undefined && sameRecipients(now2.recipients, recipients)) return { version: now2, idempotent: true };
    throw new Conflict('The split changed while this version was being made; read the versions and try again');
  }
  const made = await currentVersion(db, owner);
  return { version: made!, idempotent: false };
}
