/**
 * Opens the database: PGlite in DATA_DIR by default, PostgreSQL when DATABASE_URL is set. Both run
 * the same migrations folder and the same Drizzle queries.
 */
import { spawn } from 'node:child_process';
import { existsSync, mkdirSync, readdirSync, renameSync, rmdirSync, rmSync } from 'node:fs';
import path from 'node:path';
import { lockDataDir, type DataDirLock } from './data-dir-lock.ts';
import { fileURLToPath } from 'node:url';
import { createTableRelationsHelpers, extractTablesRelationalConfig, sql, type ExtractTablesWithRelations } from 'drizzle-orm';
import { PgDialect, type PgDatabase, type PgQueryResultHKT, type PgTransaction, type PgTransactionConfig } from 'drizzle-orm/pg-core';
import { drizzle as drizzlePg, NodePgSession, NodePgTransaction } from 'drizzle-orm/node-postgres';
import { migrate as migratePg } from 'drizzle-orm/node-postgres/migrator';
import pg from 'pg';
import type { Logger } from 'pino';
import * as schema from './schema.ts';
import { processAlive } from '../lib/process-alive.ts';
import { tightenTree } from '../lib/data-dir.ts';
import { CommitOutcomeUnknown, DatabaseUnavailable } from '../lib/errors.ts';
import { isConnectionError } from '../lib/db-errors.ts';

export type Schema = typeof schema;
export type Db = PgDatabase<PgQueryResultHKT, Schema>;
/** A transaction handle or the database itself: repositories accept either. */
export type Tx = Parameters<Parameters<Db['transaction']>[0]>[0] | Db;

export interface Database {
  db: Db;
  kind: 'pglite' | 'postgres';
  /** A short description safe to log (no credentials). */
  describe: string;
  ping(): Promise<void>;
  close(): Promise<void>;
  /**
   * Set when PostgreSQL could not be reached at open (OpenOptions.degradedStart): resolves once it
   * answered and the migrations ran. Until then every query fails as a connection error.
   */
  degradedStart?: Promise<void>;
}

export const MIGRATIONS_DIR = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../../migrations');

export interface OpenOptions {
  databaseUrl?: string | undefined;
  /** PGlite location: a directory, or 'memory://' for a throwaway database. */
  dataDir?: string;
  /** Connections in the PostgreSQL pool. */
  poolSize?: number;
  /** A PostgreSQL statement unanswered this long fails (DB_QUERY_TIMEOUT_MS; 15 s by default). */
  queryTimeoutMs?: number;
  /** Called before a new embedded database is created (the first start in a DATA_DIR takes a few seconds). */
  onCreate?: (location: string) => void;
  /**
   * PostgreSQL only. Set by the server: a server that cannot be reached at open does not fail the
   * open (see openPostgres). Unset, as for the CLI, the open fails at once.
   */
  degradedStart?: { logger: Logger };
}

export async function openDatabase(opts: OpenOptions): Promise<Database> {
  return opts.databaseUrl ? openPostgres(opts.databaseUrl, opts.poolSize ?? 20, opts.queryTimeoutMs ?? 15_000, opts.degradedStart) : openPglite(opts.dataDir ?? 'memory://', opts.onCreate);
}

async function openPglite(dataDir: string, onCreate?: (location: string) => void): Promise<Database> {
  const location = dataDir === 'memory://' ? dataDir : path.resolve(dataDir, 'pglite');
  if (location !== 'memory://') mkdirSync(path.resolve(dataDir), { recursive: true, mode: 0o700 });
  const lock = location === 'memory://' ? undefined : lockDataDir(path.resolve(dataDir));
  try {
    return await openPgliteAt(location, lock, onCreate);
  } catch (err) {
    lock?.release();
    throw err;
  }
}

async function openPgliteAt(location: string, lock: DataDirLock | undefined, onCreate?: (location: string) => void): Promise<Database> {
  if (location !== 'memory://' && !existsSync(path.join(location, 'PG_VERSION'))) {
    onCreate?.(location);
    await createPglite(location);
  }
  // Loaded only for the embedded database: PGlite's WASM build costs memory a PostgreSQL deployment never uses.
  const [{ PGlite }, { drizzle: drizzlePglite }, { migrate: migratePglite }] = await Promise.all([
    import('@electric-sql/pglite'),
    import('drizzle-orm/pglite'),
    import('drizzle-orm/pglite/migrator'),
  ]);
  const client = await PGlite.create(location === 'memory://' ? undefined : location);
  const db = drizzlePglite(client, { schema }) as unknown as Db;
  await migratePglite(db as never, { migrationsFolder: MIGRATIONS_DIR });
  // PGlite writes some files with modes of its own, whatever the umask: its initial database
  // (0666) and, at every start, the relation cache files (0644). DATA_DIR is the user's alone.
  if (location !== 'memory://') tightenTree(location);
  return {
    db,
    kind: 'pglite',
    describe: location === 'memory://' ? 'PGlite (in memory)' : `PGlite (${location})`,
    ping: async () => {
      await client.query('select 1');
    },
    close: async () => {
      await client.close();
      lock?.release();
    },
  };
}

/**
 * Creates the embedded database in `location` through src/db/pglite-create.ts in a child process,
 * so the memory PGlite's initdb takes is returned when that process exits (see there). The child
 * builds a sibling directory that is renamed into place once complete: a creation cut off half-way
 * leaves no half-made database behind, and the next start begins again.
 */
async function createPglite(location: string): Promise<void> {
  if (existsSync(location) && readdirSync(location).length > 0) {
    throw new Error(`${location} is not empty but holds no PGlite database (no PG_VERSION); move it away or point DATA_DIR elsewhere`);
  }
  mkdirSync(path.dirname(location), { recursive: true });
  const building = `${location}.creating-${process.pid}`;
  removeAbandonedCreations(location);
  // From the sources (tests, tsx) the child runs through tsx as well; the build runs plain JavaScript.
  const self = import.meta.url;
  const script = fileURLToPath(new URL(`./pglite-create${path.extname(fileURLToPath(self))}`, self));
  const loader = script.endsWith('.ts') ? ['--import', import.meta.resolve('tsx')] : [];
  const child = spawn(process.execPath, [...loader, script, building, MIGRATIONS_DIR], { stdio: ['ignore', 'ignore', 'pipe'] });
  let stderr = '';
  child.stderr.setEncoding('utf8').on('data', (d: string) => (stderr = (stderr + d).slice(-4000)));
  const code = await new Promise<number | null>((resolve, reject) => {
    child.once('error', reject);
    child.once('close', resolve);
  });
  if (code !== 0) {
    rmSync(building, { recursive: true, force: true });
    throw new Error(`creating the embedded database in ${location} failed (exit ${code}): ${stderr.trim()}`);
  }
  if (existsSync(location)) rmdirSync(location);
  renameSync(building, location);
}

/** Removes the sibling directories of creations whose process has gone (killed half-way). */
function removeAbandonedCreations(location: string): void {
  const prefix = `${path.basename(location)}.creating-`;
  for (const name of readdirSync(path.dirname(location))) {
    if (!name.startsWith(prefix)) continue;
    const pid = Number(name.slice(prefix.length));
    if (pid !== process.pid && processAlive(pid)) continue;
    rmSync(path.join(path.dirname(location), name), { recursive: true, force: true });
  }
}

async function openPostgres(url: string, max: number, queryTimeoutMs: number, degradedStart?: { logger: Logger }): Promise<Database> {
  const pool = new GatedPool({
    connectionString: url,
    max,
    connectionTimeoutMillis: 3000,
    idleTimeoutMillis: 30_000,
    // A statement that hangs is treated as an outage rather than holding a request forever.
    query_timeout: queryTimeoutMs,
  });
  // An idle client losing its connection (server restart) must not crash the process.
  pool.on('error', () => undefined);
  // Nor may a checked-out one (inside a transaction): its query in flight fails with the same error,
  // which the caller sees, and the pool drops the client on release as no longer queryable.
  pool.on('connect', (client) => client.on('error', () => undefined));
  const db = drizzlePg(pool, { schema }) as unknown as Db;
  db.transaction = releasingTransaction(pool);
  const u = new URL(url);
  const where = `${u.hostname}:${u.port || 5432}`;
  let retry: MigrationRetry | undefined;
  try {
    await migrateExclusively(url);
  } catch (err) {
    if (degradedStart === undefined || !isConnectionError(err)) throw err;
    retry = startDegraded(pool, url, where, degradedStart.logger, err);
  }
  return {
    db,
    kind: 'postgres',
    describe: `PostgreSQL (${where}${u.pathname})`,
    // Through the pool, so it fails as a connection error until the migrations have run after a
    // degraded start: the journal's replay loop waits on it.
    ping: async () => {
      await pool.query('select 1');
    },
    close: async () => {
      await retry?.stop();
      await pool.end();
    },
    ...(retry === undefined ? {} : { degradedStart: retry.migrated }),
  };
}

/**
 * A pool that refuses checkouts while `refusal` is set, as a PostgreSQL server still starting up
 * does (57P03, a connection error): after a degraded start no query meets a schema older than the
 * code before the migrations have run. pg's `query()` checks out through `connect()` too.
 */
class GatedPool extends pg.Pool {
  refusal: (() => Error) | undefined;

  override connect(): Promise<pg.PoolClient>;
  override connect(callback: (err: Error | undefined, client: pg.PoolClient | undefined, done: (release?: unknown) => void) => void): void;
  override connect(
    callback?: (err: Error | undefined, client: pg.PoolClient | undefined, done: (release?: unknown) => void) => void,
  ): Promise<pg.PoolClient> | void {
    if (this.refusal !== undefined) {
      const err = this.refusal();
      if (callback === undefined) return Promise.reject(err);
      process.nextTick(() => callback(err, undefined, () => undefined));
      return;
    }
    return callback === undefined ? super.connect() : super.connect(callback);
  }
}

/** What every query meets after a degraded start until the migrations have run. */
class NotMigratedYet extends Error {
  readonly code = '57P03';
  constructor(where: string, cause: unknown) {
    super(`PostgreSQL at ${where} has not answered since the service started; queries wait for it and its migrations`, { cause });
  }
}

interface MigrationRetry {
  /** Resolves once the migrations have run and the pool is open. */
  migrated: Promise<void>;
  /** Ends the loop, waiting for an attempt under way. */
  stop(): Promise<void>;
}

/** The longest wait between two attempts: a refused connection costs the server nothing, and this bounds how long the service stays degraded once it is back. */
const MAX_MIGRATION_RETRY_MS = 5_000;

/**
 * A start while PostgreSQL is unreachable (a crash during an outage must not keep the service down
 * until the database is back): the pool refuses every query as a connection error, so reads answer
 * degraded, receipt writes go to the journal and its replay loop (which waits on ping()) holds back.
 * The migrations are tried again, 1 s after the start and doubling to 5 s between attempts, until
 * they have run; then the pool opens. The timer never keeps the process alive; close() ends it.
 */
function startDegraded(pool: GatedPool, url: string, where: string, logger: Logger, first: unknown): MigrationRetry {
  let cause = first;
  pool.refusal = () => new NotMigratedYet(where, cause);
  logger.warn(
    { cause: errorText(first) },
    `PostgreSQL at ${where} is unreachable; starting degraded: reads answer degraded, receipt writes go to the journal; migrations run when it answers`,
  );
  let delay = 1_000;
  let timer: NodeJS.Timeout | undefined;
  let attempt: Promise<void> | undefined;
  let stopped = false;
  let opened: () => void = () => undefined;
  const migrated = new Promise<void>((resolve) => (opened = resolve));
  const tryNow = () => {
    attempt = migrateExclusively(url)
      .then(
        () => {
          pool.refusal = undefined;
          logger.info(`PostgreSQL at ${where} answers and its migrations ran; leaving the degraded start`);
          opened();
        },
        (err: unknown) => {
          if (isConnectionError(err)) {
            cause = err;
            logger.debug({ cause: errorText(err), retryInMs: delay }, `PostgreSQL at ${where} still unreachable`);
          } else {
            logger.error({ err }, `PostgreSQL at ${where} answers but migrating it failed; still degraded, retrying`);
          }
          schedule();
        },
      )
      .finally(() => {
        attempt = undefined;
      });
  };
  const schedule = () => {
    if (stopped) return;
    timer = setTimeout(tryNow, delay);
    timer.unref();
    delay = Math.min(delay * 2, MAX_MIGRATION_RETRY_MS);
  };
  schedule();
  return {
    migrated,
    async stop() {
      stopped = true;
      clearTimeout(timer);
      await attempt;
    },
  };
}

/** An error's code and message for a log line (a refused connection's AggregateError has no message). */
function errorText(err: unknown): string {
  if (!(err instanceof Error)) return String(err);
  const code = (err as { code?: unknown }).code;
  return [typeof code === 'string' ? code : '', err.message].filter((t) => t !== '').join(': ');
}

/**
 * Runs a transaction on a client checked out here and always released, destroyed when its
 * connection failed. BEGIN, COMMIT and ROLLBACK are sent here rather than by drizzle's
 * `transaction()`, which sends ROLLBACK after any failure on the same connection: after a COMMIT
 * left unanswered (its query timeout, a connection cut) that ROLLBACK would queue behind a COMMIT
 * the server may still be running and wait out a whole query timeout of its own, doubling the
 * time to the 500. Here a statement that failed for want of an answer is never followed by
 * another on its connection: the client is released with the error, which makes the pool end it
 * (and pg cuts at once a connection with a statement still in flight), and the server, ending the
 * session, ends the transaction with it if it was not committed. The handle passed to `run` is
 * drizzle's own, so savepoints (`tx.transaction`) and `tx.rollback()` work as they do under drizzle.
 */
function releasingTransaction(pool: pg.Pool): Db['transaction'] {
  const dialect = new PgDialect();
  const tables = extractTablesRelationalConfig<ExtractTablesWithRelations<Schema>>(schema, createTableRelationsHelpers);
  const relations = { fullSchema: schema, schema: tables.tables, tableNamesMap: tables.tableNamesMap };
  // One handle per pooled connection, reused by each transaction on it: it holds no state of its
  // own, and statements prepared for a handle (src/db/prepared.ts perDatabase) are then built once
  // per connection rather than once per transaction.
  const handles = new WeakMap<pg.PoolClient, NodePgTransaction<Schema, ExtractTablesWithRelations<Schema>>>();
  return async (run, config) => {
    const client = await pool.connect();
    let tx = handles.get(client);
    if (tx === undefined) {
      tx = new NodePgTransaction<Schema, ExtractTablesWithRelations<Schema>>(dialect, new NodePgSession(client, dialect, relations), relations);
      handles.set(client, tx);
    }
    let committing = false;
    let destroy: Error | undefined;
    try {
      await tx.execute(sql.raw(beginStatement(config)));
      let result: Awaited<ReturnType<typeof run>>;
      try {
        result = await run(tx);
      } catch (err) {
        if (!isConnectionError(err)) destroy = await rollBack(tx);
        throw err;
      }
      committing = true;
      // A COMMIT the server refuses (a deferred constraint, a serialization failure) has ended
      // the transaction, rolled back: that refusal is the answer, and the connection stays usable.
      await tx.execute(sql`commit`);
      return result;
    } catch (err) {
      if (!isConnectionError(err)) throw err;
      destroy = err as Error;
      // Before COMMIT was sent, a lost connection rolls the transaction back: nothing happened.
      // After, nobody can say whether it landed (a synchronous standby that never answers, a
      // server stopped mid-commit): the caller must not promise a retry that could repeat it.
      throw committing ? new CommitOutcomeUnknown(err) : new DatabaseUnavailable(err);
    } finally {
      client.release(destroy);
    }
  };
}

/** BEGIN with the transaction's settings, as drizzle words them. */
function beginStatement(config: PgTransactionConfig | undefined): string {
  const words = ['begin'];
  if (config?.isolationLevel) words.push(`isolation level ${config.isolationLevel}`);
  if (config?.accessMode) words.push(config.accessMode);
  if (typeof config?.deferrable === 'boolean') words.push(config.deferrable ? 'deferrable' : 'not deferrable');
  return words.join(' ');
}

/**
 * ROLLBACK after the transaction failed; what it failed with, if it did. The transaction's own
 * error stays the answer: a connection whose ROLLBACK failed is destroyed, which ends the
 * transaction on the server as surely.
 */
async function rollBack(tx: PgTransaction<PgQueryResultHKT, Schema, ExtractTablesWithRelations<Schema>>): Promise<Error | undefined> {
  try {
    await tx.execute(sql`rollback`);
    return undefined;
  } catch (err) {
    return err instanceof Error ? err : new Error(String(err));
  }
}

/** Any fixed number: the key of the advisory lock that migrations run under. */
const MIGRATION_LOCK = 7_361_626_918;

/**
 * Instances starting together on an empty database would each run the migrations, and all but one
 * would fail on "already exists". They take turns under a session advisory lock, held on a
 * connection of its own that also runs the migrations (not the pool's, which refuses queries
 * until they have run after a degraded start); the later ones then find nothing left to do.
 * Ending that session releases the lock, even when migrating failed.
 */
async function migrateExclusively(url: string): Promise<void> {
  const lock = new pg.Client({ connectionString: url, connectionTimeoutMillis: 3000 });
  // A connection lost mid-way fails the query in flight, which the caller sees; the event must not crash.
  lock.on('error', () => undefined);
  await lock.connect();
  try {
    await lock.query('select pg_advisory_lock($1)', [MIGRATION_LOCK]);
    await migratePg(drizzlePg(lock, { schema }), { migrationsFolder: MIGRATIONS_DIR });
  } finally {
    await lock.end();
  }
}
