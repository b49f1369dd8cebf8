/**
 * Why an attempt got no answer, in plain words (src/webhooks/errors.ts), from Node's error codes;
 * and the codes real failures produce through postWebhook: a closed port, an endpoint that never
 * answers, a self-signed certificate.
 */
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { createServer as createHttpsServer } from 'node:https';
import { createServer as createNetServer, type Server, type Socket } from 'node:net';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { describe, test } from 'node:test';
import { explainDeliveryError, rawFromError, rawTimeout } from '../../src/webhooks/errors.ts';
import { postWebhook } from '../../src/webhooks/send.ts';

describe('error wording', () => {
  const cases: [string, RegExp][] = [
    ['CERT_HAS_EXPIRED: certificate has expired', /^The endpoint's certificate has expired$/],
    ['DEPTH_ZERO_SELF_SIGNED_CERT: self-signed certificate', /^The endpoint's certificate is not trusted \(self-signed\)$/],
    ['SELF_SIGNED_CERT_IN_CHAIN: self-signed certificate in certificate chain', /not trusted \(its chain ends in a self-signed certificate\)/],
    ['UNABLE_TO_VERIFY_LEAF_SIGNATURE: unable to verify the first certificate', /cannot be verified: the server does not send its intermediate certificate/],
    ["ERR_TLS_CERT_ALTNAME_INVALID: Hostname/IP does not match certificate's altnames", /^The endpoint's certificate is for another host name$/],
    ['ECONNREFUSED: connect ECONNREFUSED 127.0.0.1:9', /^Connection refused/],
    ['ENOTFOUND: getaddrinfo ENOTFOUND hooks.example.invalid', /^The host name does not resolve/],
    ['ECONNRESET: socket hang up', /^The endpoint closed the connection before answering$/],
    ['TIMEOUT: timed out after 5000 ms', /^Timed out after 5 s$/],
    ['TIMEOUT: timed out after 2500 ms', /^Timed out after 2\.5 s$/],
    ['PRIVATE_ADDRESS: refused private address 10.0.0.1', /private or loopback address/],
    ['HPE_INVALID_CONSTANT: Parse Error: Expected HTTP/', /^The endpoint's answer was not valid HTTP$/],
  ];
  for (const [raw, sentence] of cases) {
    test(raw.split(':')[0], () => {
      const e = explainDeliveryError(raw);
      assert.ok(e !== null);
      assert.match(e.text, sentence);
      assert.equal(e.code, raw.split(':')[0], 'the raw code stays available');
    });
  }

  test('errors stored before codes were kept are still recognised', () => {
    assert.deepEqual(explainDeliveryError('connect ECONNREFUSED 127.0.0.1:9')?.code, 'ECONNREFUSED');
    assert.equal(explainDeliveryError('timed out after 10000 ms')?.text, 'Timed out after 10 s');
    assert.equal(explainDeliveryError('refused private address 127.0.0.1')?.code, 'PRIVATE_ADDRESS');
  });

  test('an unknown code keeps its message; no error is null', () => {
    assert.deepEqual(explainDeliveryError('EWEIRD: something odd'), { code: 'EWEIRD', text: 'something odd' });
    assert.deepEqual(explainDeliveryError('ERROR: no code at all'), { code: null, text: 'no code at all' });
    assert.equal(explainDeliveryError(null), null);
  });

  test('the raw form keeps Node\'s code', () => {
    const err = Object.assign(new Error('self-signed certificate'), { code: 'DEPTH_ZERO_SELF_SIGNED_CERT' });
    assert.equal(rawFromError(err), 'DEPTH_ZERO_SELF_SIGNED_CERT: self-signed certificate');
    assert.equal(rawFromError(new Error('plain')), 'ERROR: plain');
    assert.equal(rawTimeout(5000), 'TIMEOUT: timed out after 5000 ms');
  });
});

const open = { allowPrivate: true };
const body = '{"type":"webhook.test"}';

async function listen(server: Server | import('node:https').Server): Promise<number> {
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  return (server.address() as { port: number }).port;
}

describe('real failures through postWebhook', () => {
  test('a closed port: Connection refused', async () => {
    const probe = createNetServer();
    const port = await listen(probe);
    await new Promise((r) => probe.close(r));
    const res = await postWebhook(`http://127.0.0.1:${port}/h`, {}, body, { ...open, timeoutMs: 2_000 });
    assert.equal(res.ok, false);
    assert.equal(explainDeliveryError(res.error)?.code, 'ECONNREFUSED');
  });

  test('an answer that never ends: timed out, by one deadline for the whole attempt', async () => {
    const sockets: Socket[] = [];
    const server = createNetServer((s) => {
      sockets.push(s);
      // An answer whose body trickles in a byte at a time: an idle timeout alone would never fire.
      s.write('HTTP/1.1 200 OK\r\ncontent-length: 100000\r\n\r\n');
      const drip = setInterval(() => s.write('.'), 100);
      s.on('close', () => clearInterval(drip));
      s.on('error', () => clearInterval(drip));
    });
    const port = await listen(server);
    const res = await postWebhook(`http://127.0.0.1:${port}/h`, {}, body, { ...open, timeoutMs: 400 });
    for (const s of sockets) s.destroy();
    server.close();
    assert.equal(res.ok, false);
    assert.equal(res.error, 'TIMEOUT: timed out after 400 ms');
    assert.equal(explainDeliveryError(res.error)?.text, 'Timed out after 0.4 s');
  });

  const openssl = (() => {
    try {
      execFileSync('openssl', ['version'], { stdio: 'ignore' });
      return true;
    } catch {
      return false;
    }
  })();

  test('a self-signed certificate: not trusted (self-signed)', { skip: openssl ? false : 'openssl not found' }, async () => {
    const dir = mkdtempSync(path.join(tmpdir(), 'splitline-tls-'));
    try {
      execFileSync(
        'openssl',
        ['req', '-x509', '-newkey', 'rsa:2048', '-nodes', '-days', '2', '-subj', '/CN=127.0.0.1', '-addext', 'subjectAltName=IP:127.0.0.1',
          '-keyout', path.join(dir, 'key.pem'), '-out', path.join(dir, 'cert.pem')],
        { stdio: 'ignore' },
      );
      const server = createHttpsServer({ key: readFileSync(path.join(dir, 'key.pem')), cert: readFileSync(path.join(dir, 'cert.pem')) }, (_req, res) => res.end('ok'));
      const port = await listen(server);
      const res = await postWebhook(`https://127.0.0.1:${port}/h`, {}, body, { ...open, timeoutMs: 5_000 });
      server.close();
      assert.equal(res.ok, false);
      const e = explainDeliveryError(res.error);
      assert.equal(e?.code, 'DEPTH_ZERO_SELF_SIGNED_CERT');
      assert.equal(e?.text, "The endpoint's certificate is not trusted (self-signed)");
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  test('plain http on an https URL: the TLS handshake failed', async () => {
    const server = createNetServer((s) => s.end('HTTP/1.1 400 Bad Request\r\n\r\n'));
    const port = await listen(server);
    const res = await postWebhook(`https://127.0.0.1:${port}/h`, {}, body, { ...open, timeoutMs: 5_000 });
    server.close();
    assert.equal(res.ok, false);
    assert.match(explainDeliveryError(res.error)?.text ?? '', /TLS handshake failed|closed the connection/);
  });
});
