/**
 * POST and GET /api/admin/split/versions through the real app without a chain (a given
 * splitAddress is stored as given): the rules, the errors, the idempotent retry and what
 * GET /api/split/deploy answers. The chain side (deploying, receipts of two versions) is in
 * test/chain/split-versions.test.ts.
 */
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { randomWallet, type TestApp, useTestApp } from './helpers/app.ts';
import { admin, signIn, type Session } from './helpers/session.ts';

const PLATFORM = '0x000000000000000000000000000000000000beef';
let t: TestApp;
useTestApp({}, (app) => (t = app));

const recipientsOf = (wallet: string, partner?: string) =>
  partner === undefined
    ? [{ address: wallet, sharesBps: 9950 }, { address: PLATFORM, sharesBps: 50 }]
    : [{ address: wallet, sharesBps: 6950 }, { address: partner, sharesBps: 3000 }, { address: PLATFORM, sharesBps: 50 }];

/** A signed-in merchant whose first split is configured at `address`. */
async function merchant(address = randomWallet()): Promise<{ s: Session; first: string }> {
  const s = await signIn(t);
  const res = await admin(t, s, 'POST', '/api/split/deploy', { splitAddress: address, recipients: recipientsOf(s.wallet) });
  assert.equal(res.status, 200, JSON.stringify(res.body));
  return { s, first: address.toLowerCase() };
}

function assertError(res: { status: number; body: any }, status: number, code: string, message?: RegExp) {
  assert.equal(res.status, status, JSON.stringify(res.body));
  assert.equal(res.body.error, code);
  assert.equal(typeof res.body.message, 'string');
  if (message !== undefined) assert.match(res.body.message, message);
}

describe('POST /api/admin/split/versions', () => {
  test('a new version becomes current: GET /api/split/deploy answers it with version 2, the list holds both, newest first', async () => {
    const { s, first } = await merchant();
    const partner = randomWallet();
    const second = randomWallet();
    const before = Date.now();
    const res = await admin(t, s, 'POST', '/api/admin/split/versions', { splitAddress: second, recipients: recipientsOf(s.wallet, partner) });
    assert.equal(res.status, 200, JSON.stringify(res.body));
    assert.equal(res.body.ok, true);
    assert.equal(res.body.idempotent, undefined);
    assert.equal(res.body.version.version, 2);
    assert.equal(res.body.version.address, second);
    assert.equal(res.body.version.current, true);
    assert.ok(res.body.version.startsAt >= before, 'receipts from now on pay into it');
    assert.deepEqual(res.body.version.recipients, recipientsOf(s.wallet, partner));

    const key = await t.key(s.wallet);
    const deploy = await t.call(key, 'GET', '/api/split/deploy');
    assert.deepEqual(deploy.body, { split: { address: second, recipients: recipientsOf(s.wallet, partner), version: 2 } });

    const list = await admin(t, s, 'GET', '/api/admin/split/versions');
    assert.equal(list.status, 200);
    assert.deepEqual(
      list.body.versions.map((v: any) => [v.version, v.address, v.current, v.startsAt === 0]),
      [
        [2, second, true, false],
        [1, first, false, true],
      ],
    );
    // POST /api/split/deploy still answers the stored (now current) split, as the spec says.
    const again = await admin(t, s, 'POST', '/api/split/deploy', { recipients: recipientsOf(s.wallet) });
    assert.equal(again.body.idempotent, true);
    assert.equal(again.body.split.address, second);
    assert.equal(again.body.split.version, 2);
  });

  test('the same recipients as the current version, in any order: the current version with idempotent true, nothing stored', async () => {
    const { s } = await merchant();
    const partner = randomWallet();
    const made = await admin(t, s, 'POST', '/api/admin/split/versions', { splitAddress: randomWallet(), recipients: recipientsOf(s.wallet, partner) });
    assert.equal(made.status, 200);
    const retry = await admin(t, s, 'POST', '/api/admin/split/versions', { recipients: [...recipientsOf(s.wallet, partner)].reverse() });
    assert.equal(retry.status, 200, JSON.stringify(retry.body));
    assert.equal(retry.body.idempotent, true);
    assert.deepEqual(retry.body.version, made.body.version);
    const list = await admin(t, s, 'GET', '/api/admin/split/versions');
    assert.equal(list.body.versions.length, 2);
    // The first version's recipients again are a new version (3), not a return to version 1.
    const back = await admin(t, s, 'POST', '/api/admin/split/versions', { splitAddress: randomWallet(), recipients: recipientsOf(s.wallet) });
    assert.equal(back.body.version.version, 3);
  });

  test('before any split: 403 split_required, and the list is empty', async () => {
    const s = await signIn(t);
    assertError(await admin(t, s, 'POST', '/api/admin/split/versions', { splitAddress: randomWallet(), recipients: recipientsOf(s.wallet) }), 403, 'split_required');
    const list = await admin(t, s, 'GET', '/api/admin/split/versions');
    assert.deepEqual(list.body, { versions: [] });
  });

  test('invalid recipients: 400 invalid_input naming the rule, and the current version is unchanged', async () => {
    const { s, first } = await merchant();
    const cases: [unknown, RegExp][] = [
      [[{ address: s.wallet, sharesBps: 9000 }, { address: PLATFORM, sharesBps: 50 }], /sum to 10000/],
      [[{ address: s.wallet, sharesBps: 10000 }], /platform recipient/],
      [[{ address: s.wallet, sharesBps: 4975 }, { address: s.wallet, sharesBps: 4975 }, { address: PLATFORM, sharesBps: 50 }], /appears twice/],
      [[{ address: '0x123', sharesBps: 9950 }, { address: PLATFORM, sharesBps: 50 }], /address/],
      [[], /non-empty/],
    ];
    for (const [recipients, why] of cases) {
      assertError(await admin(t, s, 'POST', '/api/admin/split/versions', { splitAddress: randomWallet(), recipients }), 400, 'invalid_input', why);
    }
    assertError(await admin(t, s, 'POST', '/api/admin/split/versions', { splitAddress: randomWallet() }), 400, 'invalid_input');
    assertError(await admin(t, s, 'POST', '/api/admin/split/versions', { splitAddress: 'nope', recipients: recipientsOf(s.wallet, randomWallet()) }), 400, 'invalid_input', /splitAddress/);
    const list = await admin(t, s, 'GET', '/api/admin/split/versions');
    assert.deepEqual(list.body.versions.map((v: any) => v.address), [first]);
  });

  test("a contract already registered (another merchant's, or an earlier version of this split): 409 conflict", async () => {
    const other = await merchant();
    const { s, first } = await merchant();
    assertError(await admin(t, s, 'POST', '/api/admin/split/versions', { splitAddress: other.first, recipients: recipientsOf(s.wallet, randomWallet()) }), 409, 'conflict');
    const second = await admin(t, s, 'POST', '/api/admin/split/versions', { splitAddress: randomWallet(), recipients: recipientsOf(s.wallet, randomWallet()) });
    assert.equal(second.status, 200);
    assertError(await admin(t, s, 'POST', '/api/admin/split/versions', { splitAddress: first, recipients: recipientsOf(s.wallet) }), 409, 'conflict', /earlier version/);
  });

  test('without splitAddress on an instance without a chain: 503 chain_unavailable, nothing stored', async () => {
    const { s } = await merchant();
    assertError(await admin(t, s, 'POST', '/api/admin/split/versions', { recipients: recipientsOf(s.wallet, randomWallet()) }), 503, 'chain_unavailable');
    assert.equal((await admin(t, s, 'GET', '/api/admin/split/versions')).body.versions.length, 1);
  });

  test('a subscription key is 401, a missing CSRF token or a foreign origin 403, and nothing is stored', async () => {
    const { s } = await merchant();
    const body = { splitAddress: randomWallet(), recipients: recipientsOf(s.wallet, randomWallet()) };
    assertError(await t.call(await t.key(s.wallet), 'POST', '/api/admin/split/versions', body), 401, 'unauthorized');
    assertError(await t.call(await t.key(s.wallet), 'GET', '/api/admin/split/versions'), 401, 'unauthorized');
    const noCsrf = await t.call(null, 'POST', '/api/admin/split/versions', body, { cookie: s.cookie, origin: 'http://pay.test' });
    assert.equal(noCsrf.status, 403, JSON.stringify(noCsrf.body));
    const foreign = await admin(t, s, 'POST', '/api/admin/split/versions', body, { origin: 'http://evil.test' });
    assert.equal(foreign.status, 403, JSON.stringify(foreign.body));
    const list = await admin(t, s, 'GET', '/api/admin/split/versions');
    assert.equal(list.body.versions.length, 1);
  });

  test("one merchant's versions are its own: another's list never shows them", async () => {
    const a = await merchant();
    await admin(t, a.s, 'POST', '/api/admin/split/versions', { splitAddress: randomWallet(), recipients: recipientsOf(a.s.wallet, randomWallet()) });
    const b = await merchant();
    const list = await admin(t, b.s, 'GET', '/api/admin/split/versions');
    assert.deepEqual(list.body.versions.map((v: any) => v.address), [b.first]);
  });
});
