import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { AppError } from '../src/lib/errors.ts';
import { saveShopConfig, type ShopConfigInput } from '../src/domain/shop.ts';
import { randomWallet, type TestApp, useTestApp } from './helpers/app.ts';

let t: TestApp;
useTestApp({}, (app) => (t = app));

const defaults = { name: null, brandName: 'Splitline', processingFeePct: 0, taxJurisdictions: [], allowedEmbedOrigins: [] };

describe('GET /api/shop/config', () => {
  test('an unconfigured shop answers the defaults', async () => {
    const res = await t.call(await t.key(randomWallet()), 'GET', '/api/shop/config');
    assert.equal(res.status, 200);
    assert.deepEqual(res.body, { config: defaults });
  });

  test('shows what saveShopConfig stored: fee as a percentage, rates as fractions, origins normalised', async () => {
    const wallet = randomWallet();
    await saveShopConfig(t.deps.database.db, wallet, {
      processingFeePct: 2.5,
      name: '  Corner Café ',
      allowedEmbedOrigins: ['https://shop.example/', 'http://localhost:3000', 'https://shop.example'],
      taxJurisdictions: [
        { code: 'CA-LA', rate: 0.095, components: ['state', 'county'] },
        { code: 'OR', rate: 0 },
      ],
    });
    const res = await t.call(await t.key(wallet), 'GET', '/api/shop/config');
    assert.equal(res.status, 200);
    assert.deepEqual(res.body.config, {
      name: 'Corner Café',
      brandName: 'Corner Café',
      processingFeePct: 2.5,
      taxJurisdictions: [
        { code: 'CA-LA', rate: 0.095, components: ['state', 'county'] },
        { code: 'OR', rate: 0, components: [] },
      ],
      allowedEmbedOrigins: ['https://shop.example', 'http://localhost:3000'],
    });
  });

  test('a later save keeps the fields it leaves out; name null clears the name', async () => {
    const wallet = randomWallet();
    const db = t.deps.database.db;
    await saveShopConfig(db, wallet, {
      processingFeePct: 1,
      name: 'Kiosk',
      allowedEmbedOrigins: ['https://a.example'],
      taxJurisdictions: [{ code: 'TX', rate: 0.0625 }],
    });
    const stored = await saveShopConfig(db, wallet, { processingFeePct: 0.25 });
    assert.equal(stored.processingFeeBps, 25);
    assert.equal(stored.name, 'Kiosk');
    await saveShopConfig(db, wallet, { processingFeePct: 0.25, name: null, allowedEmbedOrigins: [] });
    const res = await t.call(await t.key(wallet), 'GET', '/api/shop/config');
    assert.deepEqual(res.body.config, {
      name: null,
      brandName: 'Splitline',
      processingFeePct: 0.25,
      taxJurisdictions: [{ code: 'TX', rate: 0.0625, components: [] }],
      allowedEmbedOrigins: [],
    });
  });

  test("another merchant's configuration is invisible", async () => {
    const configured = randomWallet();
    await saveShopConfig(t.deps.database.db, configured, { processingFeePct: 3, name: 'Mine' });
    const res = await t.call(await t.key(randomWallet()), 'GET', '/api/shop/config');
    assert.deepEqual(res.body.config, defaults);
  });

  test('needs the shop:read scope (403 forbidden) and a key (401)', async () => {
    const key = await t.key(randomWallet(), { scopes: ['inventory:read', 'orders:create'] });
    const res = await t.call(key, 'GET', '/api/shop/config');
    assert.equal(res.status, 403);
    assert.equal(res.body.error, 'forbidden');
    const anonymous = await t.call(null, 'GET', '/api/shop/config');
    assert.equal(anonymous.status, 401);
    assert.equal(anonymous.body.error, 'unauthorized');
  });
});

describe('saveShopConfig validation', () => {
  const cases: [string, ShopConfigInput][] = [
    ['fee above 100', { processingFeePct: 100.5 }],
    ['negative fee', { processingFeePct: -1 }],
    ['fee with three decimals', { processingFeePct: 2.555 }],
    ['fee as a string', { processingFeePct: '2.5' as unknown as number }],
    ['empty name', { processingFeePct: 1, name: '  ' }],
    ['101-character name', { processingFeePct: 1, name: 'n'.repeat(101) }],
    ['origin with a path', { processingFeePct: 1, allowedEmbedOrigins: ['https://shop.example/checkout'] }],
    ['origin with a query', { processingFeePct: 1, allowedEmbedOrigins: ['https://shop.example?x=1'] }],
    ['non-http origin', { processingFeePct: 1, allowedEmbedOrigins: ['ftp://shop.example'] }],
    ['origin that is no URL', { processingFeePct: 1, allowedEmbedOrigins: ['shop.example'] }],
    ['jurisdiction code with a space', { processingFeePct: 1, taxJurisdictions: [{ code: 'CA LA', rate: 0.1 }] }],
    ['33-character jurisdiction code', { processingFeePct: 1, taxJurisdictions: [{ code: 'A'.repeat(33), rate: 0.1 }] }],
    ['rate above 1', { processingFeePct: 1, taxJurisdictions: [{ code: 'CA', rate: 8.25 }] }],
    ['rate with seven decimals', { processingFeePct: 1, taxJurisdictions: [{ code: 'CA', rate: 0.1234567 }] }],
    [
      'codes differing only in case',
      {
        processingFeePct: 1,
        taxJurisdictions: [
          { code: 'ca', rate: 0.1 },
          { code: 'CA', rate: 0.2 },
        ],
      },
    ],
  ];
  for (const [name, input] of cases) {
    test(`refuses ${name} with invalid_input and stores nothing`, async () => {
      const wallet = randomWallet();
      await assert.rejects(
        saveShopConfig(t.deps.database.db, wallet, input),
        (err: unknown) => err instanceof AppError && err.status === 400 && err.code === 'invalid_input',
      );
      const res = await t.call(await t.key(wallet), 'GET', '/api/shop/config');
      assert.deepEqual(res.body.config, defaults);
    });
  }
});
