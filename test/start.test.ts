/**
 * The service as `npm start` runs it: compiled into dist/ (scripts/ensure-server-build.ts) and
 * started with package.json's start command, V8 flags included. The other tests run the sources
 * through tsx, so this one checks what only the build can break: every path a module finds
 * relative to its own location (migrations, the web build) still resolves from dist/, the JSON
 * contract artifact is emitted beside its module, and the process starts, answers and stops on
 * SIGINT. Embedded defaults (PGlite, the dev chain), or a fresh PostgreSQL database with
 * DATABASE_URL set.
 */
import assert from 'node:assert/strict';
import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { pathToFileURL } from 'node:url';
import { after, before, test } from 'node:test';
import { ensureServerBuild, SERVER_DIST, startArgs } from '../scripts/ensure-server-build.ts';
import { freshPostgresDatabase } from './helpers/app.ts';
import { http, ROOT, startService, stopAllServices } from './helpers/service.ts';

let dataDir: string;
let fresh: { url: string; drop(): Promise<void> } | undefined;

before(async () => {
  await ensureServerBuild({ log: () => {} });
  dataDir = mkdtempSync(path.join(tmpdir(), 'splitline-start-'));
  if (process.env.DATABASE_URL) fresh = await freshPostgresDatabase(process.env.DATABASE_URL);
});
after(async () => {
  await stopAllServices();
  await fresh?.drop();
  rmSync(dataDir, { recursive: true, force: true });
});

test('npm start runs the compiled entry point', () => {
  const args = startArgs();
  assert.equal(args.at(-1), 'dist/main.js');
  assert.ok(existsSync(path.join(ROOT, args.at(-1)!)));
});

test('paths relative to the compiled modules resolve to the same places as from the sources', async () => {
  const built = (p: string) => pathToFileURL(path.join(SERVER_DIST, p)).href;
  const compiledDb = (await import(built('db/client.js'))) as { MIGRATIONS_DIR: string };
  const compiledWeb = (await import(built('http/web.js'))) as { WEB_DIST: string };
  assert.equal(compiledDb.MIGRATIONS_DIR, path.join(ROOT, 'migrations'));
  assert.equal(path.resolve(compiledWeb.WEB_DIST), path.join(ROOT, 'web', 'dist'));
  assert.ok(existsSync(path.join(SERVER_DIST, 'chain', 'artifacts', 'TestUSDC.json')));
});

test('the compiled service starts, answers and stops cleanly on SIGINT', async () => {
  const service = await startService(
    'compiled',
    { DATA_DIR: dataDir, ...(fresh === undefined ? {} : { DATABASE_URL: fresh.url }) },
    { program: startArgs(), timeoutMs: 120_000 },
  );
  const health = await http(service.base, 'GET', '/healthz');
  assert.equal(health.status, 200);
  assert.equal(health.body.status, 'ok');
  const openapi = await http(service.base, 'GET', '/openapi.json');
  assert.equal(openapi.status, 200);
  assert.ok(Object.keys(openapi.body.paths).includes('/api/receipts'));
  const chain = await http(service.base, 'GET', '/dev/chain');
  assert.equal(chain.status, 200, 'the dev chain deployed the test USDC from the compiled artifact');

  service.child.kill('SIGINT');
  const exit = await service.exited;
  assert.deepEqual(exit, { code: 0, signal: null }, service.output().slice(-2000));
});
