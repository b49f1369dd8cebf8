/**
 * Logs never carry credentials. The app runs with the service's own logger (createLogger, with its
 * redaction and error serializer) at trace level into a stream the test reads, while requests carry
 * every secret there is: subscription keys (valid, unknown, revoked), the EDGE_SECRET (right and
 * wrong), the session cookie, the CSRF token, a login signature, a webhook signing secret, through
 * success and error paths alike: 401, 403, 404, a 500 whose failed SQL insert held a webhook
 * secret, malformed HTTP and oversized headers on a real socket.
 */
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import net from 'node:net';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { Writable } from 'node:stream';
import { after, before, test } from 'node:test';
import { sql } from 'drizzle-orm';
import type { FastifyInstance } from 'fastify';
import { buildApp } from '../../src/app.ts';
import { loadConfig } from '../../src/config.ts';
import { createDeps, type Deps } from '../../src/deps.ts';
import { createLogger } from '../../src/logger.ts';
import { freshPostgresDatabase, randomWallet } from '../helpers/app.ts';
import { newAccount, sign } from '../helpers/session.ts';

const EDGE_SECRET = `edge-${randomBytes(16).toString('hex')}`;
const JWT_SECRET = `jwt-${randomBytes(24).toString('hex')}`;
const lines: string[] = [];
const capture = new Writable({
  write(chunk: Buffer, _encoding, done) {
    lines.push(...chunk.toString('utf8').split('\n').filter((l) => l !== ''));
    done();
  },
});

let app: FastifyInstance;
let deps: Deps;
let dataDir: string;
let drop: (() => Promise<void>) | undefined;
/** Every secret the requests carried or the service handed out. */
const secrets = new Map<string, string>([
  ['EDGE_SECRET', EDGE_SECRET],
  ['JWT_SECRET', JWT_SECRET],
]);

interface Answer {
  status: number;
  body: any;
  headers: Record<string, unknown>;
}

async function call(method: 'GET' | 'POST' | 'DELETE', url: string, body?: unknown, headers: Record<string, string> = {}): Promise<Answer> {
  const res = await app.inject({
    method,
    url,
    headers: { 'x-edge-secret': EDGE_SECRET, ...headers },
    ...(body === undefined ? {} : { payload: body as object }),
  });
  return { status: res.statusCode, body: res.body === '' ? null : res.json(), headers: res.headers };
}

before(async () => {
  dataDir = mkdtempSync(path.join(tmpdir(), 'splitline-redaction-'));
  const fresh = process.env.DATABASE_URL ? await freshPostgresDatabase(process.env.DATABASE_URL) : undefined;
  drop = fresh === undefined ? undefined : () => fresh.drop();
  const config = loadConfig({
    DATA_DIR: dataDir,
    SITE_URL: 'http://pay.test',
    EDGE_SECRET,
    JWT_SECRET,
    LOG_LEVEL: 'trace',
    PUBLIC_RATE_LIMIT_PER_MINUTE: '1000000',
    ...(fresh ? { DATABASE_URL: fresh.url } : {}),
    ...(process.env.REDIS_URL ? { REDIS_URL: process.env.REDIS_URL } : {}),
  });
  deps = await createDeps(config, {
    logger: createLogger('trace', capture),
    pgliteDir: 'memory://',
    redisPrefix: `splitline-test-${randomBytes(6).toString('hex')}`,
  });
  app = await buildApp(deps);
  await app.listen({ host: '127.0.0.1', port: 0 });
});

after(async () => {
  await app.close();
  await deps.close();
  await drop?.();
  rmSync(dataDir, { recursive: true, force: true });
});

/** Sends raw bytes and waits for the server to answer and close. */
function rawRequest(text: string): Promise<string> {
  const port = (app.server.address() as net.AddressInfo).port;
  return new Promise((resolve) => {
    const socket = net.connect(port, '127.0.0.1', () => socket.write(text));
    const chunks: Buffer[] = [];
    socket.on('data', (d) => chunks.push(d));
    socket.on('error', () => socket.destroy());
    socket.on('close', () => resolve(Buffer.concat(chunks).toString('latin1')));
    setTimeout(() => socket.destroy(), 3000).unref();
  });
}

test('no credential reaches the logs, on success and error paths alike', async () => {
  // Sign in: the signature travels in the body, the session comes back as a cookie and a CSRF token.
  const account = newAccount();
  const challenge = await call('POST', '/api/auth/challenge', { wallet: account.address });
  assert.equal(challenge.status, 200);
  const signature = await sign(account, challenge.body.typedData);
  secrets.set('login signature', signature);
  const login = await call('POST', '/api/auth/login', { wallet: account.address, nonce: challenge.body.nonce, signature });
  assert.equal(login.status, 200);
  const setCookie = ([] as unknown[]).concat(login.headers['set-cookie']).map(String).find((c) => c.startsWith('cb_auth_token='))!;
  const cookie = setCookie.split(';')[0]!;
  secrets.set('session cookie', cookie.slice('cb_auth_token='.length));
  secrets.set('CSRF token', login.body.csrfToken);
  const session = { cookie, 'x-csrf-token': login.body.csrfToken, origin: 'http://pay.test' };

  // A replayed login (the nonce is spent) with the same signature: 401.
  assert.equal((await call('POST', '/api/auth/login', { wallet: account.address, nonce: challenge.body.nonce, signature })).status, 401);

  // Subscription keys handed out by the admin app, used, and a made-up one.
  const sub = await call('POST', '/api/admin/subscriptions', { name: 'logs' }, session);
  assert.equal(sub.status, 201, JSON.stringify(sub.body));
  secrets.set('primary key', sub.body.primaryKey);
  secrets.set('secondary key', sub.body.secondaryKey);
  const unknownKey = `spl_${randomBytes(32).toString('base64url')}`;
  secrets.set('unknown key', unknownKey);
  assert.equal((await call('GET', '/api/receipts', undefined, { 'ocp-apim-subscription-key': sub.body.primaryKey })).status, 200);
  assert.equal((await call('GET', '/api/receipts/missing', undefined, { 'ocp-apim-subscription-key': sub.body.secondaryKey })).status, 404);
  assert.equal((await call('GET', '/api/receipts', undefined, { 'ocp-apim-subscription-key': unknownKey })).status, 401);
  assert.equal((await call('GET', '/api/receipts', undefined, { 'ocp-apim-subscription-key': sub.body.primaryKey, 'x-edge-secret': `${EDGE_SECRET}x` })).status, 403);

  // A rotated-away key is refused afterwards.
  const rotated = await call('POST', `/api/admin/subscriptions/${sub.body.id}/rotate`, { key: 'primary' }, session);
  assert.equal(rotated.status, 200);
  secrets.set('rotated key', rotated.body.key);
  assert.equal((await call('GET', '/api/receipts', undefined, { 'ocp-apim-subscription-key': sub.body.primaryKey })).status, 401);

  // A webhook endpoint: its signing secret is answered once.
  const hook = await call('POST', '/api/admin/webhooks', { url: 'https://93.184.216.34/hook' }, session);
  assert.equal(hook.status, 201, JSON.stringify(hook.body));
  secrets.set('webhook secret', hook.body.secret);

  // A wrong CSRF token and a forged session.
  assert.equal((await call('POST', '/api/admin/webhooks', { url: 'https://93.184.216.34/x' }, { ...session, 'x-csrf-token': `${login.body.csrfToken}x` })).status, 403);
  assert.equal((await call('GET', '/api/auth/me', undefined, { cookie: `${cookie}tampered` })).status, 401);

  // A 500: the endpoint insert fails in the database, with the new signing secret among its parameters.
  await deps.database.db.execute(sql.raw('alter table webhook_endpoints add constraint redaction_test_refuses check (false) not valid'));
  const failed = await call('POST', '/api/admin/webhooks', { url: 'https://93.184.216.34/fails' }, session);
  assert.equal(failed.status, 500, JSON.stringify(failed.body));
  await deps.database.db.execute(sql.raw('alter table webhook_endpoints drop constraint redaction_test_refuses'));

  // Before routing, on a real socket: oversized headers and malformed HTTP carrying the credentials.
  const credentials = `Ocp-Apim-Subscription-Key: ${rotated.body.key}\r\nCookie: ${cookie}\r\nX-Csrf-Token: ${login.body.csrfToken}\r\nX-Edge-Secret: ${EDGE_SECRET}\r\n`;
  assert.match(await rawRequest(`GET /api/receipts HTTP/1.1\r\nHost: x\r\n${credentials}X-Big: ${'a'.repeat(20_000)}\r\n\r\n`), /^HTTP\/1\.1 431/);
  assert.match(await rawRequest(`GET /api/receipts HTTP/1.1\r\n${credentials}Broken header line\r\n\r\n`), /^HTTP\/1\.1 400/);

  await call('POST', '/api/auth/logout', {}, session);

  const text = lines.join('\n');
  for (const [what, secret] of secrets) {
    assert.ok(secret.length >= 16, `${what} is a real secret`);
    assert.ok(!text.includes(secret), `the ${what} appears in the logs`);
  }
  assert.doesNotMatch(text, /whsec_/, 'no webhook signing secret, not even the one of the failed insert');
  // The check is not vacuous: the log holds the request lines, the 500 and the client errors.
  assert.ok(lines.length >= 15, `only ${lines.length} log lines`);
  assert.match(text, /"msg":"request"/);
  assert.match(text, /"msg":"unhandled error"/);
  assert.match(text, /Failed query: insert into \\"webhook_endpoints\\"/, 'the failed query is logged, without its values');
  assert.match(text, /params: \[redacted\]/);
  assert.match(text, /"msg":"client error"/);
});

test('the error serializer strips bound SQL values but keeps the query and the cause', async () => {
  const { serializeError } = await import('../../src/logger.ts');
  const wallet = randomWallet();
  const cause = Object.assign(new Error('new row violates check constraint'), { code: '23514' });
  const queryError = Object.assign(new Error(`Failed query: insert into "t" ("a", "b") values ($1, $2)\nparams: ${wallet},whsec_abc`), {
    query: 'insert into "t" ("a", "b") values ($1, $2)',
    params: [wallet, 'whsec_abc'],
    cause,
  });
  const out = serializeError(queryError) as Record<string, unknown>;
  const json = JSON.stringify(out);
  assert.doesNotMatch(json, /whsec_abc/);
  assert.ok(!json.includes(wallet));
  assert.match(String(out.message), /Failed query: insert into "t"/);
  assert.match(String(out.message), /violates check constraint/, 'the cause is kept');
  assert.equal(out.params, '[redacted]');
});
