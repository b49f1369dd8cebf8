import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { randomWallet, type TestApp, useTestApp } from './helpers/app.ts';
import { admin, newAccount, signIn, type Session } from './helpers/session.ts';

const PLATFORM = '0x000000000000000000000000000000000000beef';
let t: TestApp;
const superAccount = newAccount();
useTestApp({ SUPERADMIN_WALLETS: superAccount.address, WEBHOOK_ALLOW_PRIVATE: 'false' }, (app) => (t = app));

const recipients = (wallet: string) => [
  { address: wallet, sharesBps: 9950 },
  { address: PLATFORM, sharesBps: 50 },
];

async function merchantWithSplit(): Promise<Session> {
  const s = await signIn(t);
  const res = await admin(t, s, 'POST', '/api/split/deploy', { recipients: recipients(s.wallet) });
  assert.equal(res.status, 200, JSON.stringify(res.body));
  return s;
}

async function receiptOf(s: Session, id: string, totalUsd = 10) {
  const key = await t.key(s.wallet);
  const res = await t.call(key, 'POST', '/api/receipts', { id, lineItems: [{ label: 'Thing', priceUsd: totalUsd }], totalUsd });
  assert.equal(res.status, 201);
  return key;
}

describe('POST /api/shop/config', () => {
  test('saves settings the developer API then reads', async () => {
    const s = await signIn(t);
    const res = await admin(t, s, 'POST', '/api/shop/config', {
      processingFeePct: 2.5,
      name: 'Corner Café',
      allowedEmbedOrigins: ['https://shop.example'],
      taxJurisdictions: [{ code: 'CA', rate: 0.0725, components: ['state'] }],
    });
    assert.equal(res.status, 200);
    assert.equal(res.body.config.processingFeePct, 2.5);
    const key = await t.key(s.wallet);
    const read = await t.call(key, 'GET', '/api/shop/config');
    assert.equal(read.body.config.name, 'Corner Café');
    assert.deepEqual(read.body.config.taxJurisdictions, [{ code: 'CA', rate: 0.0725, components: ['state'] }]);
  });
  test('refuses a bad processingFeePct', async () => {
    const s = await signIn(t);
    for (const bad of [-1, 101, 1.234, '2']) {
      const res = await admin(t, s, 'POST', '/api/shop/config', { processingFeePct: bad });
      assert.equal(res.status, 400, String(bad));
      assert.equal(res.body.error, 'invalid_input');
    }
  });
});

describe('POST /api/split/deploy', () => {
  test('stores once, then answers idempotently with the stored split', async () => {
    const s = await signIn(t);
    const first = await admin(t, s, 'POST', '/api/split/deploy', { recipients: recipients(s.wallet) });
    assert.equal(first.status, 200);
    assert.deepEqual(first.body, { ok: true, split: { address: null, recipients: recipients(s.wallet), version: 1 } });
    const second = await admin(t, s, 'POST', '/api/split/deploy', { recipients: [{ address: s.wallet, sharesBps: 10000 }] });
    assert.equal(second.status, 200);
    assert.equal(second.body.idempotent, true);
    assert.deepEqual(second.body.split.recipients, recipients(s.wallet));
    const key = await t.key(s.wallet);
    assert.deepEqual((await t.call(key, 'GET', '/api/split/deploy')).body.split.recipients, recipients(s.wallet));
  });
  test('a given splitAddress is stored after validation', async () => {
    const s = await signIn(t);
    const addr = randomWallet();
    const bad = await admin(t, s, 'POST', '/api/split/deploy', { splitAddress: '0x12', recipients: recipients(s.wallet) });
    assert.equal(bad.status, 400);
    const ok = await admin(t, s, 'POST', '/api/split/deploy', { splitAddress: addr, recipients: recipients(s.wallet) });
    assert.equal(ok.body.split.address, addr);
  });
  test('recipient validation', async () => {
    const s = await signIn(t);
    const w = s.wallet;
    for (const [name, r] of [
      ['sum below 10000', [{ address: w, sharesBps: 9000 }, { address: PLATFORM, sharesBps: 50 }]],
      ['duplicate address', [{ address: w, sharesBps: 4975 }, { address: w, sharesBps: 4975 }, { address: PLATFORM, sharesBps: 50 }]],
      ['zero share', [{ address: w, sharesBps: 0 }, { address: randomWallet(), sharesBps: 9950 }, { address: PLATFORM, sharesBps: 50 }]],
      ['bad address', [{ address: '0xnope', sharesBps: 9950 }, { address: PLATFORM, sharesBps: 50 }]],
      ['platform missing', [{ address: w, sharesBps: 10000 }]],
      ['platform share wrong', [{ address: w, sharesBps: 9900 }, { address: PLATFORM, sharesBps: 100 }]],
      ['empty', []],
    ] as const) {
      const res = await admin(t, s, 'POST', '/api/split/deploy', { recipients: r });
      assert.equal(res.status, 400, name);
      assert.equal(res.body.error, 'invalid_input', name);
    }
  });
});

describe('POST /api/receipts/refund', () => {
  test('each error code', async () => {
    const s = await signIn(t);
    const buyer = randomWallet();
    const cases: [Record<string, unknown>, string][] = [
      [{ wallet: s.wallet, buyer, usd: 1 }, 'missing_receipt_id'],
      [{ receiptId: 'x', wallet: 'nope', buyer, usd: 1 }, 'invalid_wallet'],
      [{ receiptId: 'x', wallet: s.wallet, buyer: '0x1', usd: 1 }, 'invalid_buyer'],
      [{ receiptId: 'x', wallet: s.wallet, buyer, usd: -1 }, 'invalid_usd'],
      [{ receiptId: 'x', wallet: s.wallet, buyer, usd: 'ten' }, 'invalid_usd'],
      [{ receiptId: 'x', wallet: s.wallet, buyer, usd: 0 }, 'invalid_usd'],
    ];
    for (const [body, code] of cases) {
      const res = await admin(t, s, 'POST', '/api/receipts/refund', body);
      assert.equal(res.status, 400, code);
      assert.equal(res.body.error, code);
    }
  });

  test('partial then full refund: logged, history updated, refunded; more than paid is refused', async () => {
    const s = await signIn(t);
    const key = await receiptOf(s, 'rf-1', 10);
    const buyer = randomWallet();
    const part = await admin(t, s, 'POST', '/api/receipts/refund', {
      receiptId: 'rf-1', wallet: s.wallet, buyer, usd: 4, items: [{ label: 'Thing', priceUsd: 4, qty: 1 }],
    });
    assert.equal(part.status, 200);
    assert.equal(part.body.ok, true);
    assert.notEqual((await t.call(key, 'GET', '/api/receipts/rf-1')).body.status, 'refunded');
    const over = await admin(t, s, 'POST', '/api/receipts/refund', { receiptId: 'rf-1', wallet: s.wallet, buyer, usd: 6.01 });
    assert.equal(over.status, 400);
    assert.equal(over.body.error, 'invalid_usd');
    // A transaction hash is checked on the chain (test/chain/refunds.test.ts); this app has none.
    const unverifiable = await admin(t, s, 'POST', '/api/receipts/refund', {
      receiptId: 'rf-1', wallet: s.wallet, buyer, usd: 6, txHash: '0x' + 'ab'.repeat(32),
    });
    assert.equal(unverifiable.status, 503);
    assert.equal(unverifiable.body.error, 'chain_unavailable');
    const rest = await admin(t, s, 'POST', '/api/receipts/refund', { receiptId: 'rf-1', wallet: s.wallet, buyer, usd: 6 });
    assert.equal(rest.status, 200);
    const detail = await t.call(key, 'GET', '/api/receipts/rf-1');
    assert.equal(detail.body.status, 'refunded');
    const history = detail.body.statusHistory.map((h: { status: string }) => h.status);
    assert.deepEqual(history, ['pending', 'refund_partial', 'refunded']);
    const entries = await admin(t, s, 'GET', '/api/receipts/rf-1/refunds');
    assert.deepEqual(entries.body.refunds.map((r: { usd: number }) => r.usd), [4, 6]);
    const more = await admin(t, s, 'POST', '/api/receipts/refund', { receiptId: 'rf-1', wallet: s.wallet, buyer, usd: 0.01 });
    assert.equal(more.status, 400);
  });

  test("one merchant cannot refund or read another merchant's receipt", async () => {
    const owner = await signIn(t);
    await receiptOf(owner, 'mine', 5);
    const other = await signIn(t);
    const refund = await admin(t, other, 'POST', '/api/receipts/refund', {
      receiptId: 'mine', wallet: owner.wallet, buyer: randomWallet(), usd: 1,
    });
    assert.equal(refund.status, 403);
    assert.equal(refund.body.error, 'forbidden');
    const asSelf = await admin(t, other, 'POST', '/api/receipts/refund', {
      receiptId: 'mine', wallet: other.wallet, buyer: randomWallet(), usd: 1,
    });
    assert.equal(asSelf.status, 404);
    const read = await admin(t, other, 'GET', '/api/receipts/mine');
    assert.equal(read.status, 404);
    const own = await admin(t, owner, 'GET', '/api/receipts/mine');
    assert.equal(own.status, 200, 'the admin app reads its own receipts through the session');
  });
});

describe('POST /api/receipts/terminal', () => {
  test('split_required before a split; invalid_amount for a bad amount', async () => {
    const s = await signIn(t);
    const res = await admin(t, s, 'POST', '/api/receipts/terminal', { amountUsd: 5 });
    assert.equal(res.status, 403);
    assert.equal(res.body.error, 'split_required');
    const m = await merchantWithSplit();
    for (const bad of [undefined, 0, -5, 1.001, '5']) {
      const r = await admin(t, m, 'POST', '/api/receipts/terminal', { amountUsd: bad });
      assert.equal(r.status, 400, String(bad));
      assert.equal(r.body.error, 'invalid_amount');
    }
  });

  test('adds the tax line, belongs to the signed-in wallet whatever wallet header is sent', async () => {
    const m = await merchantWithSplit();
    const spoof = randomWallet();
    const res = await admin(
      t, m, 'POST', '/api/receipts/terminal',
      { amountUsd: 20, label: 'Haircut', taxRate: 0.0825, jurisdictionCode: 'TX', taxComponents: ['state'] },
      { 'x-wallet': spoof, wallet: spoof },
    );
    assert.equal(res.status, 200);
    assert.equal(res.body.ok, true);
    const r = res.body.receipt;
    assert.equal(r.status, 'generated');
    assert.equal(r.totalUsd, 21.65);
    assert.deepEqual(r.lineItems, [
      { label: 'Haircut', priceUsd: 20 },
      { label: 'Tax (TX)', priceUsd: 1.65 },
    ]);
    assert.match(r.paymentUrl, /^http:\/\/pay\.test\/pay\/pos_/);
    const key = await t.key(m.wallet);
    assert.equal((await t.call(key, 'GET', `/api/receipts/${r.receiptId}`)).status, 200);
    const spoofKey = await t.key(spoof);
    assert.equal((await t.call(spoofKey, 'GET', `/api/receipts/${r.receiptId}`)).status, 404);
  });
});

describe('sensitive statuses on POST /api/receipts/status', () => {
  test('need the merchant session and CSRF; tracking never needs them', async () => {
    const s = await signIn(t);
    const key = await receiptOf(s, 'sens-1', 3);
    const body = { receiptId: 'sens-1', wallet: s.wallet, status: 'checkout_success' };
    assert.equal((await t.call(null, 'POST', '/api/receipts/status', body)).status, 403);
    const noCsrf = await t.call(null, 'POST', '/api/receipts/status', body, { cookie: s.cookie });
    assert.equal(noCsrf.status, 403);
    const ok = await admin(t, s, 'POST', '/api/receipts/status', body);
    assert.equal(ok.status, 200);
    assert.deepEqual(ok.body, { ok: true });
    assert.equal((await t.call(key, 'GET', '/api/receipts/sens-1')).body.status, 'checkout_success');
    const other = await signIn(t);
    const foreign = await admin(t, other, 'POST', '/api/receipts/status', { ...body, status: 'refund_requested' });
    assert.equal(foreign.status, 403);
  });
});

describe('subscriptions from the admin app', () => {
  test('create shows keys once; list hides them; rotate and revoke take effect', async () => {
    const s = await signIn(t);
    const created = await admin(t, s, 'POST', '/api/admin/subscriptions', { product: 'readonly', name: 'POS' });
    assert.equal(created.status, 201);
    assert.match(created.body.primaryKey, /^spl_/);
    assert.match(created.body.secondaryKey, /^spl_/);
    const list = await admin(t, s, 'GET', '/api/admin/subscriptions');
    assert.equal(list.body.subscriptions.length, 1);
    assert.doesNotMatch(JSON.stringify(list.body), /spl_[A-Za-z0-9_-]{20,}/);
    const id = created.body.id;
    assert.equal((await t.call(created.body.primaryKey, 'GET', '/api/receipts')).status, 200);
    const rotated = await admin(t, s, 'POST', `/api/admin/subscriptions/${id}/rotate`, { key: 'primary' });
    assert.equal(rotated.status, 200);
    assert.equal((await t.call(created.body.primaryKey, 'GET', '/api/receipts')).status, 401);
    assert.equal((await t.call(rotated.body.key, 'GET', '/api/receipts')).status, 200);
    assert.equal((await t.call(created.body.secondaryKey, 'GET', '/api/receipts')).status, 200);
    const revoked = await admin(t, s, 'DELETE', `/api/admin/subscriptions/${id}`);
    assert.equal(revoked.status, 200);
    assert.equal((await t.call(rotated.body.key, 'GET', '/api/receipts')).status, 401);
    assert.equal((await t.call(created.body.secondaryKey, 'GET', '/api/receipts')).status, 401);
  });

  test("a merchant cannot manage another wallet's subscriptions; a superadmin can", async () => {
    const a = await signIn(t);
    const b = await signIn(t);
    const created = await admin(t, a, 'POST', '/api/admin/subscriptions', {});
    assert.equal((await admin(t, b, 'DELETE', `/api/admin/subscriptions/${created.body.id}`)).status, 404);
    assert.equal((await admin(t, b, 'POST', '/api/admin/subscriptions', { wallet: a.wallet })).status, 403);
    assert.equal((await admin(t, b, 'POST', '/api/admin/subscriptions', { rateLimitPerMinute: 5 })).status, 403);
    const sup = await signIn(t, superAccount);
    const forA = await admin(t, sup, 'POST', '/api/admin/subscriptions', { wallet: a.wallet, rateLimitPerMinute: 5 });
    assert.equal(forA.status, 201);
    assert.equal(forA.body.rateLimitPerMinute, 5);
  });
});

describe('users: import, profile, heartbeat', () => {
  test('import is superadmin-only and upserts records', async () => {
    const plain = await signIn(t);
    const records = [{ wallet: randomWallet(), displayName: 'Imported', xp: 5, spacePublic: true }];
    assert.equal((await admin(t, plain, 'POST', '/api/admin/users', records)).status, 403);
    const sup = await signIn(t, superAccount);
    const res = await admin(t, sup, 'POST', '/api/admin/users', records);
    assert.equal(res.status, 200);
    assert.equal(res.body.upserted, 1);
  });

  test('profile and heartbeat make a user live in /api/users/live', async () => {
    const s = await signIn(t);
    const prof = await admin(t, s, 'PUT', '/api/users/me', { displayName: 'Live Larry', spacePublic: true, languages: ['en'] });
    assert.equal(prof.status, 200);
    assert.equal(prof.body.displayName, 'Live Larry');
    assert.equal(prof.body.live, false);
    const hb = await admin(t, s, 'POST', '/api/users/heartbeat', { spaceUrl: 'https://space.example/larry', platform: 'web' });
    assert.equal(hb.status, 200);
    assert.equal(hb.body.live, true);
    const key = await t.key(randomWallet());
    const live = await t.call(key, 'GET', '/api/users/live');
    assert.ok(live.body.live.some((u: { wallet: string }) => u.wallet === s.wallet));
    const bad = await admin(t, s, 'PUT', '/api/users/me', { pfpUrl: 'javascript:alert(1)' });
    assert.equal(bad.status, 400);
  });
});

describe('webhook endpoints', () => {
  test('register answers the secret once; list and delete', async () => {
    const s = await signIn(t);
    const res = await admin(t, s, 'POST', '/api/admin/webhooks', { url: 'https://93.184.215.14/hooks', events: ['receipt.completed'] });
    assert.equal(res.status, 201, JSON.stringify(res.body));
    assert.match(res.body.secret, /^whsec_/);
    const list = await admin(t, s, 'GET', '/api/admin/webhooks');
    assert.equal(list.body.webhooks.length, 1);
    assert.equal(list.body.webhooks[0].secret, undefined);
    assert.equal((await admin(t, s, 'DELETE', `/api/admin/webhooks/${res.body.id}`)).status, 200);
    assert.equal((await admin(t, s, 'GET', '/api/admin/webhooks')).body.webhooks.length, 0);
  });
  test('private and non-https targets are refused; loopback only on the dev chain', async () => {
    const s = await signIn(t);
    // CHAIN=dev (this app): a merchant may test against a receiver on this machine. Elsewhere
    // loopback is refused like any private address (test/unit/webhook-targets.test.ts).
    for (const url of ['https://127.0.0.1/x', 'http://localhost:9/x', 'https://[::1]/x']) {
      const res = await admin(t, s, 'POST', '/api/admin/webhooks', { url });
      assert.equal(res.status, 201, `${url}: ${JSON.stringify(res.body)}`);
      assert.equal((await admin(t, s, 'DELETE', `/api/admin/webhooks/${res.body.id}`)).status, 200);
    }
    for (const url of [
      'https://10.1.2.3/x',
      'https://169.254.169.254/latest',
      'https://192.168.1.1/x',
      'http://93.184.215.14/x',
      'https://user:pw@93.184.215.14/x',
      'ftp://93.184.215.14/x',
    ]) {
      const res = await admin(t, s, 'POST', '/api/admin/webhooks', { url });
      assert.equal(res.status, 400, url);
      assert.equal(res.body.error, 'invalid_input', url);
    }
    const badEvent = await admin(t, s, 'POST', '/api/admin/webhooks', { url: 'https://93.184.215.14/x', events: ['receipt.eaten'] });
    assert.equal(badEvent.status, 400);
  });
});
