/**
 * The admin's split set-up (POST /api/split/deploy): idempotent, with the platform's share
 * enforced. The first call stores the configuration; later calls return what is stored.
 */
import { eq } from 'drizzle-orm';
import type { Db } from '../db/client.ts';
import { splitConfigs, splitVersions, type SplitRecipient } from '../db/schema.ts';
import { purgeDailyCounters, takeSlot } from '../db/counters.ts';
import { Conflict, Forbidden, InvalidInput, RateLimited } from '../lib/errors.ts';
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
  /** Server-side deployments the platform pays for in one UTC day, all merchants together. */
  deploysPerDay?: number;
}

/**
 * Who asks for a server-paid deployment (the route knows): where the request comes from and
 * whether the platform pays for this wallet at all.
 */
export interface DeployCaller {
  /** The client's budget address (src/gateway/client-address.ts): an IPv4 address or an IPv6 /64. */
  source: string;
  /** Only approved wallets get server-paid deployments (SPLIT_DEPLOYS_APPROVED_ONLY). */
  approvedOnly: boolean;
  /** Whether the platform approved this wallet; asked only when the server would deploy. */
  approved(): Promise<boolean>;
}

/** A wallet the platform has not approved asks the server to pay for its split. */
export class DeployNotApproved extends Forbidden {
  constructor() {
    super(
      'The platform pays for split deployments only for merchants it approved (a superadmin grants the merchant role); ' +
        'deploy the PaymentSplitter from your own wallet and send its splitAddress with the same recipients',
    );
  }
}

/**
 * The share of the platform's daily budget one client address (an IPv6 /64) may spend: a tenth,
 * at least one, so no single source, however many wallets it signs in with, takes the whole day.
 */
export function deploysPerSourcePerDay(platformPerDay: number): number {
  return Math.max(1, Math.ceil(platformPerDay / 10));
}
const SOURCE_COUNTER_PREFIX = 'source:';

/**
 * Server-side deployments one merchant wallet may cause in a UTC day. A wallet's split is set up
 * once, so only concurrent first calls or failed attempts come near it; the platform's own daily
 * budget (SPLIT_DEPLOYS_PER_DAY) bounds what many new wallets together can spend.
 */
export const MAX_SPLIT_DEPLOYS_PER_WALLET_PER_DAY = 3;
const DEPLOYS_COUNTER = 'split_deploys:';
/** The usage_counters wallet of the platform-wide counters. */
export const PLATFORM_COUNTER_WALLET = '*';

const dayOf = (now: number) => new Date(now).toISOString().slice(0, 10);

/** Deletes the deployment counters of past days (the purge runs it). */
export function purgeDeployCounters(db: Db, now = Date.now()): Promise<number> {
  return purgeDailyCounters(db, DEPLOYS_COUNTER, dayOf(now));
}

/** Thrown inside reserveDeployment's transaction to roll the slots already taken back. */
class DeployBudgetSpent extends Error {}

/**
 * Takes a deployment slot of the wallet, of its client address (when known) and of the platform
 * for today, or refuses with 429 until the next UTC day: the server pays the gas of every
 * deployment. A deployment that fails keeps its slots, since its transaction may have cost gas
 * all the same. A refusal gives back the slots taken before it.
 */
async function reserveDeployment(db: Db, wallet: string, now: number, platformPerDay: number, source: string | undefined): Promise<void> {
  const name = `${DEPLOYS_COUNTER}${dayOf(now)}`;
  const budgets: [string, number, string][] = [
    [wallet, MAX_SPLIT_DEPLOYS_PER_WALLET_PER_DAY, `This wallet has had ${MAX_SPLIT_DEPLOYS_PER_WALLET_PER_DAY} split contracts deployed for it today`],
    ...(source === undefined
      ? []
      : [[`${SOURCE_COUNTER_PREFIX}${source}`, deploysPerSourcePerDay(platformPerDay), `Your network address (${source}) has used its share of today's server-side split deployments`] as [string, number, string]]),
    [PLATFORM_COUNTER_WALLET, platformPerDay, 'The platform has spent its budget of server-side split deployments for today'],
  ];
  const refusal = await db
    .transaction(async (tx) => {
      for (const [counter, cap, why] of budgets) {
        if (!(await takeSlot(tx, counter, name, cap))) throw new DeployBudgetSpent(why);
      }
    })
    .then(
      () => null,
      (err: unknown) => {
        if (err instanceof DeployBudgetSpent) return err.message;
        throw err;
      },
    );
  if (refusal !== null) {
    const tomorrow = Date.parse(`${dayOf(now)}T00:00:00Z`) + 86_400_000;
    throw new RateLimited(tomorrow, `${refusal}; retry after resetAt, or deploy the split from your own wallet and pass splitAddress`);
  }
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

/**
 * A split contract belongs to one merchant and one version: an address any merchant's split ever
 * had (split_versions keeps them all) is refused with 409.
 */
async function assertSplitUnowned(db: Db, address: string): Promise<void> {
  const [taken] = await db.select({ wallet: splitVersions.wallet }).from(splitVersions).where(eq(splitVersions.address, address));
  if (taken !== undefined) throw new Conflict('This split contract is already registered (by another merchant, or as an earlier version of this split)');
}

/**
 * The contract for new recipients: a given splitAddress checked against the chain, or one the
 * service deploys when it can (approved wallets, within the daily budgets); null when neither.
 * Shared by the first set-up and new versions (src/domain/split-versions.ts).
 */
export async function splitContractFor(
  db: Db,
  owner: string,
  splitAddress: unknown,
  recipients: readonly SplitRecipient[],
  now: number,
  chain?: SplitChain,
  caller?: DeployCaller,
): Promise<string | null> {
  let address = typeof splitAddress === 'string' ? normalizeWallet(splitAddress) : null;
  if (address !== null) await assertSplitUnowned(db, address);
  if (address !== null && chain !== undefined) {
    const match = await chain.verify(address, recipients);
    if (!match.ok) throw new InvalidInput(`splitAddress does not match the recipients (${match.reason}): ${match.message}`);
  } else if (address === null && chain?.deploy !== undefined) {
    // Two concurrent calls may both deploy; the write keeps one and the other contract is simply never used.
    if (caller?.approvedOnly === true && !(await caller.approved())) throw new DeployNotApproved();
    await reserveDeployment(db, owner, now, chain.deploysPerDay ?? Number.MAX_SAFE_INTEGER, caller?.source);
    address = normalizeWallet(await chain.deploy(recipients));
  }
  return address;
}

/** Checks a splitAddress's shape (the chain check comes later, in splitContractFor). */
export function checkSplitAddress(value: unknown): void {
  if (value !== undefined && value !== null && !isAddress(value)) {
    throw new InvalidInput('splitAddress must be a 0x-prefixed 40-hex contract address');
  }
}

export async function setUpSplit(
  db: Db,
  wallet: string,
  input: SplitSetupInput,
  platform: PlatformShare,
  now = Date.now(),
  chain?: SplitChain,
  caller?: DeployCaller,
): Promise<SplitSetupResult> {
  const owner = normalizeWallet(wallet);
  const [existing] = await db.select().from(splitConfigs).where(eq(splitConfigs.wallet, owner));
  if (existing !== undefined) {
    return { split: { address: existing.address, recipients: existing.recipients, version: existing.version }, idempotent: true };
  }
  checkSplitAddress(input.splitAddress);
  if (input.recipients === undefined) throw new InvalidInput('recipients are required to configure a split');
  const recipients = checkRecipients(input.recipients, platform);
  const address = await splitContractFor(db, owner, input.splitAddress, recipients, now, chain, caller);
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
    return { split: { address: row?.address ?? null, recipients: row?.recipients ?? [], version: row?.version ?? null }, idempotent: true };
  }
  return { split: { address: stored.address, recipients: stored.recipients, version: stored.version }, idempotent: false };
}
