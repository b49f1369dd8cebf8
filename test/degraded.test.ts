/**
 * Degraded mode against a real PostgreSQL that the test stops and starts: writes acknowledged
 * during the outage land exactly once when the server is back, also across a restart and a
 * kill -9 of the service. The cluster is the test's own (see helpers/private-postgres.ts).
 */
import assert from 'node:assert/strict';
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { after, before, describe, test } from 'node:test';
import { eq } from 'drizzle-orm';
import type { FastifyInstance, InjectOptions } from 'fastify';
import { pino } from 'pino';
import { ensureServerBuild, startArgs } from '../scripts/ensure-server-build.ts';
import { buildApp } from '../src/app.ts';
import { loadConfig } from '../src/config.ts';
import { openDatabase, type Database } from '../src/db/client.ts';
import { receipts, receiptStatusHistory, rejectedWrites } from '../src/db/schema.ts';
import { createDeps, type Deps } from '../src/deps.ts';
import { createSubscription } from '../src/gateway/subscriptions.ts';
import { holdToContract, randomWallet, type Res } from './helpers/app.ts';
import { postgresBinDir, PrivatePostgres } from './helpers/private-postgres.ts';
import { deadline, until } from './helpers/wait.ts';

const bin = postgresBinDir();
const TRACKING = ['link_opened', 'buyer_logged_in', 'checkout_initialized'] as const;
const DEGRADED = { degraded: true, reason: 'database_unavailable' };
const EDGE_SECRET = 'edge-secret-of-the-degraded-tests';

let pg: PrivatePostgres;
let admin: Database;
const dirs: string[] = [];
const children: ChildProcess[] = [];

function tempDir(): string {
  const d = mkdtempSync(path.join(tmpdir(), 'splitline-degraded-'));
  dirs.push(d);
  return d;
}

const receiptBody = (id: string, cents = 250) => ({
  id,
  lineItems: [{ label: `Item ${id}`, priceUsd: cents / 100, qty: 2 }],
  totalUsd: (cents * 2) / 100,
});

interface Instance {
  deps: Deps;
  app: FastifyInstance;
  call(key: string | null, method: InjectOptions['method'], url: string, body?: unknown): Promise<Res>;
  close(): Promise<void>;
}

/** The app as the service builds it, on the private cluster and the given DATA_DIR (loop not started). */
async function instance(dataDir: string): Promise<Instance> {
  const config = loadConfig({
    DATA_DIR: dataDir,
    SITE_URL: 'http://pay.test',
    LOG_LEVEL: 'silent',
    DATABASE_URL: pg.url,
    PUBLIC_RATE_LIMIT_PER_MINUTE: '1000000',
    // /healthz shows its details (database, journal) to requests carrying it, as call() does.
    EDGE_SECRET,
  });
  const deps = await createDeps(config, {
    logger: pino({ level: process.env.TEST_LOG_LEVEL ?? 'silent' }),
    journalReplayIntervalMs: 200,
  });
  const app = await buildApp(deps);
  await app.ready();
  holdToContract(app);
  return {
    deps,
    app,
    async call(key, method, url, body) {
      const res = await app.inject({
        method,
        url,
        headers: { 'x-edge-secret': EDGE_SECRET, ...(key === null ? {} : { 'ocp-apim-subscription-key': key }) },
        ...(body === undefined ? {} : { payload: body as InjectOptions['payload'] }),
      });
      return { status: res.statusCode, body: res.body === '' ? res.body : res.json(), headers: res.headers };
    },
    async close() {
      await app.close();
      await deps.close();
    },
  };
}

async function newKey(wallet: string): Promise<string> {
  return (await createSubscription(admin.db, { wallet, rateLimitPerMinute: 1_000_000 })).primaryKey;
}

/** What the service acknowledged: each must be in the database exactly once afterwards. */
class Ledger {
  readonly receipts = new Map<string, string>();
  readonly statuses = new Map<string, number>();
  /** Status writes sent but not acknowledged (a crash may or may not have kept them). */
  readonly unackedStatuses = new Map<string, number>();
  readonly failures: string[] = [];
  degradedReceipts = 0;
  degradedStatuses = 0;
  refusedStatuses = 0;
  direct = 0;

  receipt(id: string, res: Res): void {
    if (res.status !== 201) {
      this.failures.push(`POST /api/receipts ${id}: ${res.status} ${JSON.stringify(res.body)}`);
      return;
    }
    this.receipts.set(id, res.body.paymentUrl);
    if (res.body.degraded === true) this.degradedReceipts++;
    else this.direct++;
  }

  status(id: string, status: string, res: Res): void {
    const k = `${id} ${status}`;
    // A receipt the journal does not hold: not journaled while the database is away, 503, nothing written.
    if (res.status === 503 && res.body.error === 'database_unavailable') {
      this.refusedStatuses++;
      return;
    }
    if (res.status !== 200 || res.body.ok !== true) {
      this.failures.push(`POST /api/receipts/status ${k}: ${res.status} ${JSON.stringify(res.body)}`);
      this.unackedStatuses.set(k, (this.unackedStatuses.get(k) ?? 0) + 1);
      return;
    }
    this.statuses.set(k, (this.statuses.get(k) ?? 0) + 1);
    if (res.body.degraded === true) this.degradedStatuses++;
    else this.direct++;
  }

  pick(n: number): string {
    const ids = [...this.receipts.keys()];
    return ids[(n * 7919) % ids.length]!;
  }
}

/** Proves every acknowledged write is stored exactly once, with the paymentUrl that was handed out. */
async function assertLanded(wallet: string, ledger: Ledger, opts: { exact: boolean }): Promise<void> {
  const rows = await admin.db.select().from(receipts).where(eq(receipts.wallet, wallet));
  const byId = new Map(rows.map((r) => [r.id, r]));
  assert.equal(byId.size, rows.length);
  for (const [id, url] of ledger.receipts) {
    const row = byId.get(id);
    assert.ok(row, `acknowledged receipt ${id} is missing`);
    assert.equal(url, `http://pay.test/pay/${id}?t=${row.payToken}`, `receipt ${id} keeps its paymentUrl`);
  }
  if (opts.exact) assert.equal(rows.length, ledger.receipts.size, 'no receipt that was not acknowledged');
  const history = await admin.db.select().from(receiptStatusHistory).where(eq(receiptStatusHistory.wallet, wallet));
  const seen = new Map<string, number>();
  for (const h of history) {
    const k = h.source === 'tracking' ? `${h.receiptId} ${h.status}` : `${h.receiptId} created`;
    // A repeated tracking status is one row that counts its repeats.
    seen.set(k, (seen.get(k) ?? 0) + (h.source === 'tracking' ? h.count : 1));
  }
  for (const id of byId.keys()) assert.equal(seen.get(`${id} created`), 1, `receipt ${id} has one creation entry`);
  for (const [k, n] of ledger.statuses) {
    const got = seen.get(k) ?? 0;
    if (opts.exact) assert.equal(got, n, `tracking status ${k} recorded once per acknowledgement`);
    else assert.ok(got >= n && got <= n + (ledger.unackedStatuses.get(k) ?? 0), `tracking status ${k}: ${got} for ${n} acknowledged`);
  }
}

const skip = bin === undefined ? 'initdb/pg_ctl not found; install PostgreSQL to run the degraded-mode tests' : false;

describe('degraded mode on a real PostgreSQL', { skip, timeout: 110_000 }, () => {
  before(async () => {
    pg = await PrivatePostgres.create(bin!);
    await pg.start();
    admin = await openDatabase({ databaseUrl: pg.url, poolSize: 2 });
  });

  after(async () => {
    for (const c of children) if (c.exitCode === null && c.signalCode === null) c.kill('SIGKILL');
    try {
      await admin?.close();
    } finally {
      await pg?.destroy();
      for (const d of dirs) rmSync(d, { recursive: true, force: true });
    }
  });

  test('writes during an outage are acknowledged, answered from the journal and replayed exactly once', { timeout: 45_000 }, async () => {
    const t = await instance(tempDir());
    t.deps.journal.start();
    let stopping = false;
    let writers: Promise<unknown> = Promise.resolve();
    try {
      const wallet = randomWallet();
      const key = await newKey(wallet);
      const ledger = new Ledger();
      for (const id of ['before-1', 'before-2', 'before-3']) ledger.receipt(id, await t.call(key, 'POST', '/api/receipts', receiptBody(id)));
      assert.deepEqual(ledger.failures, []);

      const writer = async (prefix: string) => {
        for (let i = 0; !stopping; i++) {
          const id = `${prefix}-${i}`;
          ledger.receipt(id, await t.call(key, 'POST', '/api/receipts', receiptBody(id, 100 + i)));
          const target = ledger.pick(i);
          const status = TRACKING[i % TRACKING.length]!;
          ledger.status(target, status, await t.call(null, 'POST', '/api/receipts/status', { receiptId: target, wallet, status }));
        }
      };
      writers = Promise.all([writer('a'), writer('b')]);
      await until(() => ledger.direct >= 10, 10_000, 'writes before the outage');

      await pg.stop('fast');
      await until(() => ledger.degradedReceipts >= 15 && ledger.degradedStatuses >= 15, 20_000, 'writes during the outage');

      const list = await t.call(key, 'GET', '/api/receipts');
      assert.equal(list.status, 200);
      assert.deepEqual(list.body, { receipts: [], has_more: false, ...DEGRADED });
      const health = await t.call(null, 'GET', '/healthz');
      assert.equal(health.body.database, 'unavailable');
      assert.ok(health.body.journalPending > 0);

      const journaled = [...ledger.receipts.keys()].find((id) => t.deps.journal.findReceipt(wallet, id) !== undefined)!;
      const detail = await t.call(key, 'GET', `/api/receipts/${journaled}`);
      assert.equal(detail.status, 200);
      assert.equal(detail.body.receiptId, journaled);
      assert.equal(detail.body.degraded, true);
      assert.equal(detail.body.statusHistory[0].status, 'pending');
      const [prefix, n] = journaled.split('-');
      const again = await t.call(key, 'POST', '/api/receipts', receiptBody(journaled, 100 + Number(n)));
      assert.equal(again.status, 201, `re-sent ${prefix} receipt`);
      assert.equal(again.body.paymentUrl, ledger.receipts.get(journaled));
      const conflicting = await t.call(key, 'POST', '/api/receipts', receiptBody(journaled, 9999));
      assert.equal(conflicting.status, 409);
      const invalid = await t.call(key, 'POST', '/api/receipts', { ...receiptBody('bad-total'), totalUsd: 1 });
      assert.equal(invalid.status, 400);

      await pg.start();
      const directBefore = ledger.direct;
      await until(() => ledger.direct >= directBefore + 10, 20_000, 'writes after the database came back');
      stopping = true;
      await writers;
      await deadline(t.deps.journal.whenDrained(), 20_000, `the journal to drain (pending ${t.deps.journal.pending})`);

      assert.deepEqual(ledger.failures, [], 'every write was acknowledged');
      await assertLanded(wallet, ledger, { exact: true });
      const listed = await t.call(key, 'GET', '/api/receipts?limit=200');
      assert.equal(listed.status, 200);
      assert.equal(listed.body.degraded, undefined);
      assert.equal((await t.call(null, 'GET', '/healthz')).body.journalPending, 0);
    } finally {
      stopping = true;
      await writers.catch((err: unknown) => console.error('writer failed', err));
      if (!(await pg.running())) await pg.start();
      await t.close();
    }
  });

  test('a restart while the database is down recovers the journal', { timeout: 30_000 }, async () => {
    const dataDir = tempDir();
    const first = await instance(dataDir);
    const wallet = randomWallet();
    const key = await newKey(wallet);
    const ledger = new Ledger();
    try {
      ledger.receipt('r-0', await first.call(key, 'POST', '/api/receipts', receiptBody('r-0')));
      await pg.stop('fast');
      for (let i = 1; i <= 5; i++) {
        ledger.receipt(`r-${i}`, await first.call(key, 'POST', '/api/receipts', receiptBody(`r-${i}`)));
        ledger.status(`r-${i - 1}`, 'link_opened', await first.call(null, 'POST', '/api/receipts/status', { receiptId: `r-${i - 1}`, wallet, status: 'link_opened' }));
      }
      assert.deepEqual(ledger.failures, []);
      // r-0 is in the database, not the journal: its status was refused 503 (nobody may plant
      // statuses for receipts the journal does not hold); the other four were journaled.
      assert.equal(ledger.refusedStatuses, 1);
      assert.equal(first.deps.journal.pending, 9);
    } finally {
      await first.close();
    }

    // The service opens its database at start-up, so the new instance comes up with the server.
    await pg.start();
    const second = await instance(dataDir);
    try {
      assert.equal(second.deps.journal.pending, 9, 'the journal was recovered from disk');
      second.deps.journal.start();
      await deadline(second.deps.journal.whenDrained(), 20_000, 'the journal to drain after the restart');
      await assertLanded(wallet, ledger, { exact: true });
    } finally {
      await second.close();
    }
    const third = await instance(dataDir);
    try {
      assert.equal(third.deps.journal.pending, 0, 'nothing left to replay');
    } finally {
      await third.close();
    }
  });

  test('a kill -9 of the service mid-stream loses nothing acknowledged', { timeout: 75_000 }, async () => {
    const dataDir = tempDir();
    const wallet = randomWallet();
    const key = await newKey(wallet);
    const ledger = new Ledger();

    const a = await startService(dataDir);
    const post = async (url: string, body: unknown, withKey = true): Promise<Res> => {
      const res = await fetch(`${a.base}${url}`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', 'x-edge-secret': EDGE_SECRET, ...(withKey ? { 'ocp-apim-subscription-key': key } : {}) },
        body: JSON.stringify(body),
      });
      return { status: res.status, body: await res.json(), headers: {} };
    };
    let killed = false;
    const worker = async (w: number) => {
      for (let i = 0; !killed; i++) {
        const id = `k-${w}-${i}`;
        const target = ledger.pick(i);
        const status = TRACKING[(i + w) % TRACKING.length]!;
        try {
          ledger.receipt(id, await post('/api/receipts', receiptBody(id, 100 + i)));
          ledger.status(target, status, await post('/api/receipts/status', { receiptId: target, wallet, status }, false));
        } catch (err) {
          // The process died with the request in flight: not acknowledged, so either outcome is allowed.
          const k = `${target} ${status}`;
          ledger.unackedStatuses.set(k, (ledger.unackedStatuses.get(k) ?? 0) + 1);
          if (!killed) throw err;
        }
      }
    };
    let workers: Promise<unknown> = Promise.resolve();
    try {
      // The first call caches the key, so the service still knows the caller once the server is gone.
      ledger.receipt('k-seed', await post('/api/receipts', receiptBody('k-seed')));
      await pg.stop('fast');
      workers = Promise.all([0, 1, 2, 3].map(worker));
      await until(() => ledger.degradedReceipts >= 20 && ledger.degradedStatuses >= 20, 20_000, 'acknowledged writes before the kill');
    } finally {
      killed = true;
      a.child.kill('SIGKILL');
      await workers.catch((err: unknown) => console.error('worker failed', err));
      await a.exited;
      if (!(await pg.running())) await pg.start();
    }
    assert.deepEqual(ledger.failures, []);

    const b = await startService(dataDir);
    try {
      await until(
        async () => {
          const h = (await (await fetch(`${b.base}/healthz`, { headers: { 'x-edge-secret': EDGE_SECRET } })).json()) as { database: string; journalPending: number };
          return h.database === 'up' && h.journalPending === 0;
        },
        30_000,
        'the restarted service to drain its journal',
      );
      const recovered = b.logs.find((l) => l.msg === 'journal: recovered writes waiting for the database');
      assert.ok(recovered !== undefined && Number(recovered.pending) >= ledger.degradedReceipts + ledger.degradedStatuses);
      await assertLanded(wallet, ledger, { exact: false });
    } finally {
      b.child.kill('SIGTERM');
      await b.exited;
    }
  });

  test('statuses for made-up receipts during an outage: 503 with Retry-After, nothing journaled, no rejected writes planted', async () => {
    const t = await instance(tempDir());
    try {
      const wallet = randomWallet();
      const key = await newKey(wallet);
      assert.equal((await t.call(key, 'POST', '/api/receipts', receiptBody('real-1'))).status, 201);
      await pg.stop('fast');
      let held: Res;
      try {
        const created = await t.call(key, 'POST', '/api/receipts', receiptBody('held-1'));
        assert.equal(created.status, 201);
        assert.equal(created.body.degraded, true);
        // The attacker's 60 made-up receipt ids of the victim's wallet, and one real receipt in the database.
        for (const id of [...Array.from({ length: 60 }, (_, i) => `planted-${i}`), 'real-1']) {
          const res = await t.call(null, 'POST', '/api/receipts/status', { receiptId: id, wallet, status: 'link_opened' });
          assert.equal(res.status, 503, `${id}: ${JSON.stringify(res.body)}`);
          assert.equal(res.body.error, 'database_unavailable');
          assert.ok(Number(res.headers['retry-after']) > 0, 'Retry-After: nothing happened, send it again later');
        }
        // A receipt the journal holds still takes its statuses, in order behind it.
        held = await t.call(null, 'POST', '/api/receipts/status', { receiptId: 'held-1', wallet, status: 'link_opened' });
        assert.equal(t.deps.journal.pending, 2, 'the receipt and its one status');
      } finally {
        await pg.start();
      }
      assert.equal(held.status, 200);
      assert.equal(held.body.degraded, true);
      t.deps.journal.start();
      await deadline(t.deps.journal.whenDrained(), 20_000, `the journal to drain (pending ${t.deps.journal.pending})`);
      assert.deepEqual(await admin.db.select().from(rejectedWrites).where(eq(rejectedWrites.wallet, wallet)), [], 'nothing planted');
      const history = await admin.db.select().from(receiptStatusHistory).where(eq(receiptStatusHistory.wallet, wallet));
      assert.deepEqual(history.filter((h) => h.source === 'tracking').map((h) => h.receiptId), ['held-1']);
    } finally {
      await t.close();
    }
  });
});

interface Service {
  child: ChildProcess;
  base: string;
  logs: Record<string, unknown>[];
  exited: Promise<void>;
}

/**
 * Runs the service as its own process, as production does: the compiled build with npm start's
 * arguments (built first when a source is newer; tsx would add seconds to each start).
 */
async function startService(dataDir: string): Promise<Service> {
  await ensureServerBuild({ log: () => {} });
  const child = spawn(process.execPath, startArgs(), {
    cwd: path.resolve(import.meta.dirname, '..'),
    env: {
      PATH: process.env.PATH,
      HOME: process.env.HOME,
      DATA_DIR: dataDir,
      DATABASE_URL: pg.url,
      PORT: '0',
      HOST: '127.0.0.1',
      SITE_URL: 'http://pay.test',
      LOG_LEVEL: 'info',
      PUBLIC_RATE_LIMIT_PER_MINUTE: '1000000',
      EDGE_SECRET,
    },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  children.push(child);
  const logs: Record<string, unknown>[] = [];
  let stderr = '';
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  const base = new Promise<string>((resolve, reject) => {
    let buffered = '';
    child.stdout.setEncoding('utf8').on('data', (chunk: string) => {
      buffered += chunk;
      const lines = buffered.split('\n');
      buffered = lines.pop()!;
      for (const line of lines) {
        const url = /Splitline\s+(http:\/\/\S+?)(?:\/admin\/)?(?:\s|$)/.exec(line);
        if (url) resolve(url[1]!);
        if (line.startsWith('{')) logs.push(JSON.parse(line) as Record<string, unknown>);
      }
    });
    child.stderr.setEncoding('utf8').on('data', (chunk: string) => {
      stderr += chunk;
    });
    child.once('exit', (code) => reject(new Error(`service exited (${code}) before listening: ${stderr}`)));
  });
  return { child, base: await deadline(base, 30_000, 'service start'), logs, exited };
}
