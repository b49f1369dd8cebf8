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
 */
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { Agent, request } from 'node:http';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { after, describe, test } from 'node:test';
import { openDatabase } from '../src/db/client.ts';
import { createReceipt } from '../src/domain/receipts.ts';
import { createSubscription } from '../src/gateway/subscriptions.ts';
import { freshPostgresDatabase, randomWallet } from './helpers/app.ts';
import { startService, stopAllServices } from './helpers/service.ts';

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
        for (let i = 0; i < RECEIPTS; i++) {
          const lineItems = Array.from({ length: LINES }, (_, j) => ({ label: `Line ${j} of receipt ${i}, with a long description`, priceUsd: 1.25, qty: 2 }));
          await createReceipt(db.db, 'http://pay.test', { wallet, id: `big-${i}`, lineItems, totalUsd: LINES * 2.5 });
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
    const warm = await get(svc.base, `/api/receipts?limit=${RECEIPTS}`, key, agent);
    assert.equal(warm.receipts, RECEIPTS, JSON.stringify(warm));

    const ids = Array.from({ length: IN_FLIGHT }, (_, i) => `in-flight-${i}-${Date.now()}`);
    const inFlight = ids.map((id) => get(svc.base, `/api/receipts?limit=${RECEIPTS}`, key, agent, id));
    // SIGTERM once a few answers are out: the server is busy with the rest.
    let answered = 0;
    await new Promise<void>((resolve) => inFlight.forEach((p) => void p.then(() => ++answered === 3 && resolve())));
    const sigtermAt = Date.now();
    svc.child.kill('SIGTERM');

    // Keep knocking with new connections until the process is gone.
    const probes: Outcome[] = [];
    let exited = false;
    const exit = svc.exited.then((e) => {
      exited = true;
      return { ...e, at: Date.now() };
    });
    while (!exited) {
      const probe = await get(svc.base, '/healthz', key, agent);
      if (!exited) probes.push(probe);
      await new Promise((r) => setTimeout(r, 20));
    }
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
    const drained = answers.filter((a) => a.status === 200 && a.at > sigtermAt).length;
    assert.ok(drained > 0, 'requests in progress at SIGTERM were still answered');
    const refusedAt = probes.find((p) => p.error === 'ECONNREFUSED')?.at;
    assert.ok(refusedAt !== undefined, `new connections were refused before the process exited: ${JSON.stringify(probes.slice(-3))}`);
    const lastAnswerAt = Math.max(...full.map((a) => a.at));
    const afterRefusal = probes.filter((p) => p.at > refusedAt);
    assert.ok(afterRefusal.every((p) => p.error === 'ECONNREFUSED'), `no connection accepted after the listener closed: ${JSON.stringify(afterRefusal)}`);
    assert.equal(code, 0, `exit code 0:\n${svc.output().slice(-2000)}`);
    assert.ok(exitAt - sigtermAt < 15_000);
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
