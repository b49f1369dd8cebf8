/**
 * The service as `npm start` runs it: compiled into dist/ (scripts/ensure-server-build.ts) and
 * started with package.json's start command, V8 flags included. The other tests run the sources
 * through tsx, so this one checks what only the build can break: every path a module finds
 * relative to its own location (migrations, the web build) still resolves from dist/, the JSON
 * contract artifact is emitted beside its module, and the process starts, answers and stops on
 * SIGINT. Embedded defaults (PGlite, the dev chain), or a fresh PostgreSQL database with
 * DATABASE_URL set.
 *
 * And the start-up checks (src/start-checks.ts): a port in use or an unusable DATA_DIR is one line
 * and exit code 1 before anything slow, from src/main.ts and from `npm start` before its builds.
 */
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { chmodSync, existsSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { createServer, type Server } from 'node:net';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { pathToFileURL } from 'node:url';
import { after, before, describe, test } from 'node:test';
import { ensureServerBuild, SERVER_DIST, startArgs } from '../scripts/ensure-server-build.ts';
import { freePort } from '../scripts/service-launcher.ts';
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

test('a start with dist/ up to date builds nothing and says nothing about building', async () => {
  const lines: string[] = [];
  assert.equal(await ensureServerBuild({ log: (l) => lines.push(l) }), false);
  assert.deepEqual(lines, []);
});

describe('start-up checks: one line and exit code 1 before anything slow', () => {
  const held: Server[] = [];
  after(() => held.forEach((s) => s.close()));

  /** A port some other process listens on (here: this test's own server). */
  async function takenPort(): Promise<number> {
    const server = createServer();
    await new Promise<void>((resolve) => server.listen({ host: '127.0.0.1', port: 0 }, resolve));
    held.push(server);
    return (server.address() as { port: number }).port;
  }

  interface Refusal {
    code: number | null;
    stdout: string;
    /** stderr without npm's own lines (its warnings, its echo of the scripts it runs). */
    lines: string[];
  }

  /**
   * Starts `program` (the service from its sources unless told) and waits for it to give up. One
   * that is still running after a minute has not refused; it is killed and the test fails.
   */
  function refusedStart(env: Record<string, string>, opts: { program?: string[]; uid?: number } = {}): Promise<Refusal> {
    const [bin, ...args] = opts.program ?? [process.execPath, '--import', 'tsx', 'src/main.ts'];
    const child = spawn(bin!, args, {
      cwd: ROOT,
      env: { PATH: process.env.PATH, HOME: process.env.HOME, HOST: '127.0.0.1', PORT: '0', ...env },
      stdio: ['ignore', 'pipe', 'pipe'],
      ...(opts.uid === undefined ? {} : { uid: opts.uid, gid: opts.uid }),
    });
    let stdout = '';
    let stderr = '';
    child.stdout.setEncoding('utf8').on('data', (d: string) => (stdout += d));
    child.stderr.setEncoding('utf8').on('data', (d: string) => (stderr += d));
    const timer = setTimeout(() => child.kill('SIGKILL'), 60_000);
    return new Promise((resolve) =>
      child.once('exit', (code) => {
        clearTimeout(timer);
        const lines = stderr.split('\n').filter((l) => l.trim() !== '' && !/^(npm (warn|notice|error)|> )/.test(l));
        resolve({ code, stdout, lines });
      }),
    );
  }

  function assertRefused(r: Refusal, line: RegExp): void {
    const context = `stdout: ${r.stdout.slice(-1500)}\nstderr: ${r.lines.join('\n').slice(-1500)}`;
    assert.equal(r.code, 1, context);
    assert.equal(r.lines.length, 1, `exactly one line on stderr, no stack trace\n${context}`);
    assert.match(r.lines[0]!, line);
    assert.doesNotMatch(r.stdout, /Splitline\s+http/, 'it never listened');
  }

  const missingDataDir = () => path.join(dataDir, `never-created-${Math.random().toString(36).slice(2)}`);

  test('the HTTP port in use, naming the port, the host and PORT', async () => {
    const port = await takenPort();
    const dir = missingDataDir();
    const r = await refusedStart({ PORT: String(port), DATA_DIR: dir });
    assertRefused(r, new RegExp(`^Port ${port} on 127\\.0\\.0\\.1 is in use \\(another Splitline\\? stop it, or set PORT=<another port>\\)$`));
    assert.equal(existsSync(dir), false, 'DATA_DIR was not created');
  });

  test('the dev chain port in use, naming DEV_CHAIN_PORT', async () => {
    const port = await takenPort();
    const dir = missingDataDir();
    const r = await refusedStart({ DEV_CHAIN_PORT: String(port), DATA_DIR: dir });
    assertRefused(r, new RegExp(`^Dev chain port ${port} on 127\\.0\\.0\\.1 is in use \\(.*set DEV_CHAIN_PORT=`));
    assert.equal(existsSync(dir), false, 'DATA_DIR was not created');
  });

  test('PORT and DEV_CHAIN_PORT the same port', async () => {
    const port = String(await freePort());
    assertRefused(await refusedStart({ PORT: port, DEV_CHAIN_PORT: port, DATA_DIR: missingDataDir() }), /^PORT and DEV_CHAIN_PORT are both \d+: set DEV_CHAIN_PORT/);
  });

  test('DATA_DIR under /proc (which used to hang the start)', async () => {
    assertRefused(await refusedStart({ DATA_DIR: '/proc/splitline-data' }), /^DATA_DIR \/proc\/splitline-data is on a proc kernel file system, which stores nothing: set DATA_DIR/);
  });

  test('DATA_DIR a file, or under one', async () => {
    const file = path.join(dataDir, 'a-file');
    writeFileSync(file, 'not a directory');
    assertRefused(await refusedStart({ DATA_DIR: file }), /^DATA_DIR \S+a-file is not a directory: set DATA_DIR/);
    assertRefused(await refusedStart({ DATA_DIR: path.join(file, 'data') }), /^DATA_DIR \S+ cannot be created: a part of its path is a file, not a directory \(set DATA_DIR/);
  });

  test('DATA_DIR a read-only directory', async () => {
    // root writes anywhere: the start then runs as nobody, to whom the directory is read-only too.
    const asRoot = process.getuid?.() === 0;
    const parent = mkdtempSync(path.join(tmpdir(), 'splitline-readonly-'));
    const dir = path.join(parent, 'data');
    mkdirSync(dir);
    chmodSync(parent, 0o755);
    chmodSync(dir, 0o555);
    try {
      const r = await refusedStart({ DATA_DIR: dir }, asRoot ? { uid: 65534 } : {});
      assertRefused(r, /^DATA_DIR \S+ is not writable by this user \(EACCES\): make it writable, or set DATA_DIR/);
    } finally {
      rmSync(parent, { recursive: true, force: true });
    }
  });

  test('DATA_DIR held by another running Splitline: refused at once, before any build, naming its pid', async () => {
    const dir = mkdtempSync(path.join(tmpdir(), 'splitline-held-'));
    // Another process holds the embedded database (a lock file naming a live pid that is not the starter's).
    const holder = spawn(process.execPath, ['-e', 'setTimeout(() => {}, 60_000)'], { stdio: 'ignore' });
    try {
      writeFileSync(path.join(dir, 'pglite.lock'), JSON.stringify({ pid: holder.pid, started: null }));
      for (const program of [undefined, ['npm', 'start']]) {
        const r = await refusedStart({ DATA_DIR: dir }, program === undefined ? {} : { program });
        assertRefused(r, new RegExp(`^DATA_DIR \\S+ is in use by process ${holder.pid} \\(a Splitline server or CLI\\).*DATABASE_URL`));
        assert.doesNotMatch(r.stdout, /building|compiling/i, 'no build started');
      }
    } finally {
      holder.kill('SIGKILL');
      rmSync(dir, { recursive: true, force: true });
    }
  });

  test('npm start refuses before its builds: the same one line from the prestart script', async () => {
    const port = await takenPort();
    const r = await refusedStart({ PORT: String(port), DATA_DIR: missingDataDir() }, { program: ['npm', 'start'] });
    assertRefused(r, new RegExp(`^Port ${port} on 127\\.0\\.0\\.1 is in use `));
    assert.doesNotMatch(r.stdout, /building|compiling/i, 'no build started');
  });
});
