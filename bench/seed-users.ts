/**
 * Users for the search bench, in the import shape the admin API accepts, stored through the
 * users module's own bulk import.
 */
import type { Db } from '../src/db/client.ts';
import type { Rng } from './rng.ts';

const NAMES = ['ana', 'ben', 'chloe', 'dmitri', 'emeka', 'fatima', 'gus', 'hana', 'ivan', 'julia', 'kofi', 'lena', 'mateo', 'nour', 'oscar', 'priya'];
const DOMAINS = ['gaming', 'music', 'art', 'defi', 'sports', 'education', 'comedy', 'tech'];
const PLATFORMS = ['twitch', 'youtube', 'x', 'farcaster', 'kick'];
const LANGUAGES = ['en', 'es', 'fr', 'de', 'pt', 'ja', 'ko', 'hi'];
const BATCH = 5000;

type UpsertUsers = (db: Db, records: readonly unknown[], now: number) => Promise<{ upserted: number }>;

function some<T>(rng: Rng, items: readonly T[], max: number): T[] {
  return [...new Set(Array.from({ length: 1 + rng.int(max) }, () => rng.pick(items)))];
}

function hex(rng: Rng, digits: number): string {
  return Array.from({ length: digits }, () => rng.int(16).toString(16)).join('');
}

export function userRecord(rng: Rng, i: number, now: number): Record<string, unknown> {
  // One user in twenty is live in a public space, with a fresh heartbeat.
  const live = rng.int(20) === 0;
  const heartbeat = now - rng.int(60_000);
  return {
    wallet: '0x' + hex(rng, 40),
    displayName: `${rng.pick(NAMES)}${i}`,
    pfpUrl: `https://cdn.example/pfp/${i}.png`,
    // Skewed: most users have little XP, a few have a lot.
    xp: Math.floor(100_000 / (1 + rng.int(1000))),
    live,
    spacePublic: live || rng.int(2) === 0,
    spaceUrl: live ? `https://spaces.example/${i}` : null,
    platform: live ? rng.pick(PLATFORMS) : null,
    liveSince: live ? heartbeat - rng.int(3_600_000) : null,
    lastSeen: heartbeat,
    lastHeartbeat: heartbeat,
    domains: some(rng, DOMAINS, 3),
    platforms: some(rng, PLATFORMS, 2),
    languages: some(rng, LANGUAGES, 2),
  };
}

export async function seedUsers(
  db: Db,
  upsertUsers: UpsertUsers,
  s: { count: number; rng: Rng; now: number; progress?: (done: number) => void },
): Promise<void> {
  for (let start = 0; start < s.count; start += BATCH) {
    const batch = Array.from({ length: Math.min(BATCH, s.count - start) }, (_, k) => userRecord(s.rng, start + k, s.now));
    await upsertUsers(db, batch, s.now);
    s.progress?.(start + batch.length);
  }
}
