/**
 * `npm start`'s prestart, in one process: the start-up checks first (src/start-checks.ts, the same
 * ones src/main.ts runs), so a port in use, an unusable DATA_DIR or a bad setting is one line and
 * exit code 1 within a second, not after the builds; then the web app and the server are built when
 * missing or stale (scripts/ensure-web-build.ts, scripts/ensure-server-build.ts).
 */
import { ConfigError, loadConfig } from '../src/config.ts';
import { startChecks } from '../src/start-checks.ts';
import { ensureServerBuild } from './ensure-server-build.ts';
import { ensureWebBuild } from './ensure-web-build.ts';

async function prestart(): Promise<number> {
  let config;
  try {
    config = loadConfig();
  } catch (err) {
    if (!(err instanceof ConfigError)) throw err;
    console.error(err.message);
    return 1;
  }
  const problems = await startChecks(config);
  for (const line of problems) console.error(line);
  if (problems.length > 0) return 1;
  try {
    await ensureWebBuild();
  } catch (err) {
    console.error('Building the admin app failed:', err);
    return 1;
  }
  try {
    await ensureServerBuild();
  } catch (err) {
    console.error('Compiling the server failed:', err instanceof Error ? err.message : err);
    return 1;
  }
  return 0;
}

process.exitCode = await prestart();
