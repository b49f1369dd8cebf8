/**
 * Graceful shutdown of a real server process (src/main.ts): SIGTERM arrives while many large list
 * reads are in flight. Every request the server had taken gets its complete answer, the listening
 * socket closes at once (new connections are refused while the old ones drain), and the process
 * exits 0 well inside its 15 s limit. Embedded defaults (PGlite in DATA_DIR, the dev chain), or a
 * fresh PostgreSQL database with DATABASE_URL set.
 *
 * "Taken" is the server's view: a request it has read. PGlite runs each query synchronously, so
 * with the embedded database the server reads and serves one request after another; requests still
 * unread on their connection at SIGTERM are closed unanswered (ECONNRESET) or answered 503 by
 * Fastify's closing hook. The test tells them apart by correlation id: the server logs every request
 * it answered (LOG_LEVEL=debug), and none it read may end without a complete answer.
 *
 * One request is held open on purpose: a receipt creation whose headers the server read before
 * SIGTERM but whose body the test sends only once it has seen a new connection refused. The server
 * must wait for it, so the window between "listener closed" and "process gone" is the test's to
 * end, however fast the other reads drain.
 */
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { Agent, request } from 'node:http';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { after, describe, test } from 'node:test';
import { openDatabase } from '../src/db/client.ts';
import { ReceiptStore } from '../src/db/receipt-store.ts';
import { createReceipt } from '../src/domain/receipts.ts';
import { createSubscription } from '../src/gateway/subscriptions.ts';
import { freshPostgresDatabase, randomWallet } from './helpers/app.ts';
import { startService, stopAllServices } from './helpers/service.ts';
import { sleep } from './helpers/wait.ts';

const RECEIPTS = 120;
const LINES = 40;
const IN_FLIGHT = 40;
const cleanups: (() => Promise<void>)[] = [];

after(async () => {
  await stopAllServices();
  for (const c of cleanups.reverse()) await c();
});

interface Outcome {
  status?: number;
  receipts?: number;
  error?: string;
  at: number;
}

/** One GET over its own connection; the body is read to the end and parsed. */
function get(base: string, pathAndQuery: string, key: string, agent: Agent, correlationId?: string): Promise<Outcome> {
  return new Promise((resolve) => {
    const headers = { 'ocp-apim-subscription-key': key, ...(correlationId === undefined ? {} : { 'x-correlation-id': correlationId }) };
    const req = request(`${base}${pathAndQuery}`, { headers, agent }, (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (c: Buffer) => chunks.push(c));
      res.on('error', (err) => resolve({ status: res.statusCode, error: `body cut: ${err.message}`, at: Date.now() }));
      res.on('end', () => {
        const text = Buffer.concat(chunks).toString('utf8');
        try {
          const body = JSON.parse(text) as { receipts?: unknown[] };
          resolve({ status: res.statusCode, receipts: body.receipts?.length, at: Date.now() });
        } catch (err) {
          resolve({ status: res.statusCode, error: `incomplete body (${text.length} bytes): ${(err as Error).message}`, at: Date.now() });
        }
      });
    });
    req.on('error', (err: NodeJS.ErrnoException) => resolve({ error: err.code ?? err.message, at: Date.now() }));
    req.end();
  });
}

/**
 * A receipt creation sent in two parts: the headers and half the body now, the rest on `finish()`.
 * Until then the server holds a request it has read and cannot answer. `sent` settles once the
 * first part is on the wire.
 */
function heldCreate(base: string, key: string, correlationId: string): { sent: Promise<void>; finish(): Promise<Outcome> } {
  const body = Buffer.from(JSON.stringify({ id: correlationId, lineItems: [{ label: 'Held', priceUsd: 1.5, qty: 2 }], totalUsd: 3 }));
  const half = Math.floor(body.length / 2);
  let resolveOutcome!: (o: Outcome) => void;
  const outcome = new Promise<Outcome>((r) => (resolveOutcome = r));
  const req = request(`${base}/api/receipts`, {
    method: 'POST',
    agent: false,
    headers: {
      'ocp-apim-subscription-key': key,
      'x-correlation-id': correlationId,
      'content-type': 'application/json',
      'content-length': body.length,
    },
  });
  req.on('response', (res) => {
    const chunks: Buffer[] = [];
    res.on('data', (c: Buffer) => chunks.push(c));
    res.on('end', () => {
      const text = Buffer.concat(chunks).toString('utf8');
      resolveOutcome({ status: res.statusCode, error: res.statusCode === 201 ? undefined : text, at: Date.now() });
    });
  });
  req.on('error', (err: NodeJS.ErrnoException) => resolveOutcome({ error: err.code ?? err.message, at: Date.now() }));
  req.flushHeaders();
  const sent = new Promise<void>((resolve) => req.write(body.subarray(0, half), () => resolve()));
  return {
    sent,
    finish() {
      req.end(body.subarray(half));
      return outcome;
    },
  };
}

describe('graceful shutdown', { timeout: 120_000 }, () => {
  test('SIGTERM with slow reads in flight: every request read is answered in full, new connections refused, exit 0', async () => {
    const dataDir = mkdtempSync(path.join(tmpdir(), 'splitline-shutdown-'));
    cleanups.push(async () => rmSync(dataDir, { recursive: true, force: true }));
    const fresh = process.env.DATABASE_URL ? await freshPostgresDatabase(process.env.DATABASE_URL) : undefined;
    if (fresh) cleanups.push(() => fresh.drop());

    // Large receipts, written before the service owns the database.
    const wallet = randomWallet();
    let key: string;
    {
      const db = fresh ? await openDatabase({ databaseUrl: fresh.url, poolSize: 4 }) : await openDatabase({ dataDir });
      try {
        key = (await createSubscription(db.db, { wallet, rateLimitPerMinute: 1_000_000 })).primaryKey;
        const store = new ReceiptStore(db.db);
        for (let i = 0; i < RECEIPTS; i++) {
          const lineItems = Array.from({ length: LINES }, (_, j) => ({ label: `Line ${j} of receipt ${i}, with a long description`, priceUsd: 1.25, qty: 2 }));
          await createReceipt(store, 'http://pay.test', { wallet, id: `big-${i}`, lineItems, totalUsd: LINES * 2.5 });
        }
      } finally {
        await db.close();
      }
    }

    const svc = await startService('service', {
      DATA_DIR: dataDir,
      SITE_URL: 'http://pay.test',
      LOG_LEVEL: 'debug',
      ...(fresh ? { DATABASE_URL: fresh.url } : {}),
      ...(process.env.REDIS_URL ? { REDIS_URL: process.env.REDIS_URL } : {}),
    });
    const agent = new Agent({ keepAlive: false, maxSockets: IN_FLIGHT * 2 });
    // The held request goes first: its headers are on the wire before the warm read connects, so
    // the idle server reads them long before SIGTERM (the warm read below is answered after them on
    // the same event loop).
    const heldId = `held-${Date.now()}`;
    const held = heldCreate(svc.base, key, heldId);
    await held.sent;
    const warm = await get(svc.base, `/api/receipts?limit=${RECEIPTS}`, key, agent);
    assert.equal(warm.receipts, RECEIPTS, JSON.stringify(warm));

    const ids = Array.from({ length: IN_FLIGHT }, (_, i) => `in-flight-${i}-${Date.now()}`);
    // Each with a limit of its own (all above the merchant's 120 receipts, so each answer holds all
    // of them): identical lists asked for together would share one query and finish at once.
    const inFlight = ids.map((id, i) => get(svc.base, `/api/receipts?limit=${RECEIPTS + i}`, key, agent, id));
    // SIGTERM once a few answers are out: the server is busy with the rest.
    let answered = 0;
    await new Promise<void>((resolve) => inFlight.forEach((p) => void p.then(() => ++answered === 3 && resolve())));
    const sigtermAt = Date.now();
    svc.child.kill('SIGTERM');

    // Knock with new connections until one is refused.
    const probes: Outcome[] = [];
    let exited = false;
    const exit = svc.exited.then((e) => {
      exited = true;
      return { ...e, at: Date.now() };
    });
    // The held request keeps the process alive, so the listener's closing is seen for certain.
    while (!exited && !probes.some((p) => p.error === 'ECONNREFUSED')) {
      probes.push(await get(svc.base, '/healthz', key, agent));
      // Pacing, not a wait: knocks a few ms apart, until the condition of the loop holds.
      await sleep(5);
    }
    assert.equal(exited, false, 'the process waited for the request it had read but not yet answered');
    // A few more knocks, then the rest of the held body: its answer comes after the listener closed.
    for (let i = 0; i < 3; i++) probes.push(await get(svc.base, '/healthz', key, agent));
    const heldAnswer = await held.finish();
    const answers = await Promise.all(inFlight);
    const { code, at: exitAt } = await exit;

    // Every request the server read was answered in full; the others were closed unread or refused with 503.
    const served = new Set(svc.logs.filter((l) => l.msg === 'request').map((l) => String(l.correlationId)));
    const full = answers.filter((a) => a.status === 200 && a.receipts === RECEIPTS);
    const unread: string[] = [];
    answers.forEach((a, i) => {
      if (a.status === 200) {
        assert.equal(a.receipts, RECEIPTS, `request ${ids[i]} was answered in full`);
        assert.ok(served.has(ids[i]!));
      } else if (a.status === 503) {
        unread.push('503');
      } else {
        assert.equal(a.error, 'ECONNRESET', `request ${ids[i]}: ${JSON.stringify(a)}`);
        assert.ok(!served.has(ids[i]!), `request ${ids[i]} was read by the server, yet closed unanswered`);
        unread.push('reset');
      }
    });
    assert.equal(heldAnswer.status, 201, `the held request was answered after SIGTERM: ${JSON.stringify(heldAnswer)}`);
    assert.ok(served.has(heldId));
    // The held request proves the drain for certain; how many of the reads also finished after SIGTERM is reported.
    const drained = answers.filter((a) => a.status === 200 && a.at > sigtermAt).length;
    const refusedAt = probes.find((p) => p.error === 'ECONNREFUSED')?.at;
    assert.ok(refusedAt !== undefined, `new connections were refused before the process exited: ${JSON.stringify(probes.slice(-3))}`);
    assert.ok(heldAnswer.at >= refusedAt && exitAt >= heldAnswer.at, 'the held answer came after the listener closed, and the exit after it');
    const lastAnswerAt = Math.max(...full.map((a) => a.at));
    const afterRefusal = probes.filter((p) => p.at > refusedAt);
    assert.ok(afterRefusal.every((p) => p.error === 'ECONNREFUSED'), `no connection accepted after the listener closed: ${JSON.stringify(afterRefusal)}`);
    assert.equal(code, 0, `exit code 0:\n${svc.output().slice(-2000)}`);
    // A real-time bound on purpose: a real process, once drained, must exit rather than hang.
    assert.ok(exitAt - sigtermAt < 15_000, `exited ${exitAt - sigtermAt} ms after SIGTERM`);
    assert.ok(svc.logs.some((l) => l.msg === 'shutting down: draining in-flight requests'));
    console.log(
      `SIGTERM with ${IN_FLIGHT} reads of ${RECEIPTS} receipts sent: ${full.length} answered in full (${drained} after SIGTERM), ` +
        `${unread.filter((u) => u === 'reset').length} closed unread, ${unread.filter((u) => u === '503').length} answered 503; the last ` +
        `${lastAnswerAt - sigtermAt} ms after SIGTERM; new connections refused from ${refusedAt - sigtermAt} ms; ` +
        `exit 0 after ${exitAt - sigtermAt} ms (${fresh ? 'PostgreSQL' : 'PGlite'})`,
    );
    agent.destroy();
  });
});
