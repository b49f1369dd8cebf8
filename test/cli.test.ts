/**
 * The operator CLI, run as a child process against a temporary DATA_DIR (or a fresh database on
 * the PostgreSQL server in DATABASE_URL). Keys it issues are then tried against the real app built
 * on the same database. With PGlite the CLI and the app never hold the database at the same time,
 * as the CLI's help tells operators.
 *
 * The process is the compiled CLI, dist/cli.js (scripts/ensure-server-build.ts; tsc only strips
 * the types): node loading tsx and transpiling the sources cost about a second more for each of
 * the fifty runs here. `npm run cli` runs the sources through tsx, so one test runs that entry too
 * and requires the same answer from it.
 */
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { after, before, describe, test } from 'node:test';
import { pino } from 'pino';
import { ensureServerBuild, SERVER_DIST } from '../scripts/ensure-server-build.ts';
import { buildApp } from '../src/app.ts';
import { loadConfig } from '../src/config.ts';
import { createDeps } from '../src/deps.ts';
import { and, eq } from 'drizzle-orm';
import { createWalletClient, erc20Abi, http, type Hex } from 'viem';
import { devAccount } from '../src/chain/dev-accounts.ts';
import { deploySplit, paymentSplitterAbi } from '../src/chain/split-contract.ts';
import { openDatabase } from '../src/db/client.ts';
import { lockDataDir } from '../src/db/data-dir-lock.ts';
import { splitTransactions } from '../src/db/schema.ts';
import { storeSplitConfig } from '../src/domain/splits.ts';
import { freshPostgresDatabase, randomWallet } from './helpers/app.ts';
import { CHAIN_WAIT_MS, PLATFORM, startTestChain, type TestChain } from './chain/helpers.ts';
import { runNode, type NodeRun } from './helpers/run-node.ts';
import { until } from './helpers/wait.ts';

let dataDir: string;
let fresh: { url: string; drop(): Promise<void> } | undefined;

before(async () => {
  await ensureServerBuild({ log: () => {} });
  dataDir = mkdtempSync(path.join(tmpdir(), 'splitline-cli-'));
  if (process.env.DATABASE_URL) fresh = await freshPostgresDatabase(process.env.DATABASE_URL);
});
after(async () => {
  await fresh?.drop();
  rmSync(dataDir, { recursive: true, force: true });
});

function cliEnv(): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = { ...process.env, DATA_DIR: dataDir, LOG_LEVEL: 'silent' };
  delete env.DATABASE_URL;
  delete env.REDIS_URL;
  if (fresh) env.DATABASE_URL = fresh.url;
  return env;
}

/** Runs the CLI; a process that does not exit on its own (an open database) fails the test. */
function cli(...args: string[]): Promise<NodeRun> {
  return cliIn(cliEnv(), ...args);
}

/** The compiled CLI (what most tests run), and the sources as `npm run cli` runs them. */
const COMPILED = [path.join(SERVER_DIST, 'cli.js')];
const SOURCES = ['--import', 'tsx', 'src/cli.ts'];

function cliIn(env: NodeJS.ProcessEnv, ...args: string[]): Promise<NodeRun> {
  return runEntry(COMPILED, env, args);
}

function runEntry(entry: string[], env: NodeJS.ProcessEnv, args: string[]): Promise<NodeRun> {
  return runNode([...entry, ...args], env);
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
    for (const args of [
      ['frobnicate'],
      ['keys', 'frobnicate'],
      ['keys'],
      ['keys', 'list', '--frob'],
      ['keys', 'list', '--slot', 'primary'],
      ['dev'],
      ['dev', 'frobnicate'],
      ['dev', 'merchant', '--key', 'spl_x'],
      ['dev', 'pay', 'x', '--wallet', randomWallet()],
    ]) {
      const res = await cli(...args);
      assert.equal(res.code, 2, args.join(' '));
      assert.match(res.stderr, /Usage: npm run cli/, args.join(' '));
    }
  });

  test('npm run cli\'s entry, the sources through tsx, starts and answers as the compiled CLI does', async () => {
    for (const args of [['products', '--json'], ['keys', 'rotate', 'sub_x', '--slot', 'tertiary']]) {
      const [sources, compiled] = await Promise.all([runEntry(SOURCES, cliEnv(), args), cli(...args)]);
      assert.deepEqual(sources, compiled, args.join(' '));
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
    ['dev pay without a receipt', ['dev', 'pay'], /The receipt to pay/],
    ['dev pay with a receipt id but no key', ['dev', 'pay', '1001'], /needs the receipt's payment URL .*or its id with --key/],
    ['dev merchant as the service account', ['dev', 'merchant', '--account', '9'], /test account 9 is the service's own/],
    ['dev merchant with no such account', ['dev', 'merchant', '--account', 'ten'], /--account must be a test account from 0 to 8/],
    ['dev merchant with a bad --url', ['dev', 'merchant', '--url', 'localhost'], /--url must be the server's address/],
    // Port 9 (discard) on loopback: nothing listens there.
    ['dev merchant with no server', ['dev', 'merchant', '--url', 'http://127.0.0.1:9'], /no Splitline server answers at http:\/\/127\.0\.0\.1:9 .*start it with npm start/],
  ];
  for (const [name, args, message] of cases) {
    test(name, async () => {
      const res = await cli(...args);
      assert.equal(res.code, 1, `${args.join(' ')}\n${res.stderr}`);
      assert.match(res.stderr, message);
      assert.doesNotMatch(res.stderr, /at .*\.[jt]s:\d+/, 'no stack trace for bad input');
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

describe('cli: the database it opened', () => {
  test('named on stderr, one line, whatever the command prints on stdout', async () => {
    const res = await cli('keys', 'list', '--json');
    assert.equal(res.code, 0, res.stderr);
    const named = res.stderr.split('\n').filter((l) => l.startsWith('Database: '));
    const expected = fresh ? `Database: PostgreSQL (${new URL(fresh.url).hostname}:` : `Database: PGlite (${path.join(dataDir, 'pglite')})`;
    assert.equal(named.length, 1, res.stderr);
    assert.ok(named[0]!.startsWith(expected), `${named[0]} starts with ${expected}`);
    assert.ok(Array.isArray(JSON.parse(res.stdout).subscriptions), 'stdout stays JSON');
  });

  test('an embedded DATA_DIR a running process holds: one line naming it and the way out, exit 1', async () => {
    // The lock the server takes (src/db/data-dir-lock.ts), held here by this test's own process.
    const held = mkdtempSync(path.join(tmpdir(), 'splitline-cli-held-'));
    const lock = lockDataDir(held);
    try {
      const env: NodeJS.ProcessEnv = { ...cliEnv(), DATA_DIR: held };
      delete env.DATABASE_URL;
      for (const args of [['keys', 'list'], ['keys', 'create', '--wallet', randomWallet()]]) {
        const res = await cliIn(env, ...args);
        assert.equal(res.code, 1, res.stderr);
        const lines = res.stderr.trim().split('\n');
        assert.equal(lines.length, 1, `one line, no stack trace:\n${res.stderr}`);
        assert.match(lines[0]!, new RegExp(`^error: DATA_DIR ${held} is in use by process ${process.pid} .*Stop that process, or point both at PostgreSQL with DATABASE_URL\\.`));
        assert.match(lines[0]!, /npm run cli -- dev merchant issues a key through the running server/);
      }
      const json = await cliIn(env, 'keys', 'list', '--json');
      assert.equal(json.code, 1);
      assert.equal(JSON.parse(json.stdout).error, 'data_dir_locked');
    } finally {
      lock.release();
      rmSync(held, { recursive: true, force: true });
    }
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

/**
 * reconcile joins the test's anvil through RPC_URL (with its USDC_ADDRESS) and reads a database
 * the real chain worker indexed: a stopped app's PGlite DATA_DIR (the CLI refuses one a running
 * server holds), or a fresh PostgreSQL database when DATABASE_URL is set.
 */
describe('cli: reconcile', { timeout: 240_000 }, () => {
  let tc: TestChain;
  let reconDir: string;
  let db: { url: string; drop(): Promise<void> } | undefined;
  const merchant = randomWallet().toLowerCase();
  let split: Hex;

  const env = (extra: Record<string, string> = {}): NodeJS.ProcessEnv => {
    const e: NodeJS.ProcessEnv = { ...process.env, LOG_LEVEL: 'silent', CHAIN: 'dev', DATA_DIR: reconDir };
    for (const name of ['DATABASE_URL', 'REDIS_URL', 'RPC_URL', 'USDC_ADDRESS', 'SPLIT_DEPLOYER_KEY', 'PAYMENT_FACTORY_ADDRESS']) delete e[name];
    if (db) e.DATABASE_URL = db.url;
    return { ...e, RPC_URL: tc.chain.rpcUrl, USDC_ADDRESS: tc.chain.usdc.address, ...extra };
  };
  const reconcile = (...args: string[]) => cliIn(env(), 'reconcile', ...args);
  /** The database the CLI reads, opened here while no app holds it. */
  const withDb = async (fn: (d: Awaited<ReturnType<typeof openDatabase>>['db']) => Promise<void>) => {
    const d = await openDatabase({ databaseUrl: db?.url, dataDir: reconDir, poolSize: 1 });
    try {
      await fn(d.db);
    } finally {
      await d.close();
    }
  };

  before(async () => {
    tc = await startTestChain();
    reconDir = mkdtempSync(path.join(tmpdir(), 'splitline-cli-reconcile-'));
    if (process.env.DATABASE_URL) db = await freshPostgresDatabase(process.env.DATABASE_URL);
    const config = loadConfig({
      DATA_DIR: reconDir,
      SITE_URL: 'http://pay.test',
      LOG_LEVEL: 'silent',
      CHAIN: 'dev',
      CONFIRMATIONS: '1',
      PLATFORM_RECIPIENT_ADDRESS: PLATFORM,
      ...(db ? { DATABASE_URL: db.url } : {}),
    });
    const deps = await createDeps(config, { logger: pino({ level: 'silent' }), chain: tc.chain });
    try {
      const { publicClient, walletClient } = tc.chain;
      const recipients = [
        { address: devAccount(4).address.toLowerCase(), sharesBps: 9950 },
        { address: PLATFORM, sharesBps: 50 },
      ];
      split = (await deploySplit({ walletClient: walletClient!, publicClient, recipients })).address.toLowerCase() as Hex;
      await storeSplitConfig(deps.database.db, merchant, { address: split, recipients });
      deps.startWorkers();
      // A fresh install reads nothing of the past: its first pass places the cursor at the head.
      // Money moved before that pass would lie behind the cursor, never indexed.
      await until(() => deps.chainWorker?.lastPass !== undefined, CHAIN_WAIT_MS, "the worker's first pass");
      const send = async (from: number, write: (w: ReturnType<typeof createWalletClient>) => Promise<Hex>) => {
        const w = createWalletClient({ chain: publicClient.chain, transport: http(tc.chain.rpcUrl), account: devAccount(from) });
        const hash = await write(w);
        assert.equal((await publicClient.waitForTransactionReceipt({ hash })).status, 'success');
      };
      await send(0, (w) => w.writeContract({ chain: w.chain, account: w.account!, address: tc.chain.usdc.address, abi: erc20Abi, functionName: 'transfer', args: [split, 2_000_003n] }));
      await send(4, (w) =>
        w.writeContract({ chain: w.chain, account: w.account!, address: split, abi: paymentSplitterAbi, functionName: 'release', args: [tc.chain.usdc.address, devAccount(4).address] }),
      );
      const head = await publicClient.getBlockNumber({ cacheTime: 0 });
      await until(() => (deps.chainWorker?.lastPass?.head ?? 0n) >= head, CHAIN_WAIT_MS, 'the worker to index the newest block');
    } finally {
      await deps.close();
    }
  });
  after(async () => {
    await tc?.close();
    await db?.drop();
    if (reconDir) rmSync(reconDir, { recursive: true, force: true });
  });

  test('exit 0 and one OK line per split when the chain and the index agree; --json says the same', async () => {
    const human = await reconcile();
    assert.equal(human.code, 0, human.stderr + human.stdout);
    assert.match(human.stdout, new RegExp(`OK +merchant ${merchant} +split ${split}`));
    assert.match(human.stdout, /received 2\.000003 = 2\.000003 indexed/);
    assert.match(human.stdout, /All 1 split\(s\) match/);
    const json = JSON.parse((await reconcile('--json', '--wallet', merchant)).stdout);
    assert.equal(json.ok, true);
    const released = ((2_000_003n * 9950n) / 10_000n).toString();
    assert.deepEqual(json.splits, [
      {
        merchant,
        split,
        matches: true,
        chain: { received: '2000003', released },
        indexed: { received: '2000003', released, payments: 1, releases: 1 },
        difference: { received: '0', released: '0' },
      },
    ]);
  });

  test('exit 1 with a DIFF line when an indexed row is missing', async () => {
    let removed: typeof splitTransactions.$inferSelect | undefined;
    await withDb(async (d) => {
      [removed] = await d
        .delete(splitTransactions)
        .where(and(eq(splitTransactions.splitAddress, split), eq(splitTransactions.kind, 'payment')))
        .returning();
    });
    assert.ok(removed);
    try {
      const human = await reconcile();
      assert.equal(human.code, 1, human.stderr + human.stdout);
      assert.match(human.stdout, new RegExp(`DIFF +merchant ${merchant} +split ${split} +received 2\\.000003 on chain, 0 indexed \\(difference \\+2\\.000003\\)`));
      assert.match(human.stdout, /1 of 1 split\(s\) differ/);
      const json = await reconcile('--json');
      assert.equal(json.code, 1);
      const body = JSON.parse(json.stdout);
      assert.equal(body.ok, false);
      assert.deepEqual(body.splits[0].difference, { received: '2000003', released: '0' });
    } finally {
      await withDb(async (d) => {
        await d.insert(splitTransactions).values(removed!);
      });
    }
  });

  test('bad input exits 1, bad usage 2; without RPC_URL it says what to set', async () => {
    const noChain = env();
    delete noChain.RPC_URL;
    delete noChain.USDC_ADDRESS;
    // Only the first opens the database, so the three can run side by side.
    const [unknown, noRpc, usage] = await Promise.all([
      reconcile('--wallet', randomWallet()),
      cliIn(noChain, 'reconcile'),
      reconcile('--slot', 'primary'),
    ]);
    assert.equal(unknown.code, 1);
    assert.match(unknown.stderr, /has no split contract/);
    assert.equal(noRpc.code, 1);
    assert.match(noRpc.stderr, /set RPC_URL/);
    assert.equal(usage.code, 2);
    assert.match(usage.stderr, /--slot does not apply to "reconcile"/);
    assert.match(usage.stderr, /reconcile \[--wallet 0x…\]/, 'the usage names the command');
    assert.match(usage.stderr, /RPC_URL\s+is required/);
    assert.match(usage.stderr, /splits must be indexed from their deployment/);
  });
});
