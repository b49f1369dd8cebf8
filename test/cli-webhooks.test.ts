/**
 * `listen` and `trigger` (DESIGN.md "Integrator API", CLI), run as the compiled CLI against a real
 * service on the dev chain. trigger makes a real payment; listen forwards the events it caused to
 * a receiver on loopback, whose `standardwebhooks` verify must accept every one, while the
 * service's events API answers 503 for a while (through a proxy the test switches) and the
 * receiver answers 503 once: nothing is lost, nothing arrives twice, oldest first.
 */
import assert from 'node:assert/strict';
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { createServer, request, type Server } from 'node:http';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { after, before, describe, test } from 'node:test';
import { Webhook } from 'standardwebhooks';
import { ensureServerBuild, SERVER_DIST } from '../scripts/ensure-server-build.ts';
import { freePort, ROOT } from '../scripts/service-launcher.ts';
import { freshPostgresDatabase, randomWallet, startTestApp, type TestApp } from './helpers/app.ts';
import { startService, stopAllServices, type Service } from './helpers/service.ts';
import { until } from './helpers/wait.ts';
import { runNode, type NodeRun } from './helpers/run-node.ts';
import { webhookReceiver } from './helpers/webhook-receiver.ts';

const CHAIN_MS = 120_000;
let service: Service;
let key: string;
let dataDir: string;
let fresh: { url: string; drop(): Promise<void> } | undefined;

before(async () => {
  await ensureServerBuild({ log: () => {} });
  dataDir = mkdtempSync(path.join(tmpdir(), 'splitline-cli-webhooks-'));
}, { timeout: 300_000 });

after(async () => {
  await stopAllServices();
  await fresh?.drop();
  rmSync(dataDir, { recursive: true, force: true });
});

function env(): NodeJS.ProcessEnv {
  const e: NodeJS.ProcessEnv = { ...process.env, LOG_LEVEL: 'silent', DATA_DIR: dataDir };
  delete e.SPLITLINE_API_KEY;
  return e;
}

/** The compiled CLI, to its exit. */
function cli(args: string[], extra: NodeJS.ProcessEnv = {}, timeoutMs = 60_000): Promise<NodeRun> {
  return runNode([path.join(SERVER_DIST, 'cli.js'), ...args], { ...env(), ...extra }, timeoutMs);
}

/** A proxy to the service that answers 503 to everything while `down` is set. */
async function switchableProxy(target: string): Promise<{ url: string; server: Server; setDown(v: boolean): void; refused: () => number }> {
  let down = false;
  let refused = 0;
  const server = createServer((req, res) => {
    if (down) {
      refused += 1;
      res.writeHead(503, { 'content-type': 'application/json' }).end('{"error":"unavailable","message":"down for the test"}');
      return;
    }
    const upstream = request(target + req.url, { method: req.method, headers: req.headers }, (up) => {
      res.writeHead(up.statusCode ?? 502, up.headers);
      up.pipe(res);
    });
    req.pipe(upstream);
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  const { port } = server.address() as { port: number };
  return { url: `http://127.0.0.1:${port}`, server, setDown: (v) => (down = v), refused: () => refused };
}

async function events(query = ''): Promise<{ id: string; type: string; createdAt: number; data: { receiptId?: string } }[]> {
  const res = await fetch(`${service.base}/api/events?limit=100${query}`, { headers: { 'ocp-apim-subscription-key': key } });
  assert.equal(res.status, 200);
  return ((await res.json()) as { events: [] }).events;
}

describe('cli listen and trigger on the dev chain', { timeout: 600_000 }, () => {
  before(async () => {
    if (process.env.DATABASE_URL) fresh = await freshPostgresDatabase(process.env.DATABASE_URL);
    service = await startService('cli-webhooks', {
      DATA_DIR: dataDir,
      CHAIN: 'dev',
      DEV_CHAIN_PORT: String(await freePort()),
      ...(fresh ? { DATABASE_URL: fresh.url } : {}),
      ...(process.env.REDIS_URL ? { REDIS_URL: process.env.REDIS_URL } : {}),
    }, { timeoutMs: 240_000 });
    const merchant = await cli(['dev', 'merchant', '--url', service.base, '--json']);
    assert.equal(merchant.code, 0, merchant.stderr);
    key = JSON.parse(merchant.stdout).primaryKey;
  }, { timeout: 300_000 });
  test('trigger pays a real receipt; listen forwards its events once each, oldest first, verified by standardwebhooks, through a 503', async () => {
    const proxy = await switchableProxy(service.base);
    const receiver = await webhookReceiver([503]);
    const before = await events();
    let listenOut = '';
    let listenErr = '';
    const listener: ChildProcess = spawn(
      process.execPath,
      [path.join(SERVER_DIST, 'cli.js'), 'listen', '--base-url', proxy.url, '--forward-to', receiver.url, '--json'],
      { cwd: ROOT, env: { ...env(), SPLITLINE_API_KEY: key } },
    );
    listener.stdout!.on('data', (d: Buffer) => (listenOut += d.toString()));
    listener.stderr!.on('data', (d: Buffer) => (listenErr += d.toString()));
    const exited = new Promise<number | null>((r) => listener.once('exit', r));
    try {
      await until(() => /Ready: forwarding every event/.test(listenErr), 30_000, `listen to start\n${listenErr}`);
      const { secret } = JSON.parse(listenOut.split('\n')[0]!) as { secret: string };
      assert.match(secret, /^whsec_[A-Za-z0-9+/]+=*$/);

      // The events API answers 503 while the payment happens.
      proxy.setDown(true);
      const triggered = await cli(['trigger', 'receipt.completed', '--api-key', key, '--base-url', service.base, '--json'], {}, CHAIN_MS);
      assert.equal(triggered.code, 0, triggered.stderr);
      const result = JSON.parse(triggered.stdout) as { event: { id: string; type: string }; receiptId: string };
      assert.equal(result.event.type, 'receipt.completed');
      await until(() => proxy.refused() >= 2 && /503/.test(listenErr), 30_000, 'listen to meet the 503');
      assert.equal(receiver.got.length, 0, 'nothing forwarded while the service is away');
      proxy.setDown(false);

      // The events the payment caused, as the API lists them, oldest first; none from before listen started.
      const known = new Set(before.map((e) => e.id));
      const caused = (await events()).filter((e) => !known.has(e.id)).reverse();
      assert.ok(caused.some((e) => e.type === 'receipt.payment_received' && e.data.receiptId === result.receiptId), JSON.stringify(caused));
      assert.ok(caused.some((e) => e.id === result.event.id));
      // The first attempt met the receiver's 503 and was sent again: one more request than events.
      await until(() => receiver.got.length >= caused.length + 1, 60_000, `every event forwarded\n${listenErr}`);
      const wh = new Webhook(secret);
      const delivered = receiver.got.map((g) => {
        const headers = { 'webhook-id': String(g.headers['webhook-id']), 'webhook-timestamp': String(g.headers['webhook-timestamp']), 'webhook-signature': String(g.headers['webhook-signature']) };
        const payload = wh.verify(g.body, headers) as { id: string };
        assert.equal(payload.id, headers['webhook-id']);
        assert.equal(g.headers['content-type'], 'application/json');
        return payload.id;
      });
      assert.deepEqual(delivered, [caused[0]!.id, ...caused.map((e) => e.id)], 'oldest first, the 503 one again, then each once');
      // The body is the event exactly as GET /api/events/{id} has it.
      for (const e of caused) {
        const one = await fetch(`${service.base}/api/events/${e.id}`, { headers: { 'ocp-apim-subscription-key': key } });
        const got = [...receiver.got].reverse().find((g) => g.headers['webhook-id'] === e.id)!;
        assert.deepEqual(JSON.parse(got.body), await one.json());
      }
      // A wrong secret fails the same verification.
      assert.throws(() => new Webhook(`whsec_${Buffer.alloc(24, 7).toString('base64')}`).verify(receiver.got[0]!.body, {
        'webhook-id': String(receiver.got[0]!.headers['webhook-id']),
        'webhook-timestamp': String(receiver.got[0]!.headers['webhook-timestamp']),
        'webhook-signature': String(receiver.got[0]!.headers['webhook-signature']),
      }));
      // One stdout line per forwarded event with the receiver's status.
      await until(() => listenOut.trim().split('\n').length >= caused.length + 1, 10_000, 'the lines');
      const lines = listenOut.trim().split('\n').slice(1).map((l) => JSON.parse(l) as { id: string; status: number });
      assert.deepEqual(lines.map((l) => [l.id, l.status]), caused.map((e) => [e.id, 200]));
      assert.match(listenErr, /503; retrying/);

      // Ctrl-C: exit 0 promptly.
      listener.kill('SIGINT');
      assert.equal(await exited, 0);
      assert.match(listenErr, new RegExp(`Stopped; ${caused.length} event\\(s\\) forwarded`));
    } finally {
      listener.kill('SIGKILL');
      proxy.server.close();
      receiver.server.close();
    }
  });

  test('listen --since <eventId> forwards the events after it, and --events keeps only the types named', async () => {
    const all = await events();
    const completed = all.filter((e) => e.type === 'receipt.completed');
    assert.ok(completed.length >= 1);
    const oldest = all.at(-1)!;
    const receiver = await webhookReceiver();
    const listener = spawn(
      process.execPath,
      [path.join(SERVER_DIST, 'cli.js'), 'listen', '--api-key', key, '--base-url', service.base, '--forward-to', receiver.url, '--since', oldest.id, '--events', 'receipt.completed', '--secret', `whsec_${Buffer.alloc(32, 1).toString('base64')}`],
      { cwd: ROOT, env: env() },
    );
    let out = '';
    listener.stdout.on('data', (d: Buffer) => (out += d.toString()));
    const exited = new Promise<number | null>((r) => listener.once('exit', r));
    try {
      const expected = completed.filter((e) => e.id !== oldest.id).reverse();
      await until(() => receiver.got.length >= expected.length, 30_000, 'the replay');
      assert.deepEqual(receiver.got.map((g) => g.headers['webhook-id']), expected.map((e) => e.id));
      assert.match(out, new RegExp(`Webhook signing secret: whsec_${Buffer.alloc(32, 1).toString('base64').replaceAll('+', '\\+')}`));
      // The line is printed once the receiver's answer is back, just after it counted the event.
      await until(() => /receipt\.completed .* 200/.test(out), 10_000, 'the forwarded event line');
      listener.kill('SIGTERM');
      assert.equal(await exited, 0);
    } finally {
      listener.kill('SIGKILL');
      receiver.server.close();
    }
  });

  test('bad input: exit 1 with one clear line, nothing started', async () => {
    const cases: [string[], NodeJS.ProcessEnv, RegExp][] = [
      [['listen', '--forward-to', 'http://localhost:3000/h', '--base-url', service.base], {}, /needs a subscription key: --api-key <key>, or SPLITLINE_API_KEY/],
      [['listen', '--forward-to', 'ftp://x/h', '--api-key', key], {}, /--forward-to must be an http or https URL/],
      [['listen', '--forward-to', 'not a url', '--api-key', key], {}, /--forward-to must be an http or https URL/],
      [['listen', '--api-key', key], {}, /--forward-to is required/],
      [['listen', '--forward-to', 'http://localhost:3000/h', '--api-key', key, '--events', 'receipt.completed,receipt.bogus'], {}, /unknown event type receipt\.bogus; event types: receipt\.payment_received/],
      [['listen', '--forward-to', 'http://localhost:3000/h', '--api-key', key, '--secret', 'hunter2'], {}, /--secret must be a Standard Webhooks secret/],
      [['listen', '--forward-to', 'http://localhost:3000/h', '--api-key', 'spl_wrong', '--base-url', service.base], {}, /GET \/api\/events\?limit=100 answered 401 unauthorized/],
      [['listen', '--forward-to', 'http://localhost:3000/h', '--api-key', key, '--base-url', service.base, '--since', 'evt_nope'], {}, /--since: no event evt_nope/],
      [['trigger', 'receipt.bogus', '--api-key', key], {}, /unknown event "receipt\.bogus"; supported: receipt\.payment_received, receipt\.completed/],
      [['trigger', 'receipt.expired', '--api-key', key], {}, /trigger cannot make receipt\.expired happen; supported: receipt\.payment_received, receipt\.completed/],
      [['trigger'], {}, /trigger needs an event \(supported: /],
      [['trigger', 'receipt.completed', '--base-url', service.base], {}, /needs a subscription key/],
    ];
    for (const [args, extra, message] of cases) {
      const res = await cli(args, extra);
      assert.equal(res.code, 1, `${args.join(' ')}\n${res.stderr}`);
      assert.match(res.stderr, message, args.join(' '));
      assert.equal(res.stderr.trim().split('\n').length, 1, `one line: ${res.stderr}`);
    }
    // An unknown option is a usage error (exit 2).
    const usage = await cli(['trigger', 'receipt.completed', '--forward-to', 'http://x']);
    assert.equal(usage.code, 2);
  });
});

describe('cli trigger on a server without the dev chain', () => {
  let t: TestApp;
  before(async () => {
    t = await startTestApp();
    await t.app.listen({ host: '127.0.0.1', port: 0 });
  });
  after(async () => {
    await t.close();
  });

  test('refuses in one line and creates nothing', async () => {
    const wallet = randomWallet();
    const k = await t.key(wallet);
    const address = t.app.server.address() as { port: number };
    const res = await cli(['trigger', 'receipt.completed', '--api-key', k, '--base-url', `http://127.0.0.1:${address.port}`]);
    assert.equal(res.code, 1, res.stderr);
    assert.match(res.stderr, /trigger makes real events on the dev chain only/);
    const list = await t.call(k, 'GET', '/api/receipts');
    assert.deepEqual(list.body.receipts, []);
  });
});
