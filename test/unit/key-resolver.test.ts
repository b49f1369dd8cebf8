/**
 * The keys a resolver has seen, remembered in DATA_DIR across restarts as hashes: honoured while
 * the database is unreachable (within the stale window), never trusted while it answers, dropped
 * when this process sees a revocation. The reachable database is PGlite in memory; the unreachable
 * one is PostgreSQL on a loopback port nothing listens on, opened degraded as the server opens it.
 */
import assert from 'node:assert/strict';
import { existsSync, mkdtempSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { after, before, describe, test } from 'node:test';
import { pino } from 'pino';
import { openDatabase, type Database } from '../../src/db/client.ts';
import { isDbDown } from '../../src/lib/db-errors.ts';
import { DatabaseUnavailable } from '../../src/lib/errors.ts';
import { DEFAULT_STALE_MS, KeyResolver } from '../../src/gateway/key-resolver.ts';
import { generateKey, hashKey } from '../../src/gateway/keys.ts';
import { createSubscription, revokeSubscription } from '../../src/gateway/subscriptions.ts';
import { randomWallet } from '../helpers/app.ts';
import { until } from '../helpers/wait.ts';

const silent = pino({ level: 'silent' });
let up: Database;
let down: Database;
const dirs: string[] = [];

/** A loopback port with nothing listening on it. */
async function closedPort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const srv = createServer();
    srv.once('error', reject);
    srv.listen(0, '127.0.0.1', () => {
      const addr = srv.address();
      srv.close(() => resolve(typeof addr === 'object' && addr !== null ? addr.port : 0));
    });
  });
}

function seenFile(): string {
  const dir = mkdtempSync(path.join(tmpdir(), 'splitline-keys-seen-'));
  dirs.push(dir);
  return path.join(dir, 'keys-seen.json');
}

async function newKey(): Promise<{ key: string; id: string; wallet: string }> {
  const wallet = randomWallet();
  const sub = await createSubscription(up.db, { wallet, maxActive: 1_000 });
  return { key: sub.primaryKey, id: sub.id, wallet };
}

describe('KeyResolver: keys seen, remembered across restarts', () => {
  before(async () => {
    up = await openDatabase({ dataDir: 'memory://' });
    down = await openDatabase({ databaseUrl: `postgresql://postgres@127.0.0.1:${await closedPort()}/none`, degradedStart: { logger: silent } });
  });

  after(async () => {
    await up?.close();
    await down?.close();
    for (const d of dirs) rmSync(d, { recursive: true, force: true });
  });

  test('the file holds the hash, principal and confirmation time, never the key, readable by its owner alone', async () => {
    const file = seenFile();
    const { key, id, wallet } = await newKey();
    const resolver = await KeyResolver.open(up.db, { ttlMs: 5_000, file, logger: silent });
    const at = Date.now();
    assert.equal((await resolver.resolve(key, at))?.subscriptionId, id);
    // An unknown key is remembered in memory (as refused), never in the file.
    assert.equal(await resolver.resolve(generateKey(), at), null);
    await resolver.close();

    const text = readFileSync(file, 'utf8');
    assert.ok(!text.includes(key), 'no plaintext key in the file');
    assert.equal(statSync(file).mode & 0o777, 0o600);
    assert.ok(!existsSync(`${file}.tmp`), 'the temporary file was renamed into place');
    const doc = JSON.parse(text);
    assert.equal(doc.version, 1);
    assert.equal(doc.keys.length, 1);
    assert.deepEqual(Object.keys(doc.keys[0]).sort(), ['confirmedAt', 'hash', 'rateLimitPerMinute', 'scopes', 'subscriptionId', 'wallet']);
    assert.equal(doc.keys[0].hash, hashKey(key));
    assert.equal(doc.keys[0].wallet, wallet);
    assert.equal(doc.keys[0].confirmedAt, at);
  });

  test('after a restart with the database unreachable, a key confirmed within the stale window is honoured', async () => {
    const file = seenFile();
    const { key, id } = await newKey();
    const first = await KeyResolver.open(up.db, { ttlMs: 5_000, file, logger: silent });
    const confirmed = Date.now();
    await first.resolve(key, confirmed);
    await first.close();

    const later = confirmed + DEFAULT_STALE_MS - 60_000;
    const restarted = await KeyResolver.open(down.db, { ttlMs: 5_000, file, logger: silent, now: () => later });
    const principal = await restarted.resolve(key, later);
    assert.equal(principal?.subscriptionId, id);
    assert.ok(principal?.scopes.has('receipts:write'));
    // A key it never saw: the database cannot say, so 503, not 401.
    await assert.rejects(restarted.resolve(generateKey(), later), (err: unknown) => err instanceof DatabaseUnavailable && isDbDown(err));
    // Past the stale window the remembered key is no longer honoured.
    await assert.rejects(restarted.resolve(key, confirmed + DEFAULT_STALE_MS + 1), DatabaseUnavailable);
    await restarted.close();

    const tooLate = await KeyResolver.open(down.db, { ttlMs: 5_000, file, logger: silent, now: () => confirmed + DEFAULT_STALE_MS + 1 });
    await assert.rejects(tooLate.resolve(key, confirmed + DEFAULT_STALE_MS + 1), DatabaseUnavailable);
    await tooLate.close();
    assert.deepEqual(JSON.parse(readFileSync(file, 'utf8')).keys, [], 'an entry past the stale window is dropped from the file');
  });

  test('a remembered key is never trusted while the database answers: revoked elsewhere, it is refused and forgotten', async () => {
    const file = seenFile();
    const { key, id } = await newKey();
    const first = await KeyResolver.open(up.db, { ttlMs: 60_000, file, logger: silent });
    await first.resolve(key);
    await first.close();
    await revokeSubscription(up.db, id);

    // Restarted within the TTL of the first lookup: still asks the database.
    const restarted = await KeyResolver.open(up.db, { ttlMs: 60_000, file, logger: silent, saveDelayMs: 0 });
    assert.equal(await restarted.resolve(key), null);
    await until(() => JSON.parse(readFileSync(file, 'utf8')).keys.length === 0, 5_000, 'the revoked key to leave the file');
    await restarted.close();
  });

  test('a revocation seen by this process drops the key from the file at once', async () => {
    const file = seenFile();
    const a = await newKey();
    const b = await newKey();
    const resolver = await KeyResolver.open(up.db, { ttlMs: 5_000, file, logger: silent, saveDelayMs: 60_000 });
    await resolver.resolve(a.key);
    await resolver.resolve(b.key);
    await resolver.close();

    const running = await KeyResolver.open(up.db, { ttlMs: 5_000, file, logger: silent, saveDelayMs: 60_000 });
    const { revokedHashes } = await revokeSubscription(up.db, a.id);
    running.forget(revokedHashes);
    // Without waiting for the 60 s debounce, nor for close().
    await until(() => JSON.parse(readFileSync(file, 'utf8')).keys.length === 1, 5_000, 'the revoked key to leave the file');
    assert.equal(JSON.parse(readFileSync(file, 'utf8')).keys[0].hash, hashKey(b.key));

    const restartedDown = await KeyResolver.open(down.db, { ttlMs: 5_000, file, logger: silent });
    await assert.rejects(restartedDown.resolve(a.key), DatabaseUnavailable);
    assert.equal((await restartedDown.resolve(b.key))?.subscriptionId, b.id);
    await restartedDown.close();
    await running.close();
  });

  test('an unreadable file or malformed entries start without them, and the file is rewritten', async () => {
    const file = seenFile();
    writeFileSync(file, '{not json', { mode: 0o600 });
    const fromGarbage = await KeyResolver.open(down.db, { ttlMs: 5_000, file, logger: silent });
    await assert.rejects(fromGarbage.resolve(generateKey()), DatabaseUnavailable);
    await fromGarbage.close();

    const { key, id } = await newKey();
    const good = { hash: hashKey(key), subscriptionId: id, wallet: '0xabc', scopes: ['receipts:read'], rateLimitPerMinute: 60, confirmedAt: Date.now() };
    const bad = [{ ...good, hash: key }, { ...good, hash: hashKey(generateKey()), scopes: 'receipts:read' }, null, 7];
    writeFileSync(file, JSON.stringify({ version: 1, keys: [good, ...bad] }), { mode: 0o600 });
    const resolver = await KeyResolver.open(down.db, { ttlMs: 5_000, file, logger: silent, saveDelayMs: 0 });
    assert.equal((await resolver.resolve(key))?.subscriptionId, id);
    await until(() => JSON.parse(readFileSync(file, 'utf8')).keys.length === 1, 5_000, 'the malformed entries to be dropped');
    assert.ok(!readFileSync(file, 'utf8').includes(key), 'an entry carrying a plaintext key is never written back');
    await resolver.close();
  });
});
