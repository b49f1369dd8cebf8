/**
 * One process per embedded database. PGlite is a single-process database: a second server or the
 * CLI opening the same DATA_DIR would each see only its own writes and overwrite the other's
 * files. The first process writes its pid (and its start time, so a recycled pid is not mistaken
 * for it) into DATA_DIR/pglite.lock, created exclusively; a second one is refused at once with
 * the holder's pid and the way out. A lock left by a process that no longer runs is taken over.
 */
import { closeSync, openSync, readFileSync, renameSync, unlinkSync, writeSync } from 'node:fs';
import path from 'node:path';
import { processAlive } from '../lib/process-alive.ts';

export class DataDirLocked extends Error {
  constructor(
    readonly dataDir: string,
    readonly pid: number,
  ) {
    super(
      `DATA_DIR ${dataDir} is in use by process ${pid} (a Splitline server or CLI): the embedded database serves one process at a time. ` +
        'Stop that process, or point both at PostgreSQL with DATABASE_URL.',
    );
    this.name = 'DataDirLocked';
  }
}

interface Holder {
  pid: number;
  started: string | null;
}

/** The kernel's start time of a process (Linux), to tell a recycled pid from the original. */
function startTime(pid: number): string | null {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    return stat.slice(stat.lastIndexOf(')') + 2).split(' ')[19] ?? null;
  } catch {
    return null;
  }
}

function readHolder(file: string): Holder | null {
  try {
    const parsed = JSON.parse(readFileSync(file, 'utf8')) as Partial<Holder>;
    return typeof parsed.pid === 'number' ? { pid: parsed.pid, started: parsed.started ?? null } : null;
  } catch {
    // Unreadable or half-written: whoever wrote it did not finish taking the lock.
    return null;
  }
}

function holderRuns(h: Holder): boolean {
  if (!processAlive(h.pid)) return false;
  const now = startTime(h.pid);
  return h.started === null || now === null || now === h.started;
}

/** The pid of the running process that holds `dataDir`'s lock, or null (free, or left by a process gone). */
export function dataDirHolder(dataDir: string): number | null {
  const holder = readHolder(path.join(dataDir, 'pglite.lock'));
  return holder !== null && holder.pid !== process.pid && holderRuns(holder) ? holder.pid : null;
}

export interface DataDirLock {
  readonly file: string;
  release(): void;
}

/** Takes the lock of `dataDir` for this process, or throws DataDirLocked naming the holder. */
export function lockDataDir(dataDir: string): DataDirLock {
  const file = path.join(dataDir, 'pglite.lock');
  const me: Holder = { pid: process.pid, started: startTime(process.pid) };
  for (let attempt = 0; attempt < 3; attempt++) {
    try {
      const fd = openSync(file, 'wx', 0o600);
      try {
        writeSync(fd, JSON.stringify(me));
      } finally {
        closeSync(fd);
      }
      const mine = readHolder(file);
      if (mine?.pid !== me.pid) continue;
      const release = () => {
        if (readHolder(file)?.pid === me.pid) unlinkSync(file);
        process.off('exit', release);
      };
      process.on('exit', release);
      return { file, release };
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== 'EEXIST') throw err;
      const holder = readHolder(file);
      if (holder !== null && holderRuns(holder)) throw new DataDirLocked(dataDir, holder.pid);
      // Stale: move it aside under a name of our own (only one taker's rename succeeds), then retry.
      try {
        renameSync(file, `${file}.stale-${process.pid}`);
        unlinkSync(`${file}.stale-${process.pid}`);
      } catch (moveErr) {
        if ((moveErr as NodeJS.ErrnoException).code !== 'ENOENT') throw moveErr;
      }
    }
  }
  const holder = readHolder(file);
  throw new DataDirLocked(dataDir, holder?.pid ?? 0);
}
