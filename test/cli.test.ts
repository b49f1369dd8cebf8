/**
 * The operator CLI, run as a child process against a temporary DATA_DIR (or a fresh database on
 * the PostgreSQL server in DATABASE_URL). Keys it issues are then tried against the real app built
 * on the same database. With PGlite the CLI and the app never hold the database at the same time,
 * as the CLI's help tells operators.
 */
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { after, before, describe, test } from 'node:test';
import { pino } from 'pino';
import { buildApp } from '../src/app.ts';
import { loadConfig } from '../src/config.ts';
import { createDeps } from '../src/deps.ts';
import { freshPostgresDatabase, randomWallet } from './helpers/app.ts';

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');

let dataDir: string;
let fresh: { url: string; drop(): Promise<void> } | undefined;

before(async () => {
  dataDir = mkdtempSync(path.join(tmpdir(), 'splitline-cli-'));
  if (process.env.DATABASE_URL) fresh = await freshPostgresDatabase(process.env.DATABASE_URL);
});
after(async () => {
  await fresh?.drop();
  rmSync(dataDir, { recursive: true, force: true });
});

interface CliResult {
  code: number | null;
  stdout: string;
  stderr: string;
}

function cliEnv(): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = { ...process.env, DATA_DIR: dataDir, LOG_LEVEL: 'silent' };
  delete env.DATABASE_URL;
  delete env.REDIS_URL;
  if (fresh) env.DATABASE_URL = fresh.url;
  return env;
}

/** Runs the CLI; a process that does not exit on its own (an open database) fails the test. */
function cli(...args: string[]): Promise<CliResult> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, ['--import', 'tsx', 'src/cli.ts', ...args], { cwd: ROOT, env: cliEnv() });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (d: Buffer) => (stdout += d.toString()));
    child.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
    const timer = setTimeout(() => {
      child.kill('SIGKILL');
      reject(new Error(`cli ${args.join(' ')} did not exit within 60 s\nstdout: ${stdout}\nstderr: ${stderr}`));
    }, 60_000);
    child.on('error', reject);
    child.on('exit', (code) => {
      clearTimeout(timer);
      resolve({ code, stdout, stderr });
    });
  });
}

async function cliJson(...args: string[]): Promise<any> {
  const res = await cli(...args, '--json');
  assert.equal(res.code, 0, `cli ${args.join(' ')} failed: ${res.stderr}`);
  return JSON.parse(res.stdout);
}

/** Builds the real app on the CLI's database, runs `fn`, and closes it again. */
async function withApp(fn: (get: (key: string) => Promise<number>) => Promise<void>): Promise<void> {
  const config = loadConfig({
    DATA_DIR: dataDir,
    SITE_URL: 'http://pay.test',
    LOG_LEVEL: 'silent',
    ...(fresh ? { DATABASE_URL: fresh.url } : {}),
  });
  const deps = await createDeps(config, { logger: pino({ level: 'silent' }) });
  const app = await buildApp(deps);
  try {
    await app.ready();
    await fn(async (key) => {
      const res = await app.inject({ method: 'GET', url: '/api/receipts', headers: { 'ocp-apim-subscription-key': key } });
      return res.statusCode;
    });
  } finally {
    await app.close();
    await deps.close();
  }
}

describe('cli: usage', () => {
  test('help and --help print the usage, including the single-process note for PGlite', async () => {
    for (const args of [['help'], ['--help'], ['keys', '--help'], []]) {
      const res = await cli(...args);
      assert.equal(res.code, 0, args.join(' '));
      assert.match(res.stdout, /keys create --wallet/);
      assert.match(res.stdout, /server is stopped/);
      assert.match(res.stdout, /DATABASE_URL/);
    }
  });

  test('an unknown command or option prints the usage and exits 2', async () => {
    for (const args of [['frobnicate'], ['keys', 'frobnicate'], ['keys'], ['keys', 'list', '--frob'], ['keys', 'list', '--slot', 'primary']]) {
      const res = await cli(...args);
      assert.equal(res.code, 2, args.join(' '));
      assert.match(res.stderr, /Usage: npm run cli/, args.join(' '));
    }
  });

  test('products lists every product with its scopes', async () => {
    const out = await cliJson('products');
    const names = out.products.map((p: { name: string }) => p.name).sort();
    assert.deepEqual(names, ['checkout', 'full', 'readonly']);
    const full = out.products.find((p: { name: string }) => p.name === 'full');
    assert.ok(full.scopes.includes('receipts:read'));
    assert.ok(out.scopes.includes('users:read'));
    const human = await cli('products');
    assert.equal(human.code, 0);
    assert.match(human.stdout, /readonly/);
    assert.match(human.stdout, /split:read/);
  });
});

describe('cli: bad input exits 1 with a clear message', () => {
  const cases: [string, string[], RegExp][] = [
    ['missing wallet', ['keys', 'create'], /--wallet is required/],
    ['malformed wallet', ['keys', 'create', '--wallet', '0x1234'], /not a 0x-prefixed, 40-hex address/],
    ['unknown product', ['keys', 'create', '--wallet', randomWallet(), '--product', 'gold'], /Unknown product "gold"/],
    ['unknown scope', ['keys', 'create', '--wallet', randomWallet(), '--scopes', 'receipts:read,nope:x'], /Unknown scopes: nope:x/],
    ['rate limit not a number', ['keys', 'create', '--wallet', randomWallet(), '--rate-limit', 'fast'], /--rate-limit/],
    ['rate limit zero', ['keys', 'create', '--wallet', randomWallet(), '--rate-limit', '0'], /--rate-limit/],
    ['list with a malformed wallet', ['keys', 'list', '--wallet', 'merchant'], /not a 0x-prefixed/],
    ['rotate without an id', ['keys', 'rotate'], /subscription id/],
    ['rotate with a bad slot', ['keys', 'rotate', 'sub_x', '--slot', 'tertiary'], /--slot must be primary or secondary/],
    ['rotate an unknown subscription', ['keys', 'rotate', 'sub_does_not_exist'], /not found/],
    ['revoke an unknown subscription', ['keys', 'revoke', 'sub_does_not_exist'], /not found/],
  ];
  for (const [name, args, message] of cases) {
    test(name, async () => {
      const res = await cli(...args);
      assert.equal(res.code, 1, `${args.join(' ')}\n${res.stderr}`);
      assert.match(res.stderr, message);
      assert.doesNotMatch(res.stderr, /at .*\.ts:\d+/, 'no stack trace for bad input');
    });
  }

  test('--json errors are machine-readable too', async () => {
    const res = await cli('keys', 'revoke', 'sub_does_not_exist', '--json');
    assert.equal(res.code, 1);
    const body = JSON.parse(res.stdout);
    assert.equal(body.error, 'not_found');
    assert.equal(typeof body.message, 'string');
  });
});

describe('cli: key lifecycle against the app on the same database', () => {
  test('create, list, rotate and revoke; the app honours each step', async () => {
    const wallet = randomWallet();
    const other = randomWallet();

    // Human output shows both keys once, with the warning.
    const human = await cli('keys', 'create', '--wallet', wallet, '--name', 'Till 1', '--product', 'readonly');
    assert.equal(human.code, 0, human.stderr);
    const shown = [...human.stdout.matchAll(/spl_[A-Za-z0-9_-]{43}/g)].map((m) => m[0]);
    assert.equal(shown.length, 2, 'both keys are printed');
    assert.match(human.stdout, /cannot be shown again/);

    const created = await cliJson('keys', 'create', '--wallet', wallet, '--scopes', 'receipts:read,receipts:write', '--rate-limit', '50');
    const subId: string = created.subscription.id;
    assert.match(created.primaryKey, /^spl_/);
    assert.match(created.secondaryKey, /^spl_/);
    assert.notEqual(created.primaryKey, created.secondaryKey);
    assert.match(created.note, /cannot be shown again/);
    assert.deepEqual(created.subscription.scopes, ['receipts:read', 'receipts:write']);
    assert.equal(created.subscription.rateLimitPerMinute, 50);
    assert.equal(created.subscription.wallet, wallet.toLowerCase());
    await cliJson('keys', 'create', '--wallet', other);

    // Listing never shows a key, only prefixes; --wallet narrows it.
    for (const args of [['keys', 'list'], ['keys', 'list', '--json'], ['keys', 'list', '--wallet', wallet]]) {
      const res = await cli(...args);
      assert.equal(res.code, 0, res.stderr);
      for (const k of [created.primaryKey, created.secondaryKey, ...shown]) {
        assert.ok(!res.stdout.includes(k), `${args.join(' ')} must not print a key`);
      }
      assert.ok(res.stdout.includes(created.primaryKey.slice(0, 10)), 'the prefix is shown');
    }
    const mine = await cliJson('keys', 'list', '--wallet', wallet);
    assert.equal(mine.subscriptions.length, 2);
    assert.ok(mine.subscriptions.every((s: { wallet: string }) => s.wallet === wallet.toLowerCase()));
    const listed = mine.subscriptions.find((s: { id: string }) => s.id === subId);
    assert.deepEqual(
      listed.keys.map((k: { slot: string; prefix: string }) => [k.slot, k.prefix]),
      [
        ['primary', created.primaryKey.slice(0, 10)],
        ['secondary', created.secondaryKey.slice(0, 10)],
      ],
    );
    const all = await cliJson('keys', 'list');
    assert.ok(all.subscriptions.some((s: { wallet: string }) => s.wallet === other.toLowerCase()));

    await withApp(async (get) => {
      assert.equal(await get(created.primaryKey), 200);
      assert.equal(await get(created.secondaryKey), 200);
    });

    // Rotating the secondary key kills the old one and leaves the primary working.
    const rotated = await cliJson('keys', 'rotate', subId, '--slot', 'secondary');
    assert.equal(rotated.slot, 'secondary');
    assert.match(rotated.key, /^spl_/);
    const humanRotate = await cli('keys', 'rotate', subId);
    assert.equal(humanRotate.code, 0, humanRotate.stderr);
    const newPrimary = humanRotate.stdout.match(/spl_[A-Za-z0-9_-]{43}/)?.[0];
    assert.ok(newPrimary, 'the new primary key is printed');
    assert.match(humanRotate.stdout, /cannot be shown again/);

    await withApp(async (get) => {
      assert.equal(await get(created.primaryKey), 401, 'rotated-away primary');
      assert.equal(await get(created.secondaryKey), 401, 'rotated-away secondary');
      assert.equal(await get(newPrimary), 200);
      assert.equal(await get(rotated.key), 200);
    });

    const revoked = await cliJson('keys', 'revoke', subId);
    assert.equal(revoked.status, 'revoked');
    assert.equal(revoked.keysRevoked, 2);
    const after = (await cliJson('keys', 'list', '--wallet', wallet)).subscriptions.find((s: { id: string }) => s.id === subId);
    assert.equal(after.status, 'revoked');
    assert.deepEqual(after.keys, []);
    // A revoked subscription cannot be given a new key.
    const again = await cli('keys', 'rotate', subId);
    assert.equal(again.code, 1);
    assert.match(again.stderr, /revoked/);

    await withApp(async (get) => {
      assert.equal(await get(newPrimary), 401);
      assert.equal(await get(rotated.key), 401);
    });
  });
});
