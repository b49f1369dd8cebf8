/**
 * Users: search over the highest-XP users, the list of users live right now, and bulk import.
 * Users are not merchant data: every developer key with users:read sees the same directory.
 */
import { asc, sql, type SQL, type SQLWrapper } from 'drizzle-orm';
import type { Tx } from '../db/client.ts';
import type { UserDirectory } from './user-directory.ts';
import { users } from '../db/schema.ts';
import { InvalidInput } from '../lib/errors.ts';
import { isAddress, normalizeWallet } from './wallet.ts';

/** Presence window: a heartbeat older than this means the user has gone. */
import { PRESENCE_WINDOW_MS } from '../contract/users.ts';
export { PRESENCE_WINDOW_MS };
/**
 * Heartbeats are stamped by whichever instance received them; one slightly ahead of this
 * instance's clock still counts. A heartbeat further in the future is bad data, not presence.
 */
export const CLOCK_SKEW_MS = 5_000;
/** The live list is for a "who is on now" strip, not an export: the 200 freshest heartbeats. */
import { LIVE_LIST_CAP } from '../contract/users.ts';
export { LIVE_LIST_CAP };

import { SEARCH_LIMIT_DEFAULT, SEARCH_LIMIT_MAX, SEARCH_SCAN_DEFAULT, SEARCH_SCAN_MAX } from '../contract/users.ts';
export { SEARCH_LIMIT_DEFAULT, SEARCH_LIMIT_MAX, SEARCH_SCAN_DEFAULT, SEARCH_SCAN_MAX };

/**
 * A user as search shows it. Absent values are null, never omitted, so every field is always
 * present: pfpUrl when no picture was set, lastSeen and lastHeartbeat when never seen.
 * `live` is the presence rule's result (flag set, space public, heartbeat within the window),
 * not the raw stored flag: a user whose client crashed without clearing the flag would
 * otherwise show as live forever, and `live=true` filtering would disagree with the field.
 */
export interface UserView {
  wallet: string;
  displayName: string;
  pfpUrl: string | null;
  xp: number;
  live: boolean;
  lastSeen: number | null;
  lastHeartbeat: number | null;
  domains: string[];
  platforms: string[];
  languages: string[];
}

export interface LiveUserView {
  wallet: string;
  displayName: string;
  pfpUrl: string | null;
  spaceUrl: string | null;
  liveSince: number | null;
  lastHeartbeat: number;
  languages: string[];
  domains: string[];
  platform: string | null;
}

export interface SearchParams {
  q?: string | undefined;
  domains?: string | undefined;
  platforms?: string | undefined;
  languages?: string | undefined;
  minXp?: number | undefined;
  maxXp?: number | undefined;
  live?: boolean | undefined;
  limit?: number | undefined;
  scan?: number | undefined;
}

export interface SearchResult {
  users: UserView[];
  total: number;
}

function clamp(n: number, lo: number, hi: number): number {
  return Math.min(hi, Math.max(lo, n));
}

function numeric(value: number | undefined, field: string): number | undefined {
  if (value === undefined) return undefined;
  if (typeof value !== 'number' || Number.isNaN(value)) throw new InvalidInput(`${field} must be a number`);
  return value;
}

/** limit and scan as the spec clamps them; a fractional value is truncated first. */
export function searchWindow(params: Pick<SearchParams, 'limit' | 'scan'>): { limit: number; scan: number } {
  const rawLimit = numeric(params.limit, 'limit') ?? SEARCH_LIMIT_DEFAULT;
  const limit = clamp(Math.trunc(rawLimit), 1, SEARCH_LIMIT_MAX);
  const rawScan = numeric(params.scan, 'scan') ?? SEARCH_SCAN_DEFAULT;
  const scan = clamp(Math.trunc(rawScan), limit, SEARCH_SCAN_MAX);
  return { limit, scan };
}

/** "a, B,,c" → ["a", "b", "c"]: the comma list of a filter, compared in lower case. */
export function parseTagList(value: string | undefined): string[] {
  if (value === undefined) return [];
  const tags = value
    .split(',')
    .map((s) => s.trim().toLowerCase())
    .filter((s) => s !== '');
  return [...new Set(tags)];
}

function xpBound(value: number | undefined, field: string, round: (n: number) => number): number | undefined {
  const n = numeric(value, field);
  if (n === undefined) return undefined;
  if (n < 0) throw new InvalidInput(`${field} must be >= 0`);
  // xp is an integer, so xp >= 1.5 is xp >= 2 and xp <= 2.5 is xp <= 2.
  return Math.min(round(n), Number.MAX_SAFE_INTEGER);
}

interface PresenceColumns {
  live: SQLWrapper;
  spacePublic: SQLWrapper;
  lastHeartbeat: SQLWrapper;
}

/** The presence rule as SQL over a row source (the users table or a CTE of it). */
function presenceSql(c: PresenceColumns, now: number): SQL {
  return sql`(${c.live} and ${c.spacePublic} and ${c.lastHeartbeat} >= ${now - PRESENCE_WINDOW_MS} and ${c.lastHeartbeat} <= ${now + CLOCK_SKEW_MS})`;
}

/** The presence rule for a row already in memory; the same rule as presenceSql. */
export function isPresent(
  u: { live: boolean; spacePublic: boolean; lastHeartbeat: number | null },
  now: number,
): boolean {
  return (
    u.live &&
    u.spacePublic &&
    u.lastHeartbeat !== null &&
    u.lastHeartbeat >= now - PRESENCE_WINDOW_MS &&
    u.lastHeartbeat <= now + CLOCK_SKEW_MS
  );
}

/**
 * GET /api/users/search. The top `scan` users by XP (ties by wallet) are taken first and only
 * they are filtered: the scan bounds the work of every search, whatever the filters. Text is
 * matched case-insensitively as a plain substring (no pattern characters); tags must all be
 * present, ignoring case; presence is judged at `now`.
 */
export async function searchUsers(directory: UserDirectory, params: SearchParams, now: number): Promise<SearchResult> {
  const { limit, scan } = searchWindow(params);
  const minXp = xpBound(params.minXp, 'minXp', Math.ceil);
  const maxXp = xpBound(params.maxXp, 'maxXp', Math.floor);
  if (params.live !== undefined && typeof params.live !== 'boolean') throw new InvalidInput('live must be true or false');
  const q = params.q?.trim().toLowerCase() ?? '';
  const wanted = {
    domains: parseTagList(params.domains),
    platforms: parseTagList(params.platforms),
    languages: parseTagList(params.languages),
  };
  const hasAll = (have: Set<string>, want: string[]) => want.every((t) => have.has(t));

  const top = await directory.top();
  const found: UserView[] = [];
  let total = 0;
  for (let i = 0; i < Math.min(scan, top.length); i++) {
    const u = top[i]!;
    const { row } = u;
    if (q !== '' && !u.wallet.includes(q) && !u.displayName.includes(q)) continue;
    if (!hasAll(u.domains, wanted.domains) || !hasAll(u.platforms, wanted.platforms) || !hasAll(u.languages, wanted.languages)) {
      continue;
    }
    if ((minXp !== undefined && row.xp < minXp) || (maxXp !== undefined && row.xp > maxXp)) continue;
    const live = isPresent(row, now);
    if (params.live === true && !live) continue;
    total++;
    if (found.length < limit) {
      found.push({
        wallet: row.wallet,
        displayName: row.displayName,
        pfpUrl: row.pfpUrl,
        xp: row.xp,
        live,
        lastSeen: row.spacePublic ? row.lastSeen : utcDayOf(row.lastSeen),
        lastHeartbeat: row.spacePublic ? row.lastHeartbeat : utcDayOf(row.lastHeartbeat),
        domains: row.domains,
        platforms: row.platforms,
        languages: row.languages,
      });
    }
  }
  return { users: found, total };
}

const DAY_MS = 86_400_000;

/**
 * The start of the UTC day of a Unix ms time. A user whose space is not public shows when they
 * were last seen only to the day: polling the directory must not tell when they are online.
 */
export function utcDayOf(ms: number | null): number | null {
  return ms === null ? null : ms - (((ms % DAY_MS) + DAY_MS) % DAY_MS);
}

/** GET /api/users/live: users meeting the presence rule, freshest heartbeat first. */
export async function listLiveUsers(db: Tx, now: number): Promise<LiveUserView[]> {
  const rows = await db
    .select({
      wallet: users.wallet,
      displayName: users.displayName,
      pfpUrl: users.pfpUrl,
      spaceUrl: users.spaceUrl,
      liveSince: users.liveSince,
      lastHeartbeat: users.lastHeartbeat,
      languages: users.languages,
      domains: users.domains,
      platform: users.platform,
    })
    .from(users)
    .where(presenceSql(users, now))
    .orderBy(sql`${users.lastHeartbeat} desc nulls last`, asc(users.wallet))
    .limit(LIVE_LIST_CAP);
  // The presence rule guarantees a heartbeat; the filter keeps the type honest.
  return rows.flatMap((r) => (r.lastHeartbeat === null ? [] : [{ ...r, lastHeartbeat: r.lastHeartbeat }]));
}

// ---------------------------------------------------------------------------------------------
// Import

export const UPSERT_BATCH = 500;
const MAX_NAME = 100;
const MAX_TAG = 64;
const MAX_TAGS = 50;
const MAX_URL = 2048;

export type UserRecord = typeof users.$inferInsert;

function fail(i: number, field: string, rule: string): never {
  throw new InvalidInput(`users[${i}].${field} ${rule}`);
}

function optString(r: Record<string, unknown>, i: number, field: string, max: number): string | null {
  const v = r[field];
  if (v === undefined || v === null) return null;
  if (typeof v !== 'string' || v.length > max) fail(i, field, `must be a string of at most ${max} characters`);
  return v.trim() === '' ? null : v.trim();
}

function optUrl(r: Record<string, unknown>, i: number, field: string): string | null {
  const v = optString(r, i, field, MAX_URL);
  if (v === null) return null;
  let protocol: string;
  try {
    protocol = new URL(v).protocol;
  } catch (err) {
    fail(i, field, `must be an http(s) URL (${err instanceof Error ? err.message : 'unparseable'})`);
  }
  if (protocol !== 'http:' && protocol !== 'https:') fail(i, field, 'must be an http(s) URL');
  return v;
}

function optMs(r: Record<string, unknown>, i: number, field: string): number | null {
  const v = r[field];
  if (v === undefined || v === null) return null;
  if (typeof v !== 'number' || !Number.isSafeInteger(v) || v < 0) fail(i, field, 'must be a Unix time in ms (integer >= 0)');
  return v;
}

function optBool(r: Record<string, unknown>, i: number, field: string): boolean {
  const v = r[field];
  if (v === undefined || v === null) return false;
  if (typeof v !== 'boolean') fail(i, field, 'must be true or false');
  return v;
}

function tags(r: Record<string, unknown>, i: number, field: string): string[] {
  const v = r[field];
  if (v === undefined || v === null) return [];
  if (!Array.isArray(v) || v.length > MAX_TAGS) fail(i, field, `must be an array of at most ${MAX_TAGS} strings`);
  const out: string[] = [];
  for (const item of v as unknown[]) {
    if (typeof item !== 'string' || item.trim() === '' || item.trim().length > MAX_TAG) {
      fail(i, field, `must hold non-empty strings of at most ${MAX_TAG} characters`);
    }
    const tag = item.trim();
    if (!out.includes(tag)) out.push(tag);
  }
  return out;
}

/**
 * Parses one imported record. A record is the user's whole state: a field it leaves out takes
 * its default (null, false, 0, empty list) rather than keeping an older value, so importing
 * the same file twice always yields the same table.
 */
export function parseUserRecord(value: unknown, i: number, now: number): UserRecord {
  if (typeof value !== 'object' || value === null || Array.isArray(value)) fail(i, '', 'must be an object');
  const r = value as Record<string, unknown>;
  if (!isAddress(r.wallet)) fail(i, 'wallet', 'must be a 0x-prefixed 40-hex address');
  const xp = r.xp ?? 0;
  if (typeof xp !== 'number' || !Number.isSafeInteger(xp) || xp < 0) fail(i, 'xp', 'must be an integer >= 0');
  return {
    wallet: normalizeWallet(r.wallet),
    displayName: optString(r, i, 'displayName', MAX_NAME) ?? '',
    pfpUrl: optUrl(r, i, 'pfpUrl'),
    xp,
    live: optBool(r, i, 'live'),
    spacePublic: optBool(r, i, 'spacePublic'),
    spaceUrl: optUrl(r, i, 'spaceUrl'),
    platform: optString(r, i, 'platform', MAX_TAG),
    liveSince: optMs(r, i, 'liveSince'),
    lastSeen: optMs(r, i, 'lastSeen'),
    lastHeartbeat: optMs(r, i, 'lastHeartbeat'),
    domains: tags(r, i, 'domains'),
    platforms: tags(r, i, 'platforms'),
    languages: tags(r, i, 'languages'),
    updatedAt: now,
  };
}

/** Column list of an imported batch: the batch travels as one JSON parameter. */
const IMPORT_COLUMNS = sql.raw(
  'wallet text, display_name text, pfp_url text, xp bigint, live boolean, space_public boolean, ' +
    'space_url text, platform text, live_since bigint, last_seen bigint, last_heartbeat bigint, ' +
    'domains text[], platforms text[], languages text[], updated_at bigint',
);
const IMPORT_NAMES = sql.raw(
  'wallet, display_name, pfp_url, xp, live, space_public, space_url, platform, live_since, last_seen, ' +
    'last_heartbeat, domains, platforms, languages, updated_at',
);
const IMPORT_UPDATES = sql.raw(
  [
    'display_name', 'pfp_url', 'xp', 'live', 'space_public', 'space_url', 'platform', 'live_since',
    'last_seen', 'last_heartbeat', 'domains', 'platforms', 'languages', 'updated_at',
  ]
    .map((c) => `${c} = excluded.${c}`)
    .join(', '),
);

function toImportRow(u: UserRecord): Record<string, unknown> {
  return {
    wallet: u.wallet,
    display_name: u.displayName,
    pfp_url: u.pfpUrl,
    xp: u.xp,
    live: u.live,
    space_public: u.spacePublic,
    space_url: u.spaceUrl,
    platform: u.platform,
    live_since: u.liveSince,
    last_seen: u.lastSeen,
    last_heartbeat: u.lastHeartbeat,
    domains: u.domains,
    platforms: u.platforms,
    languages: u.languages,
    updated_at: u.updatedAt,
  };
}

/**
 * Inserts or replaces users in batches, all or nothing: every record is checked before the
 * first write, and the batches share one transaction. A wallet listed twice keeps its last
 * record (one statement cannot update the same row twice). Each batch is one statement with a
 * single JSON parameter: building a 500-row multi-VALUES insert costs more than running it.
 */
export async function upsertUsers(db: Tx, records: readonly unknown[], now: number): Promise<{ upserted: number }> {
  const byWallet = new Map<string, UserRecord>();
  records.forEach((r, i) => {
    const parsed = parseUserRecord(r, i, now);
    byWallet.delete(parsed.wallet);
    byWallet.set(parsed.wallet, parsed);
  });
  const rows = [...byWallet.values()];
  if (rows.length === 0) return { upserted: 0 };
  await db.transaction(async (tx) => {
    for (let start = 0; start < rows.length; start += UPSERT_BATCH) {
      const batch = JSON.stringify(rows.slice(start, start + UPSERT_BATCH).map(toImportRow));
      await tx.execute(sql`
        insert into ${users} (${IMPORT_NAMES})
        select ${IMPORT_NAMES} from jsonb_to_recordset(${batch}::jsonb) as r(${IMPORT_COLUMNS})
        on conflict (wallet) do update set ${IMPORT_UPDATES}`);
    }
  });
  return { upserted: rows.length };
}
