/**
 * One process per embedded DATA_DIR: a second opener is refused at once naming the holder; a lock
 * left by a process that died is taken over; closing releases it.
 */
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { after, test } from 'node:test';
import { openDatabase } from '../src/db/client.ts';
import { DataDirLocked, lockDataDir } from '../src/db/data-dir-lock.ts';

const dirs: string[] = [];
const tempDir = () => {
  const d = mkdtempSync(path.join(tmpdir(), 'splitline-lock-'));
  dirs.push(d);
  return d;
};
after(() => {
  for (const d of dirs) rmSync(d, { recursive: true, force: true });
});

test('a second opener of the same DATA_DIR is refused with the holder pid and the way out; closing releases it', async () => {
  const dir = tempDir();
  const first = await openDatabase({ dataDir: dir });
  try {
    await assert.rejects(openDatabase({ dataDir: dir }), (err: unknown) => {
      assert.ok(err instanceof DataDirLocked);
      assert.equal(err.pid, process.pid);
      assert.match(err.message, new RegExp(`process ${process.pid}`));
      assert.match(err.message, /DATABASE_URL/);
      return true;
    });
  } finally {
    await first.close();
  }
  assert.equal(existsSync(path.join(dir, 'pglite.lock')), false, 'released on close');
  const again = await openDatabase({ dataDir: dir });
  await again.close();
});

test('a lock held by another live process refuses; a lock left by a dead process is taken over', async () => {
  const dir = tempDir();
  // A live holder: a child process that sleeps.
  const child = spawn(process.execPath, ['-e', 'setTimeout(() => {}, 30000)'], { stdio: 'ignore' });
  try {
    writeFileSync(path.join(dir, 'pglite.lock'), JSON.stringify({ pid: child.pid, started: null }));
    assert.throws(() => lockDataDir(dir), (err: unknown) => err instanceof DataDirLocked && err.pid === child.pid);
  } finally {
    child.kill('SIGKILL');
    await new Promise((r) => child.once('exit', r));
  }
  // The same file, its process gone: stale.
  const lock = lockDataDir(dir);
  assert.equal(JSON.parse(readFileSync(lock.file, 'utf8')).pid, process.pid);
  lock.release();
  // A recycled pid (alive, but started at another time) is not the holder either.
  writeFileSync(path.join(dir, 'pglite.lock'), JSON.stringify({ pid: process.pid === 1 ? 2 : 1, started: 'not-its-start-time' }));
  lockDataDir(dir).release();
});
