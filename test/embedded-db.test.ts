/**
 * The embedded database in DATA_DIR: created on the first open by a child process (its initdb
 * memory goes with that process), built beside its final place and renamed into it, then opened
 * as an existing database from then on.
 */
import assert from 'node:assert/strict';
import { existsSync, mkdirSync, mkdtempSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { after, test } from 'node:test';
import { openDatabase } from '../src/db/client.ts';
import { createSubscription, listSubscriptions } from '../src/gateway/subscriptions.ts';
import { randomWallet } from './helpers/app.ts';

const dirs: string[] = [];
after(() => {
  for (const d of dirs) rmSync(d, { recursive: true, force: true });
});
function dataDir(): string {
  const d = mkdtempSync(path.join(tmpdir(), 'splitline-embedded-'));
  dirs.push(d);
  return d;
}

test('a fresh DATA_DIR gets a migrated database on the first open, kept by the next', async () => {
  const dir = dataDir();
  const created: string[] = [];
  const wallet = randomWallet();
  const first = await openDatabase({ dataDir: dir, onCreate: (l) => created.push(l) });
  try {
    assert.deepEqual(created, [path.join(dir, 'pglite')]);
    await createSubscription(first.db, { wallet, rateLimitPerMinute: 60 });
  } finally {
    await first.close();
  }
  assert.deepEqual(readdirSync(dir), ['pglite'], 'nothing left beside the database');
  assert.ok(existsSync(path.join(dir, 'pglite', 'PG_VERSION')));

  const second = await openDatabase({ dataDir: dir, onCreate: (l) => created.push(l) });
  try {
    assert.equal(created.length, 1, 'an existing database is opened, not created again');
    const subs = await listSubscriptions(second.db, wallet);
    assert.equal(subs.length, 1, 'what the first open wrote is there');
  } finally {
    await second.close();
  }
});

test('a creation cut off half-way is cleared; one still running elsewhere is left alone', async () => {
  const dir = dataDir();
  // No process has pid 2^22 + 1 (above Linux's pid_max); pid 1 always runs.
  const abandoned = path.join(dir, `pglite.creating-${2 ** 22 + 1}`);
  const running = path.join(dir, 'pglite.creating-1');
  for (const d of [abandoned, running]) {
    mkdirSync(d);
    writeFileSync(path.join(d, 'PG_VERSION'), '17\n');
  }
  const db = await openDatabase({ dataDir: dir });
  await db.close();
  assert.deepEqual(readdirSync(dir).sort(), ['pglite', 'pglite.creating-1']);
});

test('a DATA_DIR/pglite that holds something else is refused with a clear error and left as it was', async () => {
  const dir = dataDir();
  mkdirSync(path.join(dir, 'pglite'));
  writeFileSync(path.join(dir, 'pglite', 'notes.txt'), 'mine');
  await assert.rejects(openDatabase({ dataDir: dir }), /is not empty but holds no PGlite database/);
  assert.deepEqual(readdirSync(path.join(dir, 'pglite')), ['notes.txt']);
});
