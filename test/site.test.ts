import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { randomWallet, startTestApp, type TestApp } from './helpers/app.ts';

let t: TestApp;
before(async () => {
  // Non-default values, so the answer can only come from configuration.
  t = await startTestApp({ CONTAINER_TYPE: 'partner', BRAND_KEY: 'acme-pay' });
});
after(async () => {
  await t.close();
});

test('GET /api/site/container answers the configured container identity to any valid key', async () => {
  for (const scopes of [undefined, [], ['receipts:read' as const]]) {
    const key = await t.key(randomWallet(), scopes === undefined ? {} : { scopes });
    const res = await t.call(key, 'GET', '/api/site/container');
    assert.equal(res.status, 200);
    assert.deepEqual(res.body, { containerType: 'partner', brandKey: 'acme-pay' });
  }
});

test('GET /api/site/container without a valid key is 401', async () => {
  for (const key of [null, 'not-a-key']) {
    const res = await t.call(key, 'GET', '/api/site/container');
    assert.equal(res.status, 401);
    assert.equal(res.body.error, 'unauthorized');
  }
});

test('the root leads to the merchant app, and the OpenAPI server is relative so /docs works from any host name', async () => {
  const root = await t.app.inject({ method: 'GET', url: '/' });
  assert.equal(root.statusCode, 302);
  assert.equal(root.headers.location, '/admin/');
  const doc = (await t.app.inject({ method: 'GET', url: '/openapi.json' })).json();
  assert.equal(doc.servers.length, 1);
  assert.equal(doc.servers[0].url, '/');
});
