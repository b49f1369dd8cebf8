/**
 * The users directory as searches read it: a snapshot of the top users by XP, per app (src/deps.ts)
 * with its own clock. Writes made through the directory mark it stale at once; writes made by
 * another instance or the CLI are seen within SEARCH_SNAPSHOT_MAX_AGE_MS. The search rules are
 * src/domain/users.ts's.
 */
import { asc, sql } from 'drizzle-orm';
import { heartbeat, updateProfile, type HeartbeatInput, type ProfileView } from './profile.ts';
import { upsertUsers, type UserView } from './users.ts';
import type { Db } from '../db/client.ts';
import { perDatabase } from '../db/prepared.ts';
import { users } from '../db/schema.ts';
import { SEARCH_SCAN_MAX } from '../contract/users.ts';

/**
 * How old the top-users snapshot that searches read may be. Writes made through this process
 * are seen at once (they mark the snapshot stale); writes made by another instance or the CLI
 * within this time.
 */
export const SEARCH_SNAPSHOT_MAX_AGE_MS = 500;

/** A scanned user with its text fields lower-cased once for matching. */
export interface Scanned {
  row: Omit<UserView, 'live'> & { live: boolean; spacePublic: boolean };
  wallet: string;
  displayName: string;
  domains: Set<string>;
  platforms: Set<string>;
  languages: Set<string>;
}

/** The statement of the top users by XP, prepared by each UserDirectory for its handle. */
const topUsersStatement = (db: Db) =>
  db
    .select({
      wallet: users.wallet,
      displayName: users.displayName,
      pfpUrl: users.pfpUrl,
      xp: users.xp,
      live: users.live,
      spacePublic: users.spacePublic,
      lastSeen: users.lastSeen,
      lastHeartbeat: users.lastHeartbeat,
      domains: users.domains,
      platforms: users.platforms,
      languages: users.languages,
    })
    .from(users)
    // NULLS LAST matches users_xp_idx; without it the planner sorts the whole table.
    .orderBy(sql`${users.xp} desc nulls last`, asc(users.wallet))
    .limit(SEARCH_SCAN_MAX)
    .prepare('users_top');

const lowerSet = (values: string[]) => new Set(values.map((v) => v.toLowerCase()));

/**
 * The top SEARCH_SCAN_MAX users by XP, the only users any search can return: read once and
 * shared by every search until a write or SEARCH_SNAPSHOT_MAX_AGE_MS makes it stale, so a
 * search costs a filter over at most a thousand rows in memory instead of a scan of them in
 * PostgreSQL. Concurrent searches share one refresh.
 */
export class UserDirectory {
  readonly #topUsers = perDatabase(topUsersStatement);
  private rows: Scanned[] | undefined;
  private takenAt = 0;
  private version = -1;
  /** Bumped after every write to users made through this directory: a snapshot taken before it is stale. */
  private usersVersion = 0;
  private loading: { version: number; rows: Promise<Scanned[]> } | undefined;
  private readonly now: () => number;
  private readonly maxAgeMs: number;

  constructor(
    private readonly db: Db,
    opts: { now?: () => number; maxAgeMs?: number } = {},
  ) {
    this.now = opts.now ?? Date.now;
    this.maxAgeMs = opts.maxAgeMs ?? SEARCH_SNAPSHOT_MAX_AGE_MS;
  }

  /**
   * Marks the snapshot stale: the next search reads the users again. The write methods below call
   * it; anything else that writes users in this process (a test seeding rows by SQL) says so here.
   */
  changed(): void {
    this.usersVersion++;
  }

  /** A bulk import (POST /api/admin/users), seen by the next search. */
  async upsert(records: readonly unknown[], now = this.now()): Promise<{ upserted: number }> {
    try {
      return await upsertUsers(this.db, records, now);
    } finally {
      this.changed();
    }
  }

  /** PUT /api/users/me, seen by the next search. */
  async updateProfile(wallet: string, patch: Record<string, unknown>, now = this.now()): Promise<ProfileView> {
    try {
      return await updateProfile(this.db, wallet, patch, now);
    } finally {
      this.changed();
    }
  }

  /** POST /api/users/heartbeat, seen by the next search. */
  async heartbeat(wallet: string, input: HeartbeatInput, now = this.now()): Promise<ProfileView> {
    try {
      return await heartbeat(this.db, wallet, input, now);
    } finally {
      this.changed();
    }
  }

  /** The top users for a search: the snapshot, or a fresh read when it is stale. */
  top(): Promise<Scanned[]> {
    const usersVersion = this.usersVersion;
    if (this.rows !== undefined && this.version === usersVersion && this.now() - this.takenAt < this.maxAgeMs) {
      return Promise.resolve(this.rows);
    }
    // A refresh started before the latest write might miss it: only a later one will do.
    if (this.loading === undefined || this.loading.version !== usersVersion) {
      const version = usersVersion;
      const loading = { version, rows: this.load(version) };
      this.loading = loading;
      void loading.rows.then(
        () => this.loading === loading && (this.loading = undefined),
        () => this.loading === loading && (this.loading = undefined),
      );
    }
    return this.loading.rows;
  }

  private async load(version: number): Promise<Scanned[]> {
    const takenAt = this.now();
    const rows = (await this.#topUsers(this.db).execute()).map(
      (row): Scanned => ({
        row,
        wallet: row.wallet.toLowerCase(),
        displayName: row.displayName.toLowerCase(),
        domains: lowerSet(row.domains),
        platforms: lowerSet(row.platforms),
        languages: lowerSet(row.languages),
      }),
    );
    if (version >= this.version) {
      this.rows = rows;
      this.takenAt = takenAt;
      this.version = version;
    }
    return rows;
  }
}
