/**
 * Compiles the service (src/, tests excluded) into dist/ with tsc when dist is missing or older
 * than its sources, so `npm start` runs plain JavaScript from a fresh clone without a separate
 * build step. Run by the prestart script (`--force` rebuilds regardless: `npm run build:server`);
 * the bench and the start-up test call ensureServerBuild() too, possibly at the same time, so a
 * build holds a lock file and the others wait for it.
 *
 * The build goes to a directory of its own and replaces dist/ only once tsc succeeded, so dist/
 * is never half-written: a build that fails leaves the previous one, and the next start retries.
 */
import { spawn } from 'node:child_process';
import { existsSync, readFileSync, renameSync, rmSync, statSync, utimesSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import path from 'node:path';
import { pathToFileURL } from 'node:url';
import { newestMtime, ROOT, withBuildLock } from './build-support.ts';

/**
 * At the same depth as src/: the compiled modules find migrations/ and web/dist through paths
 * relative to their own location (import.meta.url), exactly as the sources do.
 */
export const SERVER_DIST = path.join(ROOT, 'dist');
/** Written last into a finished build: its mtime is the build's. */
const STAMP = '.built';
const SOURCES = ['src', 'tsconfig.json', 'tsconfig.build.json'].map((p) => path.join(ROOT, p));

/**
 * What a build takes on a 2-core machine (measured for the README's quick start), so the first
 * start says how long to wait.
 */
export const SERVER_BUILD_SECONDS = 30;

/** Why a build is needed, or null when dist/ is up to date. */
export function serverStaleReason(): string | null {
  const stamp = path.join(SERVER_DIST, STAMP);
  if (!existsSync(stamp)) return 'dist/ is missing';
  const built = statSync(stamp).mtimeMs;
  const changed = SOURCES.find((s) => newestMtime(s) > built);
  return changed === undefined ? null : `${path.relative(ROOT, changed)} changed since the last build`;
}

/**
 * The arguments `npm start` gives node (package.json scripts.start is `node [flags] dist/main.js`),
 * so the bench and the tests start the service exactly as production does, without npm in between
 * (npm's process would be the one they measure and signal). package.json cannot carry a comment:
 * `--heap-growing-percent=150` is there because V8 otherwise lets the old generation grow to four
 * times what the last full collection left before collecting again; at 2.5 times the peak RSS
 * under the bench's load is about 230 MB instead of 301-314, at no measurable CPU cost
 * (docs/decisions.md, "Memory").
 */
export function startArgs(): string[] {
  const pkg = JSON.parse(readFileSync(path.join(ROOT, 'package.json'), 'utf8')) as { scripts?: Record<string, string> };
  const start = pkg.scripts?.start ?? '';
  const [bin, ...args] = start.trim().split(/\s+/);
  if (bin !== 'node' || args.length === 0 || args.some((a) => /['"`$\\|&;<>()]/.test(a))) {
    throw new Error(`package.json scripts.start must read "node [flags] <entry>" without shell syntax; it reads "${start}"`);
  }
  return args;
}

function tsc(outDir: string): Promise<void> {
  const bin = createRequire(import.meta.url).resolve('typescript/bin/tsc');
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [bin, '-p', path.join(ROOT, 'tsconfig.build.json'), '--outDir', outDir], {
      cwd: ROOT,
      stdio: ['ignore', 'inherit', 'inherit'],
    });
    child.once('error', reject);
    child.once('exit', (code, signal) =>
      code === 0 ? resolve() : reject(new Error(`tsc -p tsconfig.build.json failed (${signal ?? `exit code ${code}`})`)),
    );
  });
}

/** Compiles dist/ when it is stale (or `force`); says what and why when it builds, and nothing otherwise. */
export async function ensureServerBuild(opts: { force?: boolean; log?: (line: string) => void } = {}): Promise<boolean> {
  const log = opts.log ?? console.log;
  if (!opts.force && serverStaleReason() === null) return false;
  return withBuildLock('server-build', async () => {
    // Another process may have built it while this one waited.
    const reason = opts.force ? 'asked to' : serverStaleReason();
    if (reason === null) return false;
    const what = 'the server into dist/ with tsc';
    log(
      existsSync(path.join(SERVER_DIST, STAMP)) || opts.force
        ? `Compiling ${what} (${reason}; about ${SERVER_BUILD_SECONDS} s)...`
        : `First start: compiling ${what} (about ${SERVER_BUILD_SECONDS} s)...`,
    );
    const started = new Date();
    // Beside dist/, on the same file system, so replacing it takes two renames.
    const next = path.join(ROOT, `dist.building-${process.pid}`);
    const old = path.join(ROOT, `dist.old-${process.pid}`);
    rmSync(next, { recursive: true, force: true });
    try {
      await tsc(next);
      const stamp = path.join(next, STAMP);
      writeFileSync(stamp, `${started.toISOString()}\n`);
      // Dated when tsc started reading the sources: one saved during the build is newer, so stale.
      utimesSync(stamp, started, started);
      if (existsSync(SERVER_DIST)) renameSync(SERVER_DIST, old);
      renameSync(next, SERVER_DIST);
    } finally {
      rmSync(next, { recursive: true, force: true });
      rmSync(old, { recursive: true, force: true });
    }
    log(`Compiled the server in ${((Date.now() - started.getTime()) / 1000).toFixed(1)} s`);
    return true;
  });
}

if (process.argv[1] !== undefined && import.meta.url === pathToFileURL(process.argv[1]).href) {
  ensureServerBuild({ force: process.argv.includes('--force') }).catch((err: unknown) => {
    console.error('Building the server failed:', err instanceof Error ? err.message : err);
    process.exit(1);
  });
}
