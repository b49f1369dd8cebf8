/**
 * The admin's split set-up (POST /api/split/deploy): idempotent, with the platform's share
 * enforced. The first call stores the configuration; later calls return what is stored.
 */
import { eq } from 'drizzle-orm';
import type { Db } from '../db/client.ts';
import { splitConfigs, type SplitRecipient } from '../db/schema.ts';
import { Conflict, InvalidInput } from './errors.ts';
import { parseSplitRecipients, type SplitView } from './splits.ts';
import { isAddress, normalizeWallet } from './wallet.ts';

export interface SplitSetupInput {
  splitAddress?: unknown;
  recipients?: unknown;
}

export interface PlatformShare {
  address: string | undefined;
  feeBps: number;
}

export interface SplitSetupResult {
  split: SplitView;
  idempotent: boolean;
}

/**
 * What the set-up needs from the chain (src/chain/split-setup-chain.ts). Without it (a service
 * run without a chain, as most tests are) a given address is stored as given and nothing deploys.
 */
export interface SplitChain {
  /** Whether the contract at `address` pays exactly these recipients; a reason when it does not. */
  verify(address: string, recipients: readonly SplitRecipient[]): Promise<{ ok: true } | { ok: false; reason: string; message: string }>;
  /** Deploys a split contract for the recipients; absent when the service has no deployer account. */
  deploy?(recipients: readonly SplitRecipient[]): Promise<string>;
}

/**
 * Checks the recipients: the shape rules of parseSplitRecipients, plus the platform recipient
 * holding exactly its fee share, so every payment pays the platform what it is owed.
 */
export function checkRecipients(value: unknown, platform: PlatformShare) {
  const recipients = parseSplitRecipients(value);
  if (platform.feeBps > 0) {
    if (platform.address === undefined) {
      throw new InvalidInput('The platform recipient address is not configured: set PLATFORM_RECIPIENT_ADDRESS on the server', 'platform_recipient_not_configured');
    }
    const mine = recipients.find((r) => r.address === platform.address);
    if (mine === undefined || mine.sharesBps !== platform.feeBps) {
      throw new InvalidInput(
        `recipients must include the platform recipient ${platform.address} with sharesBps ${platform.feeBps}`,
      );
    }
  }
  return recipients;
}

/** A split contract belongs to one merchant: another's address is refused with 409. */
async function assertSplitUnowned(db: Db, address: string): Promise<void> {
  const [taken] = await db.select({ wallet: splitConfigs.wallet }).from(splitConfigs).where(eq(splitConfigs.address, address));
  if (taken !== undefined) throw new Conflict('This split contract is already registered by another merchant');
}

export async function setUpSplit(
  db: Db,
  wallet: string,
  input: SplitSetupInput,
  platform: PlatformShare,
  now = Date.now(),
  chain?: SplitChain,
): Promise<SplitSetupResult> {
  const owner = normalizeWallet(wallet);
  const [existing] = await db.select().from(splitConfigs).where(eq(splitConfigs.wallet, owner));
  if (existing !== undefined) {
    return { split: { address: existing.address, recipients: existing.recipients }, idempotent: true };
  }
  if (input.splitAddress !== undefined && input.splitAddress !== null && !isAddress(input.splitAddress)) {
    throw new InvalidInput('splitAddress must be a 0x-prefixed 40-hex contract address');
  }
  if (input.recipients === undefined) throw new InvalidInput('recipients are required to configure a split');
  const recipients = checkRecipients(input.recipients, platform);
  let address = typeof input.splitAddress === 'string' ? normalizeWallet(input.splitAddress) : null;
  if (address !== null) await assertSplitUnowned(db, address);
  if (address !== null && chain !== undefined) {
    const match = await chain.verify(address, recipients);
    if (!match.ok) throw new InvalidInput(`splitAddress does not match the recipients (${match.reason}): ${match.message}`);
  } else if (address === null && chain?.deploy !== undefined) {
    // Two concurrent first calls may both deploy; the insert below keeps one and the other
    // contract is simply never used.
    address = normalizeWallet(await chain.deploy(recipients));
  }
  const [stored] = await db
    .insert(splitConfigs)
    .values({ wallet: owner, address, recipients, createdAt: now })
    .onConflictDoNothing()
    .returning();
  if (stored === undefined) {
    // Another request configured it between our read and write: answer as a repeat. Or another
    // merchant registered the same address meanwhile: the unique index kept theirs.
    const [row] = await db.select().from(splitConfigs).where(eq(splitConfigs.wallet, owner));
    if (row === undefined && address !== null) await assertSplitUnowned(db, address);
    return { split: { address: row?.address ?? null, recipients: row?.recipients ?? [] }, idempotent: true };
  }
  return { split: { address: stored.address, recipients: stored.recipients }, idempotent: false };
}
