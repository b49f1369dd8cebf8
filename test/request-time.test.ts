/**
 * Request time through real sockets: every request's body within REQUEST_TIMEOUT_MS (also after
 * an early answer, and with no timer left behind), while the APK upload, once authorised, has
 * APK_UPLOAD_TIMEOUT_MS as long as bytes keep coming. A stalled or overlong upload gets 408 and
 * leaves the stored package as it was, on both stores.
 *
 * The times asserted here are real on purpose: the behaviour under test is the server's own
 * deadlines on real sockets, which no injected clock can stand in for. Each bound is one of those
 * deadlines, with slack for a loaded machine.
 */
import assert from 'node:assert/strict';
import net from 'node:net';
import { Transform } from 'node:stream';
import { after, before, describe, test } from 'node:test';
import { ConfigError, loadConfig } from '../src/config.ts';
import { runningRequestDeadlines } from '../src/http/request-time.ts';
import type { BlobStore } from '../src/storage/blob-store.ts';
import { startTestApp, type TestApp } from './helpers/app.ts';
import { startAzurite, type Azurite } from './helpers/azurite.ts';
import { newAccount, signIn, type Session } from './helpers/session.ts';
import { until } from './helpers/wait.ts';

const TIMEOUT_MS = 500;
const UPLOAD_TIMEOUT_MS = 2500;
const APK = 'application/vnd.android.package-archive';
const superAccount = newAccount();
/** The settings of every app here that takes uploads: short budgets, a superadmin, 32 MB packages. */
const UPLOAD_ENV = {
  REQUEST_TIMEOUT_MS: String(TIMEOUT_MS),
  APK_UPLOAD_TIMEOUT_MS: String(UPLOAD_TIMEOUT_MS),
  SUPERADMIN_WALLETS: superAccount.address,
  APK_MAX_BYTES: String(32 * 1024 * 1024),
};

/** A fake APK: a ZIP local-file header followed by bytes that depend on `seed`. */
function apkBytes(size: number, seed: number): Buffer {
  const b = Buffer.alloc(size);
  for (let i = 0; i < size; i++) b[i] = (i * 31 + seed) & 0xff;
  b.write('PK\x03\x04', 0, 'latin1');
  return b;
}

interface Answer {
  status: number;
  headers: Record<string, string>;
  body: string;
  /** ms after connecting when the server's answer began, and when it closed the connection. */
  answeredAfterMs: number | undefined;
  closedAfterMs: number | undefined;
}

/**
 * Writes `head`, then `pieces` one every `everyMs` (fewer than the declared length stalls the
 * request), and reads until the server closes the connection; gives up after `limitMs`.
 */
function send(port: number, head: string, pieces: Buffer[], opts: { everyMs: number; limitMs?: number }): Promise<Answer> {
  return new Promise((resolve) => {
    const started = Date.now();
    const socket = net.connect(port, '127.0.0.1');
    const chunks: Buffer[] = [];
    let answeredAfterMs: number | undefined;
    let closedAfterMs: number | undefined;
    const giveUp = setTimeout(() => socket.destroy(), opts.limitMs ?? 10_000);
    let drip: NodeJS.Timeout | undefined;
    socket.on('data', (d) => {
      answeredAfterMs ??= Date.now() - started;
      chunks.push(d);
    });
    // The server may close while the client is still writing.
    socket.on('error', () => {});
    socket.on('end', () => {
      closedAfterMs ??= Date.now() - started;
    });
    socket.on('close', () => {
      closedAfterMs ??= Date.now() - started;
      clearTimeout(giveUp);
      clearInterval(drip);
      const text = Buffer.concat(chunks).toString('latin1');
      const split = text.indexOf('\r\n\r\n');
      const [statusLine, ...lines] = (split < 0 ? text : text.slice(0, split)).split('\r\n');
      const headers: Record<string, string> = {};
      for (const line of lines) {
        const i = line.indexOf(':');
        if (i > 0) headers[line.slice(0, i).toLowerCase()] = line.slice(i + 1).trim();
      }
      resolve({
        status: Number(statusLine?.split(' ')[1] ?? 0),
        headers,
        body: split < 0 ? '' : text.slice(split + 4),
        answeredAfterMs,
        closedAfterMs,
      });
    });
    socket.on('connect', () => {
      socket.write(head);
      const rest = [...pieces];
      drip = setInterval(() => {
        const next = rest.shift();
        if (next === undefined) return clearInterval(drip);
        if (socket.writable) socket.write(next);
      }, opts.everyMs);
    });
  });
}

function pieces(bytes: Buffer, count: number): Buffer[] {
  const size = Math.ceil(bytes.length / count);
  return Array.from({ length: count }, (_, i) => bytes.subarray(i * size, (i + 1) * size));
}

function assertTimeout(res: Answer): void {
  assert.equal(res.status, 408, `${res.status} ${res.body}`);
  const body = JSON.parse(res.body) as Record<string, unknown>;
  assert.deepEqual(Object.keys(body).sort(), ['error', 'message']);
  assert.equal(body.error, 'request_timeout');
  assert.equal(res.headers.connection, 'close');
  assert.equal(res.headers['x-content-type-options'], 'nosniff');
  assert.ok(res.closedAfterMs !== undefined, 'the server closed the connection');
}

let azurite: Azurite;
before(async () => {
  azurite = await startAzurite();
});
after(async () => {
  await azurite.stop();
});

async function listen(t: TestApp): Promise<number> {
  await t.app.listen({ host: '127.0.0.1', port: 0 });
  return (t.app.server.address() as net.AddressInfo).port;
}

describe(`every other request within REQUEST_TIMEOUT_MS=${TIMEOUT_MS}`, () => {
  let t: TestApp;
  let port: number;
  before(async () => {
    t = await startTestApp({
      REQUEST_TIMEOUT_MS: String(TIMEOUT_MS),
      APK_UPLOAD_TIMEOUT_MS: String(UPLOAD_TIMEOUT_MS),
      PUBLIC_RATE_LIMIT_PER_MINUTE: '1000000',
      SUPERADMIN_WALLETS: superAccount.address,
    });
    port = await listen(t);
  });
  after(async () => {
    await t.close();
  });

  const trickle = Array.from({ length: 100 }, () => Buffer.from(' '));

  test('a body trickling after an early answer (401 before it was read) is cut off at the deadline', async () => {
    const res = await send(port, 'POST /api/receipts HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: 100000\r\n\r\n{', trickle, {
      everyMs: 100,
    });
    assert.equal(res.status, 401, res.body);
    assert.ok(res.answeredAfterMs !== undefined && res.answeredAfterMs < TIMEOUT_MS, `answered after ${res.answeredAfterMs} ms`);
    assert.ok(res.closedAfterMs !== undefined && res.closedAfterMs < TIMEOUT_MS * 6, `closed after ${res.closedAfterMs} ms`);
    assert.doesNotMatch(res.body, /request_timeout/, 'no second answer after the first');
  });

  test('so is one answered before routing (a malformed URL)', async () => {
    const res = await send(port, 'POST /api/receipts/%ZZ HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: 100000\r\n\r\n{', trickle, {
      everyMs: 100,
    });
    assert.equal(res.status, 400, res.body);
    assert.ok(res.closedAfterMs !== undefined && res.closedAfterMs < TIMEOUT_MS * 6, `closed after ${res.closedAfterMs} ms`);
  });

  test('an upload without a session does not get the upload budget: 401, then closed at the deadline', async () => {
    const res = await send(port, `PUT /api/admin/apk/acme HTTP/1.1\r\nHost: x\r\nContent-Type: ${APK}\r\nContent-Length: 100000\r\n\r\nPK\x03\x04`, trickle, {
      everyMs: 100,
    });
    assert.equal(res.status, 401, res.body);
    assert.ok(res.closedAfterMs !== undefined && res.closedAfterMs < TIMEOUT_MS * 6, `closed after ${res.closedAfterMs} ms`);
  });
});

/**
 * Ten times the test's own timeout: no deadline can fire while the test runs, however loaded the
 * machine, so a timer still running at the end was leaked.
 */
const LEAK_TIMEOUT_MS = 600_000;

describe(`deadline timers end with their requests (REQUEST_TIMEOUT_MS=${LEAK_TIMEOUT_MS})`, () => {
  let t: TestApp;
  let port: number;
  before(async () => {
    t = await startTestApp({ REQUEST_TIMEOUT_MS: String(LEAK_TIMEOUT_MS), PUBLIC_RATE_LIMIT_PER_MINUTE: '1000000' });
    port = await listen(t);
  });
  after(async () => {
    await t.close();
  });

  test('no deadline timer outlives its request: answered, refused or abandoned by the client', { timeout: LEAK_TIMEOUT_MS / 10 }, async () => {
    // Counted by the deadline code itself: the process holds other timers (the chain worker's
    // next pass) that come and go on their own.
    assert.equal(runningRequestDeadlines(), 0, 'no deadline running before the requests');
    const body = '{"receiptId":"r1","status":"checkout_initialized"}';
    const complete = Array.from({ length: 40 }, () =>
      send(port, `POST /api/receipts/status HTTP/1.1\r\nHost: x\r\nConnection: close\r\nContent-Type: application/json\r\nContent-Length: ${body.length}\r\n\r\n`, [Buffer.from(body)], { everyMs: 1 }),
    );
    const invalid = Array.from({ length: 20 }, () =>
      send(port, 'POST /api/receipts/status HTTP/1.1\r\nHost: x\r\nConnection: close\r\nContent-Type: application/json\r\nContent-Length: 5\r\n\r\n', [Buffer.from('{"a":')], { everyMs: 1 }),
    );
    const abandoned = Array.from(
      { length: 20 },
      () =>
        new Promise<void>((resolve) => {
          const s = net.connect(port, '127.0.0.1', () => {
            s.write('POST /api/receipts/status HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: 1000\r\n\r\n{"receiptId":');
            // Pacing, not a wait: the client gives up mid-body a moment after it began.
            setTimeout(() => s.destroy(), 20);
          });
          s.on('close', () => resolve());
        }),
    );
    const answers = await Promise.all([...complete, ...invalid]);
    await Promise.all(abandoned);
    assert.ok(answers.every((a) => a.status !== 408 && a.status !== 0), answers.map((a) => a.status).join());
    // The server may see the last closes a moment after the client; a leaked timer would live on
    // until its deadline, long after this test's timeout.
    await until(() => runningRequestDeadlines() === 0, 5_000, 'every deadline timer to end with its request (none left running)', 10);
  });
});

for (const store of ['filesystem', 'azure'] as const) {
  describe(`APK uploads on ${store} storage: APK_UPLOAD_TIMEOUT_MS=${UPLOAD_TIMEOUT_MS}, idle REQUEST_TIMEOUT_MS=${TIMEOUT_MS}`, () => {
    let t: TestApp;
    let port: number;
    let sup: Session;
    before(async () => {
      t = await startTestApp({
        ...UPLOAD_ENV,
        ...(store === 'azure' ? { STORAGE_CONNECTION_STRING: azurite.connectionString, APK_CONTAINER: `apks${Date.now()}` } : {}),
      });
      assert.equal(t.deps.blobs.kind, store);
      sup = await signIn(t, superAccount);
      port = await listen(t);
    });
    after(async () => {
      await t.close();
    });

    const head = (app: string, length: number) =>
      `PUT /api/admin/apk/${app} HTTP/1.1\r\nHost: x\r\nConnection: close\r\nOrigin: http://pay.test\r\n` +
      `Cookie: ${sup.cookie}\r\nX-CSRF-Token: ${sup.csrfToken}\r\nContent-Type: ${APK}\r\nContent-Length: ${length}\r\n\r\n`;
    const stored = async (app: string): Promise<Buffer> => {
      const res = await t.app.inject({ method: 'GET', url: `/api/admin/apk/${app}`, headers: { cookie: sup.cookie } });
      assert.equal(res.statusCode, 200);
      return res.rawPayload;
    };
    const put = async (app: string, bytes: Buffer) => {
      const res = await t.app.inject({
        method: 'PUT',
        url: `/api/admin/apk/${app}`,
        payload: bytes,
        headers: { cookie: sup.cookie, 'x-csrf-token': sup.csrfToken, 'content-type': APK },
      });
      assert.equal(res.statusCode, 200, res.body);
    };

    test('an upload taking several times REQUEST_TIMEOUT_MS, bytes arriving all along, is stored', async () => {
      const bytes = apkBytes(200_000, 1);
      const res = await send(port, head('slow', bytes.length), pieces(bytes, 16), { everyMs: 100 });
      assert.equal(res.status, 200, res.body);
      assert.ok(res.answeredAfterMs! > TIMEOUT_MS * 2, `answered after ${res.answeredAfterMs} ms`);
      assert.equal(JSON.parse(res.body).size, bytes.length);
      assert.ok((await stored('slow')).equals(bytes));
    });

    test('an upload that stops sending for REQUEST_TIMEOUT_MS gets 408 and the old package stays', async () => {
      const old = apkBytes(3000, 2);
      await put('stall', old);
      const bytes = apkBytes(200_000, 3);
      const res = await send(port, head('stall', bytes.length), pieces(bytes, 20).slice(0, 4), { everyMs: 100 });
      assertTimeout(res);
      assert.match(res.body, /No bytes of the upload arrived for 0.5 s/);
      // Four pieces (about 400 ms), then the idle limit.
      assert.ok(res.answeredAfterMs! >= 400 + TIMEOUT_MS - 50 && res.answeredAfterMs! < 400 + TIMEOUT_MS * 6, `answered after ${res.answeredAfterMs} ms`);
      assert.ok((await stored('stall')).equals(old));
    });

    test('an upload still arriving at APK_UPLOAD_TIMEOUT_MS gets 408 and the old package stays', async () => {
      const old = apkBytes(3000, 4);
      await put('long', old);
      const bytes = apkBytes(400_000, 5);
      const res = await send(port, head('long', bytes.length), pieces(bytes, 40), { everyMs: 100, limitMs: 8000 });
      assertTimeout(res);
      assert.match(res.body, /did not arrive within 2.5 s/);
      assert.ok(
        res.answeredAfterMs! >= UPLOAD_TIMEOUT_MS - 50 && res.answeredAfterMs! < UPLOAD_TIMEOUT_MS + TIMEOUT_MS * 3,
        `answered after ${res.answeredAfterMs} ms`,
      );
      assert.ok((await stored('long')).equals(old));
    });
  });
}

describe('a slow store is not a stalled client', () => {
  let t: TestApp;
  before(async () => {
    t = await startTestApp(UPLOAD_ENV);
  });
  after(async () => {
    await t.close();
  });

  test('a store that stops reading for twice REQUEST_TIMEOUT_MS, while the client waits on it, still gets the whole upload', async () => {
    const sup = await signIn(t, superAccount);
    const port = await listen(t);
    // The store holds the second chunk back for 1 s: the client is blocked by backpressure meanwhile.
    const blobs: BlobStore = t.deps.blobs;
    const write = blobs.write.bind(blobs);
    blobs.write = (name, source, opts) => {
      let n = 0;
      const slow = new Transform({
        transform(chunk, _enc, done) {
          if (++n === 2) setTimeout(() => done(null, chunk), TIMEOUT_MS * 2);
          else done(null, chunk);
        },
      });
      source.on('error', (err) => slow.destroy(err));
      return write(name, source.pipe(slow), opts);
    };
    const bytes = apkBytes(16 * 1024 * 1024, 6);
    const head =
      `PUT /api/admin/apk/backpressure HTTP/1.1\r\nHost: x\r\nConnection: close\r\nOrigin: http://pay.test\r\n` +
      `Cookie: ${sup.cookie}\r\nX-CSRF-Token: ${sup.csrfToken}\r\nContent-Type: ${APK}\r\nContent-Length: ${bytes.length}\r\n\r\n`;
    const res = await send(port, head, [bytes], { everyMs: 1 });
    assert.equal(res.status, 200, res.body);
    assert.ok(res.answeredAfterMs! > TIMEOUT_MS * 2, `answered after ${res.answeredAfterMs} ms`);
    blobs.write = write;
  });
});

describe('configuration', () => {
  test('APK_UPLOAD_TIMEOUT_MS defaults to 15 minutes, is at least REQUEST_TIMEOUT_MS, and refuses nonsense', () => {
    assert.equal(loadConfig({}).apkUploadTimeoutMs, 15 * 60_000);
    assert.equal(loadConfig({ APK_UPLOAD_TIMEOUT_MS: '3600000' }).apkUploadTimeoutMs, 3_600_000);
    for (const bad of ['0', 'soon', '1.5', '999999999999']) {
      assert.throws(() => loadConfig({ APK_UPLOAD_TIMEOUT_MS: bad }), ConfigError, bad);
    }
    assert.throws(() => loadConfig({ REQUEST_TIMEOUT_MS: '60000', APK_UPLOAD_TIMEOUT_MS: '30000' }), /at least REQUEST_TIMEOUT_MS/);
  });

  test('the upload documents its 408', async () => {
    const t = await startTestApp();
    try {
      const doc = (await t.app.inject({ method: 'GET', url: '/openapi.json' })).json();
      assert.ok(doc.paths['/api/admin/apk/{app}'].put.responses['408']);
    } finally {
      await t.close();
    }
  });
});
