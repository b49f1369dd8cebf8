/**
 * The service as a process, for what only a real start shows: the umask it sets first thing and
 * the walk that tightens DATA_DIR. DATA_DIR is 0700 and nothing under it (the embedded database,
 * the journal, the dev chain's state, the JWT key, blobs) is reachable by group or others, both in
 * a fresh DATA_DIR and in one an earlier version left world-readable. And NODE_ENV=production
 * refusing its unsafe settings before anything starts. Embedded defaults, or a fresh PostgreSQL
 * database with DATABASE_URL set (then the journal, chain state, key and blobs are what is checked).
 */
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { chmodSync, existsSync, lstatSync, mkdtempSync, readdirSync, rmSync, statSync, writeFileSync, mkdirSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { after, before, describe, test } from 'node:test';
import { freshPostgresDatabase } from './helpers/app.ts';
import type { PrivateKeyAccount } from 'viem/accounts';
import { newAccount } from './helpers/session.ts';
import { http, ROOT, signInOverHttp, startService, stopAllServices, type Service } from './helpers/service.ts';
import { until } from './helpers/wait.ts';

const SITE = 'http://pay.test';
let root: string;
let fresh: { url: string; drop(): Promise<void> } | undefined;

before(async () => {
  root = mkdtempSync(path.join(tmpdir(), 'splitline-modes-'));
  if (process.env.DATABASE_URL) fresh = await freshPostgresDatabase(process.env.DATABASE_URL);
});
after(async () => {
  await stopAllServices();
  await fresh?.drop();
  rmSync(root, { recursive: true, force: true });
});

interface Entry {
  path: string;
  mode: number;
  dir: boolean;
}

/** Every entry under `dir` (itself included), without following links. */
function walk(dir: string): Entry[] {
  const out: Entry[] = [];
  const stack = [dir];
  while (stack.length > 0) {
    const p = stack.pop()!;
    let s;
    try {
      s = lstatSync(p);
    } catch {
      continue; // a temporary file renamed away meanwhile
    }
    out.push({ path: path.relative(dir, p) || '.', mode: s.mode & 0o777, dir: s.isDirectory() });
    if (s.isDirectory()) for (const name of readdirSync(p)) stack.push(path.join(p, name));
  }
  return out;
}

function assertPrivate(dataDir: string, what: string): Entry[] {
  assert.equal(statSync(dataDir).mode & 0o777, 0o700, `${what}: DATA_DIR itself is 0700`);
  const entries = walk(dataDir);
  const open = entries.filter((e) => (e.mode & 0o077) !== 0).map((e) => `${e.mode.toString(8)} ${e.path}`);
  assert.deepEqual(open.slice(0, 20), [], `${what}: ${open.length} entries reachable by group or others`);
  return entries;
}

const env = (dataDir: string, superadmin: string) => ({
  DATA_DIR: dataDir,
  SITE_URL: SITE,
  SUPERADMIN_WALLETS: superadmin,
  ...(fresh === undefined ? {} : { DATABASE_URL: fresh.url }),
});

/** The service's API root (the banner may name the admin app's page under it). */
const apiBase = (service: Service) => service.base.replace(/\/admin\/?$/, '');

/** Writes through every store the service has: database rows, a journal, a blob, the chain. */
async function exercise(service: Service, account: PrivateKeyAccount): Promise<void> {
  const base = apiBase(service);
  const s = await signInOverHttp(base, account, SITE);
  const sub = await http(base, 'POST', '/api/admin/subscriptions', { headers: s.headers, body: {} });
  assert.equal(sub.status, 201, JSON.stringify(sub.body));
  const receipt = await http(base, 'POST', '/api/receipts', {
    key: sub.body.primaryKey,
    body: { id: 'modes-1', lineItems: [{ label: 'Tea', priceUsd: 2 }], totalUsd: 2 },
  });
  assert.equal(receipt.status, 201, JSON.stringify(receipt.body));
  const apk = Buffer.alloc(2048, 7);
  apk.write('PK\x03\x04', 0, 'latin1');
  const res = await fetch(`${base}/api/admin/apk/modes`, {
    method: 'PUT',
    headers: { ...s.headers, 'content-type': 'application/vnd.android.package-archive' },
    body: apk,
  });
  assert.equal(res.status, 200, await res.text());
}

describe('DATA_DIR is readable by the service user alone', () => {
  const dataDir = () => path.join(root, 'data');

  test('a fresh DATA_DIR: created 0700, and every file the service, PGlite, the journal and the dev chain write is private', async () => {
    const account = newAccount();
    const service = await startService('fresh', env(dataDir(), account.address), { timeoutMs: 120_000 });
    await exercise(service, account);
    await until(() => existsSync(path.join(dataDir(), 'devchain', 'state.json')), 30_000, 'the dev chain to save its state');
    const running = assertPrivate(dataDir(), 'while running');
    const names = running.map((e) => e.path);
    for (const expected of ['journal/journal.jsonl', 'jwt-secret', 'devchain/state.json', 'devchain/deployment.json']) {
      assert.ok(names.includes(expected), `${expected} exists (${names.filter((n) => !n.startsWith('pglite/')).join(', ')})`);
    }
    assert.ok(names.some((n) => n.startsWith('blobs/') && n.endsWith('modes-signed.apk')), 'the uploaded package is there');
    if (fresh === undefined) assert.ok(names.filter((n) => n.startsWith('pglite/')).length > 100, "PGlite's files are there");
    const exit = await service.stop();
    assert.equal(exit.code, 0, service.output().slice(-2000));
    assertPrivate(dataDir(), 'after shutdown');
  });

  test('a DATA_DIR an earlier version left world-readable and writable is tightened at start', async () => {
    // As the issue found it: everything 0666/0777, plus entries the service does not know.
    mkdirSync(path.join(dataDir(), 'leftover', 'deeper'), { recursive: true });
    writeFileSync(path.join(dataDir(), 'leftover', 'deeper', 'notes.txt'), 'left by someone');
    for (const e of walk(dataDir())) chmodSync(path.join(dataDir(), e.path), e.dir ? 0o777 : 0o666);
    assert.equal(statSync(path.join(dataDir(), 'jwt-secret')).mode & 0o777, 0o666);

    const account = newAccount();
    const service = await startService('reopened', env(dataDir(), account.address), { timeoutMs: 120_000 });
    const warned = await service.waitForLog((l) => /DATA_DIR: removed group and other permissions/.test(String(l.msg)), 5_000);
    assert.ok(Number(warned.tightened) > 5, JSON.stringify(warned));
    assertPrivate(dataDir(), 'at start');
    assert.equal(statSync(path.join(dataDir(), 'leftover', 'deeper', 'notes.txt')).mode & 0o777, 0o600);
    await exercise(service, account);
    assertPrivate(dataDir(), 'after new writes');
    const exit = await service.stop();
    assert.equal(exit.code, 0, service.output().slice(-2000));
  });
});

describe('NODE_ENV=production', () => {
  test('refuses to start with CHAIN=dev, WEBHOOK_ALLOW_PRIVATE=true and a short JWT_SECRET, listing each', async () => {
    const dataDir = path.join(root, 'production');
    const child = spawn(process.execPath, ['--import', 'tsx', 'src/main.ts'], {
      cwd: ROOT,
      env: { PATH: process.env.PATH, HOME: process.env.HOME, NODE_ENV: 'production', CHAIN: 'dev', WEBHOOK_ALLOW_PRIVATE: 'true', JWT_SECRET: 'short', PORT: '0', DATA_DIR: dataDir },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let stderr = '';
    let stdout = '';
    child.stderr.setEncoding('utf8').on('data', (d: string) => (stderr += d));
    child.stdout.setEncoding('utf8').on('data', (d: string) => (stdout += d));
    const code = await new Promise<number | null>((resolve) => child.once('exit', resolve));
    assert.equal(code, 1, stdout + stderr);
    assert.match(stderr, /Invalid configuration:/);
    assert.match(stderr, /- CHAIN=dev .*refused when NODE_ENV=production/);
    assert.match(stderr, /- WEBHOOK_ALLOW_PRIVATE=true is refused when NODE_ENV=production/);
    assert.match(stderr, /- JWT_SECRET must be at least 32 bytes when NODE_ENV=production/);
    assert.doesNotMatch(stdout, /Splitline\s+http/, 'it never listened');
    assert.equal(existsSync(dataDir), false, 'nothing was written');
  });
});
