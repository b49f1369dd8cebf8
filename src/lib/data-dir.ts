/**
 * DATA_DIR holds what other local users must not read or write: the embedded database (webhook
 * signing secrets, sessions), the journal (payment URLs during an outage), the JWT key, the dev
 * chain's state and the APK blobs. The process umask (0o077, set first thing by main.ts and the
 * CLI) keeps what the service creates to its own user; this tightens what already exists, or what
 * a library wrote with modes of its own (PGlite unpacks its initial database as 0666 files).
 */
import { chmodSync, lstatSync, mkdirSync, readdirSync } from 'node:fs';
import path from 'node:path';

/** The umask the service runs under: files 0600, directories 0700. */
export const SERVICE_UMASK = 0o077;

/** More entries than this and the walk stops (a DATA_DIR pointed at a large tree by mistake). */
export const MAX_TIGHTENED_ENTRIES = 200_000;

export interface Tightened {
  /** Entries looked at. */
  checked: number;
  /** Entries whose group or other permission bits were removed. */
  changed: number;
  /** The walk stopped at MAX_TIGHTENED_ENTRIES. */
  truncated: boolean;
  /** Entries that could not be changed (another user's files), at most 20. */
  failed: string[];
}

/**
 * Removes the group and other permission bits of `root` and everything under it, never following
 * a symbolic link. The owner's bits stay as they are (a file 0644 becomes 0600, a directory 0755
 * becomes 0700). Missing `root`: nothing to do.
 */
export function tightenTree(root: string, maxEntries = MAX_TIGHTENED_ENTRIES): Tightened {
  const result: Tightened = { checked: 0, changed: 0, truncated: false, failed: [] };
  const stack = [root];
  while (stack.length > 0) {
    const p = stack.pop()!;
    if (result.checked >= maxEntries) {
      result.truncated = true;
      break;
    }
    let stat;
    try {
      stat = lstatSync(p);
    } catch (err) {
      // Gone meanwhile (a temporary file renamed away): nothing to tighten.
      if ((err as NodeJS.ErrnoException).code === 'ENOENT') continue;
      throw err;
    }
    result.checked++;
    if (stat.isSymbolicLink()) continue;
    if ((stat.mode & 0o077) !== 0) {
      try {
        chmodSync(p, stat.mode & 0o700);
        result.changed++;
      } catch (err) {
        if (result.failed.length < 20) result.failed.push(`${p} (${(err as NodeJS.ErrnoException).code ?? String(err)})`);
      }
    }
    if (stat.isDirectory()) {
      try {
        for (const name of readdirSync(p)) stack.push(path.join(p, name));
      } catch (err) {
        if (result.failed.length < 20) result.failed.push(`${p} (${(err as NodeJS.ErrnoException).code ?? String(err)})`);
      }
    }
  }
  return result;
}

/** Creates DATA_DIR (0700) if needed and tightens it and everything already in it. */
export function secureDataDir(dataDir: string, maxEntries = MAX_TIGHTENED_ENTRIES): Tightened {
  const dir = path.resolve(dataDir);
  mkdirSync(dir, { recursive: true, mode: 0o700 });
  return tightenTree(dir, maxEntries);
}
