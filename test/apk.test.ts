import assert from 'node:assert/strict';
import { request as httpRequest } from 'node:http';
import { after, before, describe, test } from 'node:test';
import { startTestApp, type TestApp } from './helpers/app.ts';
import { startAzurite, type Azurite } from './helpers/azurite.ts';
import { admin, newAccount, signIn, type Session } from './helpers/session.ts';
import { until } from './helpers/wait.ts';

const APK = 'application/vnd.android.package-archive';
const superAccount = newAccount();

/** A small fake APK: a ZIP local-file header followed by distinct bytes. */
function apkBytes(size: number, seed: number): Buffer {
  const b = Buffer.alloc(size);
  for (let i = 0; i < size; i++) b[i] = (i * 31 + seed) & 0xff;
  b.write('PK\x03\x04', 0, 'latin1');
  return b;
}

let azurite: Azurite;
before(async () => {
  azurite = await startAzurite();
});
after(async () => {
  await azurite.stop();
});

for (const store of ['filesystem', 'azure'] as const) {
  describe(`APK distribution on ${store} storage`, () => {
    let t: TestApp;
    let sup: Session;
    let adm: Session;
    let owner: Session;
    before(async () => {
      t = await startTestApp({
        SUPERADMIN_WALLETS: superAccount.address,
        APK_MAX_BYTES: String(64 * 1024),
        ...(store === 'azure' ? { STORAGE_CONNECTION_STRING: azurite.connectionString, APK_CONTAINER: `apks${Date.now()}` } : {}),
      });
      sup = await signIn(t, superAccount);
      owner = await signIn(t);
      const adminAccount = newAccount();
      await admin(t, sup, 'POST', '/api/admin/roles', { wallet: adminAccount.address, role: 'admin' });
      adm = await signIn(t, adminAccount);
      assert.equal(t.deps.blobs.kind, store);
    });
    after(async () => {
      await t.close();
    });

    const upload = (s: Session, app: string, body: Buffer, type = APK) =>
      t.app.inject({
        method: 'PUT',
        url: `/api/admin/apk/${app}`,
        payload: body,
        headers: { cookie: s.cookie, 'x-csrf-token': s.csrfToken, 'content-type': type },
      });
    const download = (s: Session | null, app: string, headers: Record<string, string> = {}) =>
      t.app.inject({ method: 'GET', url: `/api/admin/apk/${app}`, headers: { ...(s ? { cookie: s.cookie } : {}), ...headers } });

    test('a superadmin uploads; an admin downloads the exact bytes with the right headers', async () => {
      const bytes = apkBytes(10_000, 1);
      const up = await upload(sup, 'acme', bytes);
      assert.equal(up.statusCode, 200, up.body);
      assert.equal(up.json().size, 10_000);
      const res = await download(adm, 'acme');
      assert.equal(res.statusCode, 200);
      assert.ok(res.rawPayload.equals(bytes));
      assert.equal(res.headers['content-type'], APK);
      assert.equal(res.headers['content-length'], '10000');
      assert.equal(res.headers['accept-ranges'], 'bytes');
      assert.match(String(res.headers['content-disposition']), /attachment; filename="acme-signed.apk"/);
      assert.ok(res.headers.etag);
      assert.doesNotMatch(res.body.slice(0, 0) + JSON.stringify(res.headers), /127\.0\.0\.1:\d+\/devstoreaccount1|blob\.core/);
    });

    test('roles: no session 401, owner without role 403, admin cannot upload', async () => {
      const none = await download(null, 'acme');
      assert.equal(none.statusCode, 401);
      assert.equal(none.json().error, 'unauthorized');
      const plain = await download(owner, 'acme');
      assert.equal(plain.statusCode, 403);
      assert.equal(plain.json().error, 'forbidden');
      const up = await upload(adm, 'acme', apkBytes(100, 2));
      assert.equal(up.statusCode, 403);
    });

    test('a missing package is 404; malformed names and traversal are refused', async () => {
      const missing = await download(adm, 'nobody');
      assert.equal(missing.statusCode, 404);
      assert.equal(missing.json().error, 'not_found');
      for (const bad of ['..%2F..%2Fetc%2Fpasswd', '..', 'Acme', 'acme.apk', '%2e%2e', 'a'.repeat(65), 'acme%00']) {
        const res = await download(adm, bad);
        assert.ok([400, 404].includes(res.statusCode), `${bad}: ${res.statusCode}`);
        assert.notEqual(res.headers['content-type'], APK, bad);
      }
      const up = await upload(sup, '..%2Fescape', apkBytes(100, 3));
      assert.ok([400, 404].includes(up.statusCode));
    });

    test('ranges, If-None-Match and If-Range', async () => {
      const bytes = apkBytes(5000, 4);
      await upload(sup, 'ranged', bytes);
      const part = await download(adm, 'ranged', { range: 'bytes=10-19' });
      assert.equal(part.statusCode, 206);
      assert.equal(part.headers['content-range'], 'bytes 10-19/5000');
      assert.ok(part.rawPayload.equals(bytes.subarray(10, 20)));
      const tail = await download(adm, 'ranged', { range: 'bytes=-100' });
      assert.equal(tail.statusCode, 206);
      assert.ok(tail.rawPayload.equals(bytes.subarray(4900)));
      const open = await download(adm, 'ranged', { range: 'bytes=4990-' });
      assert.ok(open.rawPayload.equals(bytes.subarray(4990)));
      const bad = await download(adm, 'ranged', { range: 'bytes=6000-7000' });
      assert.equal(bad.statusCode, 416);
      assert.equal(bad.headers['content-range'], 'bytes */5000');
      const etag = String(part.headers.etag);
      assert.equal((await download(adm, 'ranged', { 'if-none-match': etag })).statusCode, 304);
      const stale = await download(adm, 'ranged', { range: 'bytes=0-9', 'if-range': '"stale"' });
      assert.equal(stale.statusCode, 200, 'a stale If-Range gets the whole package');
    });

    test('a body that is not a ZIP, or too large, is refused and the old package stays', async () => {
      const good = apkBytes(2000, 5);
      await upload(sup, 'keep', good);
      const notZip = await upload(sup, 'keep', Buffer.from('MZ this is not an apk at all'));
      assert.equal(notZip.statusCode, 400);
      const tooBig = await upload(sup, 'keep', apkBytes(65 * 1024, 6));
      assert.equal(tooBig.statusCode, 413);
      assert.equal(tooBig.json().error, 'payload_too_large');
      const res = await download(adm, 'keep');
      assert.ok(res.rawPayload.equals(good));
    });

    test('an interrupted upload leaves the old package intact', async () => {
      const good = apkBytes(3000, 7);
      await upload(sup, 'partial', good);
      await t.app.listen({ port: 0, host: '127.0.0.1' });
      const { port } = t.app.server.address() as { port: number };
      // The store's side of the upload: begun once the route passes the bytes on, settled once it
      // has kept or dropped them.
      const blobs = t.deps.blobs;
      const write = blobs.write.bind(blobs);
      let begun = false;
      let settled = false;
      blobs.write = (name, source, opts) => {
        begun = true;
        const stored = write(name, source, opts);
        void stored.then(
          () => (settled = true),
          () => (settled = true),
        );
        return stored;
      };
      try {
        const req = httpRequest({
          host: '127.0.0.1',
          port,
          method: 'PUT',
          path: '/api/admin/apk/partial',
          headers: { cookie: sup.cookie, 'x-csrf-token': sup.csrfToken, 'content-type': APK, 'content-length': 40_000, origin: 'http://pay.test' },
        });
        // Destroyed mid-body, the request fails ("socket hang up"): that is the point.
        req.on('error', () => undefined);
        req.write(apkBytes(10_000, 8));
        await until(() => begun, 10_000, 'the store to receive the upload');
        req.destroy();
        await until(() => settled, 10_000, 'the store to keep or drop the partial upload');
      } finally {
        blobs.write = write;
      }
      const res = await download(adm, 'partial');
      assert.equal(res.statusCode, 200);
      assert.ok(res.rawPayload.equals(good), 'the stored package is the old one');
    });
  });
}

describe('partner container visibility', () => {
  let t: TestApp;
  before(async () => {
    t = await startTestApp({ SUPERADMIN_WALLETS: superAccount.address, CONTAINER_TYPE: 'partner', BRAND_KEY: 'acme' });
  });
  after(async () => {
    await t.close();
  });

  test("another brand is 404 apk_not_visible; the container's own brand is served", async () => {
    const sup = await signIn(t, superAccount);
    const put = await t.app.inject({
      method: 'PUT',
      url: '/api/admin/apk/acme',
      payload: apkBytes(500, 9),
      headers: { cookie: sup.cookie, 'x-csrf-token': sup.csrfToken, 'content-type': APK },
    });
    assert.equal(put.statusCode, 200);
    const own = await t.app.inject({ method: 'GET', url: '/api/admin/apk/acme', headers: { cookie: sup.cookie } });
    assert.equal(own.statusCode, 200);
    const other = await t.app.inject({ method: 'GET', url: '/api/admin/apk/globex', headers: { cookie: sup.cookie } });
    assert.equal(other.statusCode, 404);
    assert.equal(other.json().error, 'apk_not_visible');
  });
});
