/**
 * What the build scripts share (scripts/ensure-web-build.ts, scripts/ensure-server-build.ts): the
 * newest modification time under a path, to tell a stale build, and a lock file, because test
 * files running in parallel may ask for the same build at once and only one should run it.
 */
import { closeSync, existsSync, mkdirSync, openSync, readdirSync, readFileSync, rmSync, statSync, writeSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { processAlive } from '../src/lib/process-alive.ts';

export const ROOT = fileURLToPath(new URL('..', import.meta.url));

/** The newest mtime of a file, or of a directory and everything under it (0 when it is missing). */
export function newestMtime(p: string): number {
  if (!existsSync(p)) return 0;
  const info = statSync(p);
  if (!info.isDirectory()) return info.mtimeMs;
  // A directory's own mtime changes when an entry is added or removed, so a deleted source counts.
  return readdirSync(p).reduce((newest, name) => Math.max(newest, newestMtime(path.join(p, name))), info.mtimeMs);
}

const LOCK_WAIT_MS = 180_000;

function holderAlive(lock: string): boolean {
  let pid: number;
  try {
    pid = Number(readFileSync(lock, 'utf8'));
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return false;
    throw err;
  }
  // Created but not yet written: the holder is alive and about to write its pid.
  if (!Number.isInteger(pid) || pid <= 0) return true;
  return processAlive(pid);
}

/** Runs `fn` holding the lock named `name`; a lock left by a dead process is taken over. */
export async function withBuildLock<T>(name: string, fn: () => Promise<T>): Promise<T> {
  const lock = path.join(ROOT, 'node_modules', '.cache', `splitline-${name}.lock`);
  mkdirSync(path.dirname(lock), { recursive: true });
  const deadline = Date.now() + LOCK_WAIT_MS;
  for (;;) {
    try {
      const fd = openSync(lock, 'wx');
      writeSync(fd, String(process.pid));
      closeSync(fd);
      break;
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== 'EEXIST') throw err;
      if (!holderAlive(lock)) rmSync(lock, { force: true });
      else if (Date.now() > deadline) throw new Error(`another build held ${lock} for over ${LOCK_WAIT_MS / 1000} s`, { cause: err });
      else await new Promise((resolve) => setTimeout(resolve, 200));
    }
  }
  try {
    return await fn();
  } finally {
    rmSync(lock, { force: true });
  }
}
