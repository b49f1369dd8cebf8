/**
 * A client that hangs up in the middle of its body is logged as that, not as the database being
 * unavailable (its socket's ECONNRESET once looked like the database's), and the service goes on.
 */
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import net from 'node:net';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { Writable } from 'node:stream';
import { after, before, test } from 'node:test';
import type { FastifyInstance } from 'fastify';
import { buildApp } from '../src/app.ts';
import { loadConfig } from '../src/config.ts';
import { createDeps, type Deps } from '../src/deps.ts';
import { createLogger } from '../src/logger.ts';
import { freshPostgresDatabase, randomWallet } from './helpers/app.ts';
import { eventually, until } from './helpers/wait.ts';

const lines: { level: number; msg: string }[] = [];
const capture = new Writable({
  write(chunk: Buffer, _encoding, done) {
    for (const l of chunk.toString('utf8').split('\n')) if (l !== '') lines.push(JSON.parse(l));
    done();
  },
});

let app: FastifyInstance;
let deps: Deps;
let port: number;
let dataDir: string;
let drop: (() => Promise<void>) | undefined;
/** Bodies the service has begun to read: once one has, it is waiting for the rest. */
let bodiesBegun = 0;

before(async () => {
  dataDir = mkdtempSync(path.join(tmpdir(), 'splitline-abort-'));
  const fresh = process.env.DATABASE_URL ? await freshPostgresDatabase(process.env.DATABASE_URL) : undefined;
  drop = fresh === undefined ? undefined : () => fresh.drop();
  const config = loadConfig({ DATA_DIR: dataDir, SITE_URL: 'http://pay.test', LOG_LEVEL: 'info', ...(fresh ? { DATABASE_URL: fresh.url } : {}) });
  deps = await createDeps(config, { logger: createLogger('info', capture), pgliteDir: 'memory://' });
  app = await buildApp(deps);
  // A route that fails after reading its whole body, as a bug or a full disk would.
  app.post('/test/fails-after-body', async () => {
    throw new Error('unexpected failure after the body was read');
  });
  app.addHook('preParsing', async (_request, _reply, payload) => {
    bodiesBegun++;
    return payload;
  });
  await app.listen({ port: 0, host: '127.0.0.1' });
  port = (app.server.address() as net.AddressInfo).port;
});

after(async () => {
  await app.close();
  await deps.close();
  await drop?.();
  rmSync(dataDir, { recursive: true, force: true });
});

test('a body cut off by the client is logged as the client leaving, not as a database outage', async () => {
  const partial = JSON.stringify({ receiptId: 'r1', wallet: randomWallet(), status: 'link_opened' }).slice(0, 20);
  const begun = bodiesBegun;
  const socket = net.connect(port, '127.0.0.1');
  await new Promise((resolve) => socket.once('connect', resolve));
  socket.write(
    `POST /api/receipts/status HTTP/1.1\r\nhost: x\r\ncontent-type: application/json\r\ncontent-length: 500\r\n\r\n${partial}`,
  );
  await until(() => bodiesBegun > begun, 10_000, 'the service to begin reading the body');
  socket.destroy();
  const clientLeft = (l: { msg: string }) => l.msg === 'client closed the connection before its request was read';
  await eventually(
    () => assert.ok(lines.some(clientLeft), `got ${JSON.stringify(lines.map((l) => l.msg))}`),
    10_000,
    'a line about the client leaving',
  );

  assert.deepEqual(
    lines.filter((l) => /database/i.test(l.msg)).map((l) => l.msg),
    [],
  );
  assert.ok(
    lines.some((l) => clientLeft(l) && l.level === 30),
    `expected an info line about the client; got ${JSON.stringify(lines.map((l) => l.msg))}`,
  );
  // The service goes on answering.
  const res = await fetch(`http://127.0.0.1:${port}/healthz`);
  assert.equal(res.status, 200);
});

test('an unexpected error after the whole body was read is a 500 failed with its correlation id, not a client abort', async () => {
  lines.length = 0;
  const res = await fetch(`http://127.0.0.1:${port}/test/fails-after-body`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', 'x-correlation-id': 'corr-after-body-1' },
    body: JSON.stringify({ some: 'body' }),
  });
  assert.equal(res.status, 500);
  const body = (await res.json()) as { error: string; message: string };
  assert.equal(body.error, 'failed');
  assert.match(body.message, /corr-after-body-1/);
  assert.equal(lines.some((l) => l.msg === 'client closed the connection before its request was read'), false);
  assert.ok(lines.some((l) => l.level === 50 && l.msg === 'unhandled error'), 'logged as an error');
});
