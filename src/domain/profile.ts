/**
 * The signed-in wallet's own user record: its profile and its presence heartbeat.
 */
import { eq } from 'drizzle-orm';
import type { Db } from '../db/client.ts';
import { users } from '../db/schema.ts';
import { AppError, InvalidInput } from '../lib/errors.ts';
import { isPresent, parseUserRecord, PRESENCE_WINDOW_MS } from './users.ts';

const PROFILE_FIELDS = ['displayName', 'pfpUrl', 'spacePublic', 'spaceUrl', 'domains', 'platforms', 'languages', 'platform'] as const;

/** What a heartbeat may carry besides the wallet. */
export interface HeartbeatInput {
  live?: boolean | undefined;
  spaceUrl?: string | undefined;
  platform?: string | undefined;
}

export interface ProfileView {
  wallet: string;
  displayName: string;
  pfpUrl: string | null;
  xp: number;
  live: boolean;
  spacePublic: boolean;
  spaceUrl: string | null;
  platform: string | null;
  liveSince: number | null;
  lastSeen: number | null;
  lastHeartbeat: number | null;
  domains: string[];
  platforms: string[];
  languages: string[];
}

type Row = typeof users.$inferSelect;

function view(row: Row, now: number): ProfileView {
  const { updatedAt: _u, ...rest } = row;
  return { ...rest, live: isPresent(row, now) };
}

/** Reuses the import rules for one record, with messages that name the field alone. */
function parseOne(record: Record<string, unknown>, now: number) {
  try {
    return parseUserRecord(record, 0, now);
  } catch (err) {
    if (err instanceof AppError) throw new InvalidInput(err.message.replace(/^users\[0\]\./, ''));
    throw err;
  }
}

async function current(db: Db, wallet: string): Promise<Record<string, unknown>> {
  const [row] = await db.select().from(users).where(eq(users.wallet, wallet));
  if (row === undefined) return { wallet };
  const { updatedAt: _u, ...rest } = row;
  return rest;
}

/** Writes the wallet's whole profile record (a new row, or over the stored one) and answers its view. */
async function save(db: Db, record: ReturnType<typeof parseOne>, now: number): Promise<ProfileView> {
  const [row] = await db
    .insert(users)
    .values({ ...record, updatedAt: now })
    .onConflictDoUpdate({ target: users.wallet, set: { ...record, updatedAt: now } })
    .returning();
  return view(row!, now);
}

export async function getProfile(db: Db, wallet: string, now = Date.now()): Promise<ProfileView> {
  const [row] = await db.select().from(users).where(eq(users.wallet, wallet));
  if (row !== undefined) return view(row, now);
  return view({ ...parseOne({ wallet }, now), updatedAt: now } as Row, now);
}

export async function updateProfile(db: Db, wallet: string, patch: Record<string, unknown>, now = Date.now()): Promise<ProfileView> {
  const unknown = Object.keys(patch).filter((k) => !(PROFILE_FIELDS as readonly string[]).includes(k));
  if (unknown.length > 0) throw new InvalidInput(`Unknown profile fields: ${unknown.join(', ')}`);
  const record = parseOne({ ...(await current(db, wallet)), ...patch, wallet }, now);
  return save(db, record, now);
}

/**
 * A presence heartbeat: marks the wallet seen now and, unless `live` is false, live. liveSince
 * keeps its value while heartbeats arrive within the presence window.
 */
export async function heartbeat(
  db: Db,
  wallet: string,
  input: HeartbeatInput,
  now = Date.now(),
): Promise<ProfileView> {
  const before = await current(db, wallet);
  const live = input.live ?? true;
  const last = typeof before.lastHeartbeat === 'number' ? before.lastHeartbeat : null;
  const continuing = before.live === true && last !== null && now - last <= PRESENCE_WINDOW_MS;
  const record = parseOne(
    {
      ...before,
      ...(input.spaceUrl !== undefined ? { spaceUrl: input.spaceUrl } : {}),
      ...(input.platform !== undefined ? { platform: input.platform } : {}),
      wallet,
      live,
      lastSeen: now,
      lastHeartbeat: live ? now : last,
      liveSince: live ? (continuing ? before.liveSince ?? now : now) : null,
    },
    now,
  );
  return save(db, record, now);
}
