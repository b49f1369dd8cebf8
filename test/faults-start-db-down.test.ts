/**
 * A start while PostgreSQL is down (a crash during an outage must not keep the service down until
 * the database is back): the service starts, answers degraded for the keys it has seen (remembered
 * as hashes in DATA_DIR/keys-seen.json), journals receipt writes, and once PostgreSQL answers it
 * migrates, replays the journal, and every acknowledged write is stored exactly once. The cluster is
 * the test's own (helpers/private-postgres.ts); the service is a real process.
 */
import assert from 'node:assert/strict';
import { readFileSync, statSync } from 'node:fs';
import path from 'node:path';
import { describe, test } from 'node:test';
import { sql } from 'drizzle-orm';
import { pino } from 'pino';
import { openDatabase, type Database } from '../src/db/client.ts';
import { isDbDown, neverReachedServer } from '../src/lib/db-errors.ts';
import { receipts } from '../src/db/schema.ts';
import { generateKey } from '../src/gateway/keys.ts';
import { createSubscription } from '../src/gateway/subscriptions.ts';
import { freshPostgresDatabase, randomWallet } from './helpers/app.ts';
import { postgresBinDir, usePrivatePostgres } from './helpers/private-postgres.ts';
import { http, startService, TEST_EDGE_SECRET, type Service } from './helpers/service.ts';
import { until } from './helpers/wait.ts';
import { assertLanded, BULK, receiptBody, SCARCE, WriteLedger } from './helpers/write-ledger.ts';

const bin = postgresBinDir();
const skip = bin === undefined ? 'initdb/pg_ctl not found; install PostgreSQL to run the start-while-PostgreSQL-is-down test' : false;
const SITE = 'http://pay.test';
const PLATFORM = '0x000000000000000000000000000000000000beef';
const DEGRADED = { degraded: true, reason: 'database_unavailable' };

async function exitsCleanly(svc: Service): Promise<void> {
  const exit = await svc.stop();
  assert.equal(exit.code, 0, `${svc.name} shuts down cleanly:\n${svc.output().slice(-3000)}`);
}

describe('a start while PostgreSQL is down', { skip, timeout: 180_000 }, () => {
  const cluster = usePrivatePostgres('splitline-start-db-down-');

  test('a database opened while PostgreSQL is down refuses every query as unreachable until it is migrated', async () => {
    if (!(await cluster.pg.running())) await cluster.pg.start();
    const fresh = await freshPostgresDatabase(cluster.pg.url);
    await cluster.pg.stop('fast');
    const lines: { level: number; msg: string }[] = [];
    const logger = pino({ level: 'debug' }, { write: (line: string) => void lines.push(JSON.parse(line)) });
    let database: Database | undefined;
    try {
      // Without degradedStart (the CLI), the open fails at once, as before.
      await assert.rejects(openDatabase({ databaseUrl: fresh.url, poolSize: 2 }), (err: unknown) => isDbDown(err));
      database = await openDatabase({ databaseUrl: fresh.url, poolSize: 2, degradedStart: { logger } });
      assert.ok(database.degradedStart, 'opened degraded');
      assert.equal(lines.filter((l) => l.level === 40).length, 1, 'one warning');
      await assert.rejects(database.ping(), (err: unknown) => isDbDown(err));
      // A write is refused before it reaches any server: a 503 (or the journal), never an unknown outcome.
      const write = database.db.transaction(async (tx) => {
        await tx.execute(sql`select 1`);
      });
      await assert.rejects(write, (err: unknown) => isDbDown(err) && neverReachedServer(err));

      // Back, on an empty database: ping() keeps failing until the migrations have run.
      let migrated = false;
      void database.degradedStart.then(() => (migrated = true));
      await cluster.pg.start();
      // The retry timer is unref'd (it never keeps a process alive): the wait's own timer does here.
      await until(() => migrated, 30_000, 'the migrations to run once PostgreSQL answers');
      await database.ping();
      assert.deepEqual(await database.db.select({ id: receipts.id }).from(receipts), [], 'the empty database was migrated');
    } finally {
      await database?.close();
      await fresh.drop();
    }
  });

  test('starts degraded, serves the keys it has seen, and lands the journal once PostgreSQL is back', async () => {
    if (!(await cluster.pg.running())) await cluster.pg.start();
    const wallet = randomWallet();
    const key = (await createSubscription(cluster.admin.db, { wallet, rateLimitPerMinute: 1_000_000 })).primaryKey;
    // EDGE_SECRET: /healthz's details for http(), which carries it.
    const env = { DATA_DIR: cluster.dataDir, EDGE_SECRET: TEST_EDGE_SECRET, DATABASE_URL: cluster.pg.url, SITE_URL: SITE, PLATFORM_RECIPIENT_ADDRESS: PLATFORM, LOG_LEVEL: 'info' };
    const ledger = new WriteLedger();

    // A first run with PostgreSQL up: the key is used (and so seen), the stock the ledger checks exists.
    let t0 = performance.now();
    const first = await startService('first', env);
    const firstStartMs = performance.now() - t0;
    for (const item of [BULK, SCARCE]) assert.equal((await http(first.base, 'POST', '/api/inventory', { key, body: item })).status, 201);
    ledger.receipt('before-outage', await http(first.base, 'POST', '/api/receipts', { key, body: receiptBody('before-outage') }));
    assert.equal(ledger.direct, 1, 'stored directly while PostgreSQL is up');
    await exitsCleanly(first);

    const seenFile = path.join(cluster.dataDir, 'keys-seen.json');
    const assertSeenFileSafe = () => {
      const text = readFileSync(seenFile, 'utf8');
      assert.ok(!text.includes(key), 'the keys-seen file holds no plaintext key');
      assert.equal(statSync(seenFile).mode & 0o777, 0o600, 'the keys-seen file is its owner’s alone');
      assert.equal(JSON.parse(text).keys.length, 1);
    };
    assertSeenFileSafe();

    // PostgreSQL goes down; the service restarts during the outage.
    await cluster.pg.stop('fast');
    t0 = performance.now();
    const second = await startService('second', env, { timeoutMs: 60_000 });
    const degradedStartMs = performance.now() - t0;
    const warning = second.logs.find((l) => /is unreachable; starting degraded/.test(l.msg ?? ''));
    assert.ok(warning, `one warning names the degraded start:\n${second.output().slice(-3000)}`);
    assert.equal(warning.level, 40);

    const health = await http(second.base, 'GET', '/healthz');
    assert.equal(health.status, 200);
    assert.equal(health.body.database, 'unavailable');

    const list = await http(second.base, 'GET', '/api/receipts', { key });
    assert.equal(list.status, 200);
    assert.deepEqual(list.body, { receipts: [], has_more: false, ...DEGRADED });

    const created = await http(second.base, 'POST', '/api/receipts', { key, body: receiptBody('during-outage', 375) });
    assert.equal(created.status, 201, JSON.stringify(created.body));
    assert.equal(created.body.degraded, true, 'journaled');
    ledger.receipt('during-outage', created);
    const again = await http(second.base, 'POST', '/api/receipts', { key, body: receiptBody('during-outage', 375) });
    assert.equal(again.body.paymentUrl, created.body.paymentUrl, 'a retry answers the same paymentUrl from the journal');
    assert.equal((await http(second.base, 'GET', '/healthz')).body.journalPending, 1);

    // A key this service never saw: the database cannot say whether it is valid.
    const unknown = await http(second.base, 'GET', '/api/receipts', { key: generateKey() });
    assert.equal(unknown.status, 503);
    assert.equal(unknown.body.error, 'database_unavailable');

    // PostgreSQL is back: the migrations run, then the journal replays.
    await cluster.pg.start();
    const back = performance.now();
    await until(
      async () => {
        const h = await http(second.base, 'GET', '/healthz');
        return h.body.database === 'up' && h.body.journalPending === 0;
      },
      60_000,
      'the migrations to run and the journal to drain',
    );
    const drainedMs = performance.now() - back;
    assert.ok(second.logs.some((l) => /migrations ran/.test(l.msg ?? '')), 'the migrations ran once PostgreSQL answered');

    assert.deepEqual(ledger.failures, []);
    const report = await assertLanded(cluster.admin.db, wallet, ledger, SITE);
    assert.equal(report.receipts, 2, 'the receipt before the outage and the one journaled during it, each once');
    const listed = await http(second.base, 'GET', '/api/receipts', { key });
    assert.equal(listed.status, 200);
    assert.equal(listed.body.degraded, undefined);
    assert.deepEqual(listed.body.receipts.map((r: { receiptId: string }) => r.receiptId).sort(), ['before-outage', 'during-outage']);
    await exitsCleanly(second);
    assertSeenFileSafe();

    console.log(
      `started in ${Math.round(degradedStartMs)} ms with PostgreSQL down (${Math.round(firstStartMs)} ms with it up); ` +
        `PostgreSQL back to migrated and journal drained: ${Math.round(drainedMs)} ms`,
    );
  });
});
