/**
 * The input limits, through real sockets where the limit lives in Node's HTTP server: body size
 * (413), JSON depth and NUL characters (400), header size (431), request time (408, a slowloris
 * client is cut off), malformed HTTP and URLs (400). Every refusal is {error, message} with the
 * security headers, and the server keeps serving afterwards.
 *
 * The times asserted here are real on purpose: what is under test is the server's own deadline on
 * a real socket, and that a hostile body is refused before it costs real time; no injected clock
 * can stand in for either. Each bound is generous against that deadline or cost.
 */
import assert from 'node:assert/strict';
import net from 'node:net';
import { after, before, describe, test } from 'node:test';
import { BODY_LIMIT, jsonProblem, MAX_HEADER_BYTES, MAX_JSON_DEPTH } from '../../src/http/limits.ts';
import { ConfigError, loadConfig } from '../../src/config.ts';
import { randomWallet, startTestApp, type TestApp } from '../helpers/app.ts';

const TIMEOUT_MS = 500;

let t: TestApp;
let port: number;
let key: string;

before(async () => {
  t = await startTestApp({ REQUEST_TIMEOUT_MS: String(TIMEOUT_MS), PUBLIC_RATE_LIMIT_PER_MINUTE: '1000000' });
  await t.app.listen({ host: '127.0.0.1', port: 0 });
  port = (t.app.server.address() as net.AddressInfo).port;
  key = await t.key(randomWallet());
});
after(async () => {
  await t.close();
});

interface RawAnswer {
  status: number;
  headers: Record<string, string>;
  body: string;
  /** When the server closed the connection, in ms after connecting; undefined if it did not. */
  closedAfterMs: number | undefined;
}

/**
 * Opens a socket, writes `head`, then (if given) one byte of `drip` every `dripMs` until the
 * server answers or closes; gives up after `limitMs`.
 */
function rawRequest(
  head: string | Buffer,
  opts: { drip?: string; dripMs?: number; limitMs?: number; then?: string[] } = {},
): Promise<RawAnswer> {
  return new Promise((resolve, reject) => {
    const started = Date.now();
    const socket = net.connect(port, '127.0.0.1');
    const chunks: Buffer[] = [];
    let closedAfterMs: number | undefined;
    let drip: NodeJS.Timeout | undefined;
    const giveUp = setTimeout(() => socket.destroy(), opts.limitMs ?? 5000);
    socket.on('data', (d) => chunks.push(d));
    socket.on('error', (err) => {
      // The server may reset the socket after answering while the client is still writing.
      if ((err as NodeJS.ErrnoException).code !== 'ECONNRESET' && (err as NodeJS.ErrnoException).code !== 'EPIPE') reject(err);
    });
    socket.on('end', () => {
      closedAfterMs ??= Date.now() - started;
    });
    socket.on('close', () => {
      clearTimeout(giveUp);
      clearInterval(drip);
      const text = Buffer.concat(chunks).toString('latin1');
      const [head, ...rest] = text.split('\r\n\r\n');
      const [statusLine, ...lines] = (head ?? '').split('\r\n');
      const headers: Record<string, string> = {};
      for (const line of lines) {
        const i = line.indexOf(':');
        if (i > 0) headers[line.slice(0, i).toLowerCase()] = line.slice(i + 1).trim();
      }
      resolve({ status: Number(statusLine?.split(' ')[1] ?? 0), headers, body: rest.join('\r\n\r\n'), closedAfterMs });
    });
    socket.on('connect', () => {
      socket.write(head);
      // `then`: the rest of the request, one piece every dripMs.
      const pieces = [...(opts.then ?? [])];
      if (pieces.length > 0) {
        drip = setInterval(() => {
          const next = pieces.shift();
          if (next !== undefined && !socket.destroyed) socket.write(next);
          if (pieces.length === 0) clearInterval(drip);
        }, opts.dripMs ?? 100);
      }
      if (opts.drip !== undefined) {
        drip = setInterval(() => {
          if (!socket.destroyed && socket.writable) socket.write(opts.drip!);
        }, opts.dripMs ?? 100);
      }
    });
  });
}

function assertRefusal(res: { status: number; headers: Record<string, unknown>; body: string }, status: number, code: string): void {
  assert.equal(res.status, status, `${res.status} ${res.body}`);
  assert.match(String(res.headers['content-type']), /^application\/json/);
  const body = JSON.parse(res.body) as Record<string, unknown>;
  assert.deepEqual(Object.keys(body).sort(), ['error', 'message']);
  assert.equal(body.error, code);
  assert.equal(typeof body.message, 'string');
  assert.equal(res.headers['x-content-type-options'], 'nosniff');
  assert.equal(res.headers['x-frame-options'], 'DENY');
  assert.equal(res.headers['content-security-policy'], "default-src 'none'; frame-ancestors 'none'");
}

async function stillServing(): Promise<void> {
  const res = await fetch(`http://127.0.0.1:${port}/healthz`);
  assert.equal(res.status, 200);
}

describe('body size', () => {
  test(`a JSON body over ${BODY_LIMIT} bytes is 413 payload_too_large`, async () => {
    const body = JSON.stringify({ id: 'big', lineItems: [{ label: 'x'.repeat(BODY_LIMIT), priceUsd: 1 }], totalUsd: 1 });
    const res = await t.call(key, 'POST', '/api/receipts', body, { 'content-type': 'application/json' });
    assertRefusal({ ...res, body: JSON.stringify(res.body) }, 413, 'payload_too_large');
  });

  test('a declared length over the limit is refused before the body is read', async () => {
    const res = await rawRequest(
      `POST /api/receipts/status HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: ${100 * 1024 * 1024}\r\n\r\n{`,
      { limitMs: 3000 },
    );
    assertRefusal(res, 413, 'payload_too_large');
    await stillServing();
  });
});

describe('JSON nesting depth and NUL characters', () => {
  const nest = (depth: number) => '['.repeat(depth) + ']'.repeat(depth);

  test('the scanner counts brackets outside strings only, and finds escaped NULs', () => {
    assert.equal(jsonProblem(nest(MAX_JSON_DEPTH), MAX_JSON_DEPTH), null);
    assert.equal(jsonProblem(nest(MAX_JSON_DEPTH + 1), MAX_JSON_DEPTH), 'too_deep');
    assert.equal(jsonProblem(JSON.stringify({ a: '['.repeat(1000) }), MAX_JSON_DEPTH), null);
    assert.equal(jsonProblem(JSON.stringify({ a: 'say \\"[[[[' + '['.repeat(100) }), MAX_JSON_DEPTH), null);
    assert.equal(jsonProblem(JSON.stringify({ a: 'x\u0000y' }), MAX_JSON_DEPTH), 'nul');
    assert.equal(jsonProblem(JSON.stringify({ a: 'a literal \\u0000, not a NUL' }), MAX_JSON_DEPTH), null);
  });

  test(`${MAX_JSON_DEPTH} levels reach the route; ${MAX_JSON_DEPTH + 1} are 400 invalid_input before it`, async () => {
    const ok = await t.call(key, 'POST', '/api/receipts', nest(MAX_JSON_DEPTH), { 'content-type': 'application/json' });
    assert.equal(ok.status, 400);
    assert.doesNotMatch(ok.body.message, /nests deeper/, 'parsed, then refused by the schema');
    const deep = await t.call(key, 'POST', '/api/receipts', nest(MAX_JSON_DEPTH + 1), { 'content-type': 'application/json' });
    assert.equal(deep.status, 400);
    assert.equal(deep.body.error, 'invalid_input');
    assert.match(deep.body.message, /nests deeper than 32 levels/);
  });

  test('100,000 levels (the whole body budget) are refused quickly, on a route taking any JSON', async () => {
    const started = Date.now();
    const res = await t.call(null, 'POST', '/api/receipts/status', nest(100_000), { 'content-type': 'application/json' });
    assert.equal(res.status, 400);
    assert.equal(res.body.error, 'invalid_input');
    // A real-time bound on purpose (see the top): a depth bomb must not cost the server seconds.
    assert.ok(Date.now() - started < 1000, `took ${Date.now() - started} ms`);
  });

  test('a NUL in a JSON string, a path parameter or the query is 400 invalid_input, not a database error', async () => {
    const inBody = await t.call(key, 'POST', '/api/receipts', { id: 'a\u0000b', lineItems: [{ label: 'Tea', priceUsd: 2 }], totalUsd: 2 });
    const inPath = await t.call(key, 'GET', '/api/receipts/a%00b');
    const inQuery = await t.call(key, 'GET', '/api/receipts/status?receiptId=a%00b');
    for (const res of [inBody, inPath, inQuery]) {
      assert.equal(res.status, 400, JSON.stringify(res.body));
      assert.equal(res.body.error, 'invalid_input');
      assert.match(res.body.message, /NUL/);
    }
  });

  test('prototype poisoning stays refused', async () => {
    for (const text of ['{"__proto__":{"admin":true}}', '{"constructor":{"prototype":{"admin":true}}}']) {
      const res = await t.call(null, 'POST', '/api/receipts/status', text, { 'content-type': 'application/json' });
      assert.equal(res.status, 400, text);
      assert.equal(res.body.error, 'invalid_input');
    }
  });
});

describe('header size', () => {
  test(`headers over ${MAX_HEADER_BYTES} bytes are 431 headers_too_large, answered cleanly on a real socket`, async () => {
    const res = await rawRequest(`GET /healthz HTTP/1.1\r\nHost: x\r\nX-Big: ${'a'.repeat(MAX_HEADER_BYTES + 1)}\r\n\r\n`);
    assertRefusal(res, 431, 'headers_too_large');
    assert.equal(res.headers.connection, 'close');
    assert.ok(res.closedAfterMs !== undefined, 'the server closes the connection');
    await stillServing();
  });

  test('headers just under the limit are served', async () => {
    const res = await rawRequest(`GET /healthz HTTP/1.1\r\nHost: x\r\nConnection: close\r\nX-Big: ${'a'.repeat(MAX_HEADER_BYTES - 200)}\r\n\r\n`);
    assert.equal(res.status, 200, res.body);
  });

  test('many small headers adding up over the limit are 431 too', async () => {
    const lines = Array.from({ length: 400 }, (_, i) => `X-H${i}: ${'b'.repeat(50)}\r\n`).join('');
    const res = await rawRequest(`GET /healthz HTTP/1.1\r\nHost: x\r\n${lines}\r\n`);
    assertRefusal(res, 431, 'headers_too_large');
  });
});

describe(`request time (REQUEST_TIMEOUT_MS=${TIMEOUT_MS})`, () => {
  test('a slowloris body (1 byte every 100 ms, never finished) gets 408 and the socket is closed', async () => {
    const res = await rawRequest(
      'POST /api/receipts/status HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: 100000\r\n\r\n{"receiptId":',
      { drip: ' ', dripMs: 100, limitMs: 5000 },
    );
    assertRefusal(res, 408, 'request_timeout');
    assert.ok(res.closedAfterMs !== undefined && res.closedAfterMs < TIMEOUT_MS * 4, `closed after ${res.closedAfterMs} ms`);
    await stillServing();
  });

  test('headers that never end (one header line every 100 ms) get 408 and the socket is closed', async () => {
    const res = await rawRequest('GET /healthz HTTP/1.1\r\nHost: x\r\n', { drip: 'X-Slow: 1\r\n', dripMs: 100, limitMs: 5000 });
    assertRefusal(res, 408, 'request_timeout');
    assert.ok(res.closedAfterMs !== undefined && res.closedAfterMs < TIMEOUT_MS * 4, `closed after ${res.closedAfterMs} ms`);
  });

  test('a connection that sends nothing is closed', async () => {
    const res = await rawRequest('', { limitMs: 5000 });
    assert.ok(res.closedAfterMs !== undefined && res.closedAfterMs < TIMEOUT_MS * 4, `closed after ${res.closedAfterMs} ms`);
  });

  test('a request sent in pieces that arrives within the budget is served', async () => {
    const body = JSON.stringify({ wallet: randomWallet() });
    const res = await rawRequest('POST /api/auth/challenge HTTP/1.1\r\nHost: x\r\nConnection: close\r\n', {
      then: [`Content-Type: application/json\r\nContent-Length: ${body.length}\r\n\r\n`, body.slice(0, 10), body.slice(10)],
      dripMs: 80,
    });
    assert.equal(res.status, 200, res.body);
  });
});

describe('malformed HTTP and URLs', () => {
  test('bytes that are not HTTP are 400 invalid_input', async () => {
    assertRefusal(await rawRequest('HELLO WORLD\r\n\r\n'), 400, 'invalid_input');
  });

  test('two different Content-Length headers are 400 invalid_input (no request smuggling)', async () => {
    const res = await rawRequest('POST /api/receipts/status HTTP/1.1\r\nHost: x\r\nContent-Length: 2\r\nContent-Length: 3\r\n\r\n{}');
    assertRefusal(res, 400, 'invalid_input');
  });

  test('Content-Length with Transfer-Encoding: chunked is 400 invalid_input', async () => {
    const res = await rawRequest('POST /api/receipts/status HTTP/1.1\r\nHost: x\r\nContent-Length: 2\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n');
    assertRefusal(res, 400, 'invalid_input');
  });

  for (const [what, path] of [
    ['invalid percent-encoding', '/api/receipts/%ZZ'],
    ['a truncated UTF-8 sequence', '/api/receipts/%E0%A4%A'],
    [`a path segment over 200 characters`, `/api/receipts/${'x'.repeat(201)}`],
  ] as const) {
    test(`${what} in the path is 400 invalid_input with the usual headers and a correlation id`, async () => {
      const res = await rawRequest(`GET ${path} HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n`);
      assertRefusal(res, 400, 'invalid_input');
      assert.match(res.headers['x-correlation-id'] ?? '', /^[A-Za-z0-9._:-]{8,128}$/);
    });
  }
});

describe('configuration', () => {
  test('REQUEST_TIMEOUT_MS defaults to 30 s and refuses nonsense', () => {
    assert.equal(loadConfig({}).requestTimeoutMs, 30_000);
    assert.equal(loadConfig({ REQUEST_TIMEOUT_MS: '1500' }).requestTimeoutMs, 1500);
    for (const bad of ['0', '50', 'soon', '999999999']) {
      assert.throws(() => loadConfig({ REQUEST_TIMEOUT_MS: bad }), ConfigError, bad);
    }
  });
});
