/**
 * Builds the web app (the admin app and the payment page) when web/dist is missing or older than
 * its sources, so `npm start` from a fresh clone serves /admin and /pay without a separate build
 * step. Run by the prestart script; the browser tests call ensureWebBuild() too, from test files
 * running in parallel, so a build holds a lock file and the others wait for it.
 */
import { existsSync, statSync } from 'node:fs';
import path from 'node:path';
import { pathToFileURL } from 'node:url';
import { newestMtime, ROOT, withBuildLock } from './build-support.ts';

const WEB = path.join(ROOT, 'web');
const BUILT = path.join(WEB, 'dist', 'index.html');
/** Every page of the build: a build from before the payment page existed lacks pay.html. */
const PAGES = ['index.html', 'pay.html'].map((p) => path.join(WEB, 'dist', p));
const SOURCES = [
  ...['src', 'public', 'index.html', 'pay.html', 'vite.config.ts', 'tsconfig.json'].map((p) => path.join(WEB, p)),
  // The API contract the pages check every answer against.
  path.join(ROOT, 'src', 'contract'),
];

/**
 * What a build takes on a 2-core machine (measured for the README's quick start), so the first
 * start says how long to wait.
 */
export const WEB_BUILD_SECONDS = 5;

/** Why a build is needed, or null when web/dist is up to date. */
export function staleReason(): string | null {
  const missing = PAGES.find((p) => !existsSync(p));
  if (missing !== undefined) return `${path.relative(ROOT, missing)} is missing`;
  const built = statSync(BUILT).mtimeMs;
  const changed = SOURCES.find((s) => newestMtime(s) > built);
  return changed === undefined ? null : `${path.relative(ROOT, changed)} changed since the last build`;
}

/** Builds web/dist when it is stale; says what and why when it builds, and nothing otherwise. */
export async function ensureWebBuild(log: (line: string) => void = console.log): Promise<boolean> {
  if (staleReason() === null) return false;
  return withBuildLock('web-build', async () => {
    // Another process may have built it while this one waited.
    const reason = staleReason();
    if (reason === null) return false;
    const what = 'the admin app and the payment page into web/dist';
    log(
      existsSync(BUILT)
        ? `Building ${what} (${reason}; about ${WEB_BUILD_SECONDS} s)...`
        : `First start: building ${what} (about ${WEB_BUILD_SECONDS} s)...`,
    );
    const started = Date.now();
    const { build } = await import('vite');
    await build({ configFile: path.join(WEB, 'vite.config.ts'), logLevel: 'warn' });
    log(`Built the admin app and the payment page in ${((Date.now() - started) / 1000).toFixed(1)} s`);
    return true;
  });
}

if (process.argv[1] !== undefined && import.meta.url === pathToFileURL(process.argv[1]).href) {
  ensureWebBuild().catch((err: unknown) => {
    console.error('Building the web app failed:', err);
    process.exit(1);
  });
}
