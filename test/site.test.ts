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
