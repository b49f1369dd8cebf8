import assert from 'node:assert/strict';
import { after, before, beforeEach, describe, test } from 'node:test';
import { users } from '../src/db/schema.ts';
import { InvalidInput } from '../src/lib/errors.ts';
import { SEARCH_SNAPSHOT_MAX_AGE_MS, UserDirectory } from '../src/domain/user-directory.ts';
import { listLiveUsers, searchUsers, searchWindow } from '../src/domain/users.ts';
import type { Db } from '../src/db/client.ts';
import { appWithDatabaseAway, randomWallet, startTestApp, type TestApp } from './helpers/app.ts';

let t: TestApp;
let db: Db;
let key: string;
before(async () => {
  t = await startTestApp();
  db = t.deps.database.db;
  key = await t.key(randomWallet());
});
after(async () => {
  await t.close();
});
// The users directory is shared by every merchant, so each test starts from an empty one.
beforeEach(async () => {
  await db.delete(users);
  // Written past the directory, as another instance would: this process says so, so searches
  // need not wait SEARCH_SNAPSHOT_MAX_AGE_MS to see it.
  t.deps.users.changed();
});

/** A deterministic wallet: 0x followed by n in 40 hex digits. */
const w = (n: number) => '0x' + n.toString(16).padStart(40, '0');
const seed = (records: Record<string, unknown>[], now = Date.now()) => t.deps.users.upsert(records, now);
const search = (qs: string) => t.call(key, 'GET', `/api/users/search?${qs}`);
const wallets = (res: { body: { users: { wallet: string }[] } }) => res.body.users.map((u) => u.wallet);
/** n users with xp n, n-1, ... 1 (wallet w(i) has xp n - i). */
const ladder = (n: number) => Array.from({ length: n }, (_, i) => ({ wallet: w(i), xp: n - i, displayName: `user ${i}` }));

describe('GET /api/users/search', () => {
  test('q matches wallet and displayName, case-insensitively', async () => {
    await seed([
      { wallet: '0xDEADBEEF00000000000000000000000000000001', displayName: 'Zed', xp: 3 },
      { wallet: w(2), displayName: 'Alice Cooper', xp: 2 },
      { wallet: w(3), displayName: 'Bob', xp: 1 },
    ]);
    const byWallet = await search('q=deadBEEF');
    assert.equal(byWallet.status, 200);
    assert.deepEqual(wallets(byWallet), ['0xdeadbeef00000000000000000000000000000001']);
    assert.deepEqual(wallets(await search('q=aLiCe')), [w(2)]);
    assert.deepEqual(wallets(await search('q=nobody')), []);
  });

  test('q treats LIKE metacharacters literally', async () => {
    await seed([
      { wallet: w(1), displayName: '50% off', xp: 4 },
      { wallet: w(2), displayName: '500 club', xp: 3 },
      { wallet: w(3), displayName: 'a_b', xp: 2 },
      { wallet: w(4), displayName: 'axb', xp: 1 },
      { wallet: w(5), displayName: 'back\\slash', xp: 0 },
    ]);
    assert.deepEqual(wallets(await search('q=50%25')), [w(1)]);
    assert.deepEqual(wallets(await search('q=a_b')), [w(3)]);
    assert.deepEqual(wallets(await search('q=k%5Cs')), [w(5)]);
    assert.deepEqual(wallets(await search('q=%25')), [w(1)]);
  });

  test('domains, platforms and languages each need every listed value, ignoring case', async () => {
    await seed([
      { wallet: w(1), xp: 3, domains: ['Music', 'Art'], platforms: ['Twitch', 'YouTube'], languages: ['en', 'FR'] },
      { wallet: w(2), xp: 2, domains: ['music'], platforms: ['twitch'], languages: ['en'] },
      { wallet: w(3), xp: 1, domains: ['Art'], platforms: ['youtube'], languages: ['fr'] },
    ]);
    assert.deepEqual(wallets(await search('domains=music,ART')), [w(1)]);
    assert.deepEqual(wallets(await search('domains=MUSIC')), [w(1), w(2)]);
    assert.deepEqual(wallets(await search('platforms=youtube, twitch')), [w(1)]);
    assert.deepEqual(wallets(await search('languages=fr')), [w(1), w(3)]);
    assert.deepEqual(wallets(await search('languages=fr,en&domains=art&platforms=twitch')), [w(1)]);
    assert.deepEqual(wallets(await search('domains=music,cooking')), []);
    // Stored values keep the case they were imported with.
    assert.deepEqual((await search('domains=art,music')).body.users[0].domains, ['Music', 'Art']);
  });

  test('minXp and maxXp bound xp inclusively', async () => {
    await seed([
      { wallet: w(1), xp: 10 },
      { wallet: w(2), xp: 20 },
      { wallet: w(3), xp: 30 },
    ]);
    assert.deepEqual(wallets(await search('minXp=20')), [w(3), w(2)]);
    assert.deepEqual(wallets(await search('maxXp=20')), [w(2), w(1)]);
    assert.deepEqual(wallets(await search('minXp=15&maxXp=25')), [w(2)]);
    assert.deepEqual(wallets(await search('minXp=20.5')), [w(3)]);
    assert.deepEqual(wallets(await search('minXp=0&maxXp=0')), []);
  });

  test('results are in xp order (ties by wallet), sliced to limit, with total counting every match', async () => {
    await seed([
      { wallet: w(5), xp: 50 },
      { wallet: w(1), xp: 10 },
      { wallet: w(4), xp: 70 },
      { wallet: w(2), xp: 70 },
      { wallet: w(3), xp: 30 },
    ]);
    const all = await search('');
    assert.deepEqual(wallets(all), [w(2), w(4), w(5), w(3), w(1)]);
    assert.equal(all.body.total, 5);
    const two = await search('limit=2');
    assert.deepEqual(wallets(two), [w(2), w(4)]);
    assert.equal(two.body.total, 5);
    const filtered = await search('limit=1&maxXp=50');
    assert.deepEqual(wallets(filtered), [w(5)]);
    assert.equal(filtered.body.total, 3);
  });

  test('each user carries every field; missing values are null', async () => {
    const now = Date.now();
    await seed(
      [
        {
          wallet: w(1),
          displayName: 'Full',
          pfpUrl: 'https://img.example/p.png',
          xp: 9,
          live: true,
          spacePublic: true,
          lastSeen: now - 1000,
          lastHeartbeat: now - 1000,
          domains: ['art'],
          platforms: ['twitch'],
          languages: ['en'],
        },
        { wallet: w(2), xp: 1 },
      ],
      now,
    );
    const res = await search('');
    assert.deepEqual(res.body, {
      users: [
        {
          wallet: w(1),
          displayName: 'Full',
          pfpUrl: 'https://img.example/p.png',
          xp: 9,
          live: true,
          lastSeen: now - 1000,
          lastHeartbeat: now - 1000,
          domains: ['art'],
          platforms: ['twitch'],
          languages: ['en'],
        },
        {
          wallet: w(2),
          displayName: '',
          pfpUrl: null,
          xp: 1,
          live: false,
          lastSeen: null,
          lastHeartbeat: null,
          domains: [],
          platforms: [],
          languages: [],
        },
      ],
      total: 2,
    });
  });

  test('live=true keeps only users meeting the presence rule', async () => {
    const now = Date.now();
    await seed([
      { wallet: w(1), xp: 5, live: true, spacePublic: true, lastHeartbeat: now - 60_000 },
      { wallet: w(2), xp: 4, live: true, spacePublic: true, lastHeartbeat: now - 180_000 },
      { wallet: w(3), xp: 3, live: true, spacePublic: false, lastHeartbeat: now - 1_000 },
      { wallet: w(4), xp: 2, live: false, spacePublic: true, lastHeartbeat: now - 1_000 },
    ]);
    const live = await search('live=true');
    assert.deepEqual(wallets(live), [w(1)]);
    assert.equal(live.body.total, 1);
    const everyone = await search('live=false');
    assert.deepEqual(wallets(everyone), [w(1), w(2), w(3), w(4)]);
    // The live field is the presence rule, not the stored flag.
    assert.deepEqual(
      everyone.body.users.map((u: { live: boolean }) => u.live),
      [true, false, false, false],
    );
  });

  test('the presence window is two minutes, edge included', async () => {
    const now = 1_700_000_000_000;
    const at = (n: number, lastHeartbeat: number) => ({ wallet: w(n), xp: 100 - n, live: true, spacePublic: true, lastHeartbeat });
    await seed([at(1, now), at(2, now - 120_000), at(3, now - 120_001), at(4, now + 5_000), at(5, now + 5_001)], now);
    const res = await searchUsers(t.deps.users, { live: true }, now);
    assert.deepEqual(
      res.users.map((u) => u.wallet),
      [w(1), w(2), w(4)],
    );
    assert.deepEqual(
      (await listLiveUsers(db, now)).map((u) => u.wallet),
      [w(4), w(1), w(2)],
    );
  });

  test('limit defaults to 25 and is clamped to 1..100', async () => {
    await seed(ladder(120));
    const def = await search('');
    assert.equal(def.body.users.length, 25);
    assert.equal(def.body.total, 120);
    assert.deepEqual(wallets(await search('limit=0')), [w(0)]);
    assert.deepEqual(wallets(await search('limit=-7')), [w(0)]);
    assert.equal((await search('limit=500')).body.users.length, 100);
    assert.equal((await search('limit=2.9')).body.users.length, 2);
  });

  test('scan defaults to 400 and is clamped to limit..1000', async () => {
    await seed(ladder(1200));
    assert.equal((await search('')).body.total, 400);
    assert.equal((await search('scan=999')).body.total, 999);
    assert.equal((await search('scan=5000')).body.total, 1000);
    const below = await search('scan=5&limit=10');
    assert.equal(below.body.total, 10);
    assert.equal(below.body.users.length, 10);
    assert.deepEqual(searchWindow({ limit: 100, scan: 1 }), { limit: 100, scan: 100 });
    assert.deepEqual(searchWindow({}), { limit: 25, scan: 400 });
  });

  test('a write made elsewhere (another instance, the CLI) is found once the snapshot has aged', async () => {
    // A directory with its own clock: the snapshot's age is the test's to set.
    let now = 1_000_000;
    const directory = new UserDirectory(db, { now: () => now });
    const found = async (q: string) => (await searchUsers(directory, { q }, now)).users.map((u) => u.wallet);
    await directory.upsert([{ wallet: w(1), displayName: 'before', xp: 1 }]);
    assert.deepEqual(await found('before'), [w(1)]);
    // Past the directory, so nothing here marks the snapshot stale.
    await db.update(users).set({ displayName: 'after' });
    now += SEARCH_SNAPSHOT_MAX_AGE_MS - 1;
    assert.deepEqual(await found('before'), [w(1)], 'the snapshot serves until it is SEARCH_SNAPSHOT_MAX_AGE_MS old');
    now += 1;
    assert.deepEqual(await found('after'), [w(1)], 'then the next search reads the users again');
    assert.deepEqual(await found('before'), []);
  });

  test('a write made through this process is found at once', async () => {
    await seed([{ wallet: w(1), displayName: 'first', xp: 1 }]);
    assert.deepEqual(wallets(await search('q=first')), [w(1)]);
    await seed([{ wallet: w(2), displayName: 'second', xp: 2 }]);
    assert.deepEqual(wallets(await search('q=second')), [w(2)]);
  });

  test('scan bounds what is searched: a match outside the top scan by xp is not found', async () => {
    await seed([...ladder(450), { wallet: w(9999), xp: 0, displayName: 'needle' }]);
    const missed = await search('q=needle');
    assert.equal(missed.status, 200);
    assert.deepEqual(missed.body, { users: [], total: 0 });
    const found = await search('q=needle&scan=1000');
    assert.deepEqual(wallets(found), [w(9999)]);
    assert.equal(found.body.total, 1);
    assert.deepEqual(wallets(await search('q=user 9&scan=10')), [w(9)]);
  });

  for (const bad of ['limit=abc', 'scan=lots', 'minXp=-1', 'maxXp=-0.5', 'minXp=ten', 'live=yes', 'live=1']) {
    test(`refuses ${bad} with 400 invalid_input`, async () => {
      const res = await search(bad);
      assert.equal(res.status, 400);
      assert.equal(res.body.error, 'invalid_input');
      assert.equal(typeof res.body.message, 'string');
    });
  }

  test('the domain function refuses a non-numeric limit or negative xp bound too', async () => {
    await assert.rejects(searchUsers(t.deps.users, { limit: Number.NaN }, Date.now()), InvalidInput);
    await assert.rejects(searchUsers(t.deps.users, { minXp: -1 }, Date.now()), InvalidInput);
  });
});

describe('GET /api/users/live', () => {
  test('lists only users meeting the presence rule, freshest heartbeat first, with every field', async () => {
    const now = Date.now();
    await seed([
      {
        wallet: w(1),
        displayName: 'On air',
        pfpUrl: 'https://img.example/1.png',
        xp: 1,
        live: true,
        spacePublic: true,
        spaceUrl: 'https://space.example/1',
        liveSince: now - 600_000,
        lastHeartbeat: now - 30_000,
        languages: ['en'],
        domains: ['music'],
        platform: 'twitch',
      },
      { wallet: w(2), xp: 2, live: true, spacePublic: true, lastHeartbeat: now - 5_000 },
      { wallet: w(3), xp: 3, live: true, spacePublic: false, lastHeartbeat: now - 5_000 },
      { wallet: w(4), xp: 4, live: true, spacePublic: true, lastHeartbeat: now - 200_000 },
      { wallet: w(5), xp: 5, live: false, spacePublic: true, lastHeartbeat: now - 5_000 },
      { wallet: w(6), xp: 6, live: true, spacePublic: true },
    ]);
    const res = await t.call(key, 'GET', '/api/users/live');
    assert.equal(res.status, 200);
    assert.deepEqual(res.body, {
      live: [
        {
          wallet: w(2),
          displayName: '',
          pfpUrl: null,
          spaceUrl: null,
          liveSince: null,
          lastHeartbeat: now - 5_000,
          languages: [],
          domains: [],
          platform: null,
        },
        {
          wallet: w(1),
          displayName: 'On air',
          pfpUrl: 'https://img.example/1.png',
          spaceUrl: 'https://space.example/1',
          liveSince: now - 600_000,
          lastHeartbeat: now - 30_000,
          languages: ['en'],
          domains: ['music'],
          platform: 'twitch',
        },
      ],
    });
  });

  test('returns at most 200 users', async () => {
    const now = Date.now();
    await seed(
      Array.from({ length: 205 }, (_, i) => ({ wallet: w(i), live: true, spacePublic: true, lastHeartbeat: now - i })),
      now,
    );
    const res = await t.call(key, 'GET', '/api/users/live');
    assert.equal(res.body.live.length, 200);
    assert.equal(res.body.live[0].wallet, w(0));
  });
});

describe('users routes: credentials and degraded mode', () => {
  test('a key without users:read is 403 forbidden; no key is 401', async () => {
    const narrow = await t.key(randomWallet(), { scopes: ['receipts:read', 'split:read'] });
    for (const url of ['/api/users/search', '/api/users/live']) {
      const res = await t.call(narrow, 'GET', url);
      assert.equal(res.status, 403, url);
      assert.equal(res.body.error, 'forbidden');
      const anon = await t.call(null, 'GET', url);
      assert.equal(anon.status, 401, url);
      assert.equal(anon.body.error, 'unauthorized');
    }
  });

  test('with the database unreachable both routes answer 200 degraded', async () => {
    const { app, close } = await appWithDatabaseAway(t, (unreachable) => ({ users: new UserDirectory(unreachable) }));
    try {
      const headers = { 'ocp-apim-subscription-key': key };
      const s = await app.inject({ method: 'GET', url: '/api/users/search?q=x', headers });
      assert.equal(s.statusCode, 200);
      assert.deepEqual(s.json(), { users: [], total: 0, degraded: true, reason: 'database_unavailable' });
      const l = await app.inject({ method: 'GET', url: '/api/users/live', headers });
      assert.equal(l.statusCode, 200);
      assert.deepEqual(l.json(), { live: [], degraded: true, reason: 'database_unavailable' });
    } finally {
      await close();
    }
  });
});

describe('upsertUsers', () => {
  test('lower-cases wallets and replaces the whole record on re-import', async () => {
    const upper = '0xABCDEF0000000000000000000000000000000001';
    await seed([{ wallet: upper, displayName: 'First', xp: 5, pfpUrl: 'http://img.example/a.png', domains: ['art'] }]);
    await seed([{ wallet: upper.toLowerCase(), displayName: 'Second', xp: 7 }]);
    const res = await search('');
    assert.equal(res.body.total, 1);
    const u = res.body.users[0];
    assert.equal(u.wallet, upper.toLowerCase());
    assert.equal(u.displayName, 'Second');
    assert.equal(u.xp, 7);
    assert.equal(u.pfpUrl, null);
    assert.deepEqual(u.domains, []);
  });

  test('a wallet listed twice keeps its last record', async () => {
    const out = await seed([
      { wallet: w(1), xp: 1 },
      { wallet: w(1), xp: 2 },
    ]);
    assert.deepEqual(out, { upserted: 1 });
    assert.equal((await search('')).body.users[0].xp, 2);
  });

  test('writes more than one batch', async () => {
    assert.deepEqual(await seed(ladder(1234)), { upserted: 1234 });
    assert.equal(await db.$count(users), 1234);
    assert.deepEqual(wallets(await search('minXp=1234')), [w(0)]);
  });

  for (const [name, record] of [
    ['a malformed wallet', { wallet: '0x123' }],
    ['a negative xp', { wallet: w(1), xp: -1 }],
    ['a fractional xp', { wallet: w(1), xp: 1.5 }],
    ['xp as a string', { wallet: w(1), xp: '5' }],
    ['a non-http pfpUrl', { wallet: w(1), pfpUrl: 'javascript:alert(1)' }],
    ['an unparseable spaceUrl', { wallet: w(1), spaceUrl: 'not a url' }],
    ['a long tag', { wallet: w(1), domains: ['x'.repeat(65)] }],
    ['a non-string tag', { wallet: w(1), languages: [1] }],
    ['a string for an array', { wallet: w(1), platforms: 'twitch' }],
    ['a string for a boolean', { wallet: w(1), live: 'true' }],
    ['a negative timestamp', { wallet: w(1), lastSeen: -1 }],
    ['a non-object', 'hello'],
  ] as const) {
    test(`refuses ${name}, writing nothing`, async () => {
      await assert.rejects(seed([{ wallet: w(2), xp: 1 }, record as Record<string, unknown>]), (err: unknown) => {
        assert.ok(err instanceof InvalidInput);
        assert.match(err.message, /^users\[1\]/);
        return true;
      });
      assert.equal(await db.$count(users), 0);
    });
  }
});
