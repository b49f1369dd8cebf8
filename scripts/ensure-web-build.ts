/**
 * Builds the admin web app when web/dist is missing or older than its sources, so `npm start`
 * from a fresh clone serves /admin without a separate build step. Run by the prestart script;
 * the browser tests call ensureWebBuild() too.
 */
import { existsSync, readdirSync, statSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';

const ROOT = fileURLToPath(new URL('..', import.meta.url));
const WEB = path.join(ROOT, 'web');
const BUILT = path.join(WEB, 'dist', 'index.html');
const SOURCES = ['src', 'public', 'index.html', 'vite.config.ts', 'tsconfig.json'].map((p) => path.join(WEB, p));

function newestMtime(p: string): number {
  if (!existsSync(p)) return 0;
  const info = statSync(p);
  if (!info.isDirectory()) return info.mtimeMs;
  return readdirSync(p).reduce((newest, name) => Math.max(newest, newestMtime(path.join(p, name))), info.mtimeMs);
}

/** Why a build is needed, or null when web/dist is up to date. */
export function staleReason(): string | null {
  if (!existsSync(BUILT)) return 'web/dist is missing';
  const built = statSync(BUILT).mtimeMs;
  const changed = SOURCES.find((s) => newestMtime(s) > built);
  return changed === undefined ? null : `${path.relative(ROOT, changed)} changed since the last build`;
}

export async function ensureWebBuild(log: (line: string) => void = console.log): Promise<boolean> {
  const reason = staleReason();
  if (reason === null) return false;
  log(`Building the admin web app (${reason})…`);
  const started = Date.now();
  const { build } = await import('vite');
  await build({ configFile: path.join(WEB, 'vite.config.ts'), logLevel: 'warn' });
  log(`Admin web app built into web/dist in ${((Date.now() - started) / 1000).toFixed(1)} s`);
  return true;
}

if (process.argv[1] !== undefined && import.meta.url === pathToFileURL(process.argv[1]).href) {
  ensureWebBuild().catch((err: unknown) => {
    console.error('Building the admin web app failed:', err);
    process.exit(1);
  });
}
