/**
 * Builds the web app (the admin app and the payment page) when web/dist is missing or older than
 * its sources, so `npm start` from a fresh clone serves /admin and /pay without a separate build
 * step. Run by the prestart script; the browser tests call ensureWebBuild() too, from test files
 * running in parallel, so a build holds a lock file and the others wait for it.
 */
import { closeSync, existsSync, mkdirSync, openSync, readdirSync, readFileSync, rmSync, statSync, writeSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';

const ROOT = fileURLToPath(new URL('..', import.meta.url));
const WEB = path.join(ROOT, 'web');
const BUILT = path.join(WEB, 'dist', 'index.html');
/** Every page of the build: a build from before the payment page existed lacks pay.html. */
const PAGES = ['index.html', 'pay.html'].map((p) => path.join(WEB, 'dist', p));
const SOURCES = ['src', 'public', 'index.html', 'pay.html', 'vite.config.ts', 'tsconfig.json'].map((p) => path.join(WEB, p));

function newestMtime(p: string): number {
  if (!existsSync(p)) return 0;
  const info = statSync(p);
  if (!info.isDirectory()) return info.mtimeMs;
  return readdirSync(p).reduce((newest, name) => Math.max(newest, newestMtime(path.join(p, name))), info.mtimeMs);
}

/** Why a build is needed, or null when web/dist is up to date. */
export function staleReason(): string | null {
  const missing = PAGES.find((p) => !existsSync(p));
  if (missing !== undefined) return `${path.relative(ROOT, missing)} is missing`;
  const built = statSync(BUILT).mtimeMs;
  const changed = SOURCES.find((s) => newestMtime(s) > built);
  return changed === undefined ? null : `${path.relative(ROOT, changed)} changed since the last build`;
}

const LOCK = path.join(ROOT, 'node_modules', '.cache', 'splitline-web-build.lock');
const LOCK_WAIT_MS = 180_000;

function holderAlive(): boolean {
  let pid: number;
  try {
    pid = Number(readFileSync(LOCK, 'utf8'));
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return false;
    throw err;
  }
  // Created but not yet written: the holder is alive and about to write its pid.
  if (!Number.isInteger(pid) || pid <= 0) return true;
  try {
    process.kill(pid, 0);
    return true;
  } catch (err) {
    return (err as NodeJS.ErrnoException).code === 'EPERM';
  }
}

/** Runs `fn` holding the build lock; a lock left by a dead process is taken over. */
async function withBuildLock<T>(fn: () => Promise<T>): Promise<T> {
  mkdirSync(path.dirname(LOCK), { recursive: true });
  const deadline = Date.now() + LOCK_WAIT_MS;
  for (;;) {
    try {
      const fd = openSync(LOCK, 'wx');
      writeSync(fd, String(process.pid));
      closeSync(fd);
      break;
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== 'EEXIST') throw err;
      if (!holderAlive()) rmSync(LOCK, { force: true });
      else if (Date.now() > deadline) throw new Error(`another web build held ${LOCK} for over ${LOCK_WAIT_MS / 1000} s`);
      else await new Promise((resolve) => setTimeout(resolve, 200));
    }
  }
  try {
    return await fn();
  } finally {
    rmSync(LOCK, { force: true });
  }
}

export async function ensureWebBuild(log: (line: string) => void = console.log): Promise<boolean> {
  if (staleReason() === null) return false;
  return withBuildLock(async () => {
    // Another process may have built it while this one waited.
    const reason = staleReason();
    if (reason === null) return false;
    log(`Building the web app (${reason})…`);
    const started = Date.now();
    const { build } = await import('vite');
    await build({ configFile: path.join(WEB, 'vite.config.ts'), logLevel: 'warn' });
    log(`Web app built into web/dist in ${((Date.now() - started) / 1000).toFixed(1)} s`);
    return true;
  });
}

if (process.argv[1] !== undefined && import.meta.url === pathToFileURL(process.argv[1]).href) {
  ensureWebBuild().catch((err: unknown) => {
    console.error('Building the web app failed:', err);
    process.exit(1);
  });
}
