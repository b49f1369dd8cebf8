/**
 * The README's quick start, followed literally: the shell blocks between its quickstart:begin and
 * quickstart:end markers are read from README.md and run as written, so the two cannot drift.
 * `npm install` is taken as done (the test runs from the installed checkout: CI's fresh clone after
 * `npm ci`, where this is a first start with its builds); `npm start` runs in the background as the
 * first terminal; every other command runs in order in one bash, as the second terminal, so the
 * variables the README sets carry over. What the test changes, through the environment only: a
 * temporary DATA_DIR, free PORT and DEV_CHAIN_PORT, and `localhost:8080` in the commands pointed at
 * that PORT. It ends when the receipt the README creates is `completed`, settled by the chain worker.
 * On the same server, `dev pay` with the payment URL alone, the other form the README names.
 */
import assert from 'node:assert/strict';
import { spawn, type ChildProcess } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { after, before, describe, test } from 'node:test';
import { devAccount } from '../src/chain/dev-accounts.ts';
import { CHAIN_WAIT_MS } from './chain/helpers.ts';
import { until, waitFor } from './helpers/wait.ts';
import { http, ROOT } from './helpers/service.ts';
import { freePort } from '../scripts/service-launcher.ts';

const README_PORT = '8080';
/** A first start builds the web app and the server and creates the database (about a minute on 2 busy cores). */
const START_TIMEOUT_MS = 400_000;
const COMMANDS_TIMEOUT_MS = 180_000;

/** The commands of the README's quick start, continuation lines joined, in order. */
function quickStartCommands(readme: string): string[] {
  const begin = readme.indexOf('<!-- quickstart:begin');
  const end = readme.indexOf('<!-- quickstart:end -->');
  assert.ok(begin !== -1 && end > begin, 'README.md marks its quick start with quickstart:begin and quickstart:end');
  const blocks = [...readme.slice(begin, end).matchAll(/^```sh\n([\s\S]*?)^```$/gm)].map((m) => m[1]!);
  assert.ok(blocks.length > 0, 'the quick start has sh blocks');
  return blocks.flatMap((block) =>
    block
      .replace(/\\\n\s*/g, ' ')
      .split('\n')
      .map((line) => line.trim())
      .filter((line) => line !== '' && !line.startsWith('#')),
  );
}

let server: ChildProcess | undefined;
let dataDir: string | undefined;
/** npm start runs in a process group of its own (npm, its shell, node, anvil): stopped together. */
const killServer = (signal: NodeJS.Signals) => {
  if (server?.pid === undefined) return;
  try {
    process.kill(-server.pid, signal);
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== 'ESRCH') throw err;
  }
};
process.on('exit', () => killServer('SIGKILL'));

/** Some process of npm start's group still runs (npm leaves first; the service stops its dev chain, then itself). */
function groupAlive(): boolean {
  if (server?.pid === undefined) return false;
  try {
    process.kill(-server.pid, 0);
    return true;
  } catch (err) {
    return (err as NodeJS.ErrnoException).code !== 'ESRCH';
  }
}

after(async () => {
  killServer('SIGTERM');
  await until(() => !groupAlive(), 30_000, 'npm start and the service to stop').catch(() => {
    if (server?.pid !== undefined && groupAlive()) process.kill(-server.pid, 'SIGKILL');
  });
  // The dev chain's watchdog may still be saving its last state when the service is gone.
  if (dataDir !== undefined) rmSync(dataDir, { recursive: true, force: true, maxRetries: 10, retryDelay: 200 });
});

/** Runs `command` in bash in the checkout with `env`; a command still running after `timeoutMs` is killed. */
async function bash(command: string, env: NodeJS.ProcessEnv, timeoutMs: number): Promise<{ code: number | null; stdout: string; stderr: string }> {
  const run = spawn('bash', ['-c', command], { cwd: ROOT, env, stdio: ['ignore', 'pipe', 'pipe'] });
  let stdout = '';
  let stderr = '';
  run.stdout.setEncoding('utf8').on('data', (d: string) => (stdout += d));
  run.stderr.setEncoding('utf8').on('data', (d: string) => (stderr += d));
  const timer = setTimeout(() => run.kill('SIGKILL'), timeoutMs);
  const code = await new Promise<number | null>((resolve) => run.once('exit', resolve));
  clearTimeout(timer);
  return { code, stdout, stderr };
}

describe(
  "the README's quick start",
  {
    timeout: START_TIMEOUT_MS + 2 * COMMANDS_TIMEOUT_MS + 60_000,
    skip: process.env.DATABASE_URL ? 'the quick start runs on the embedded defaults (the pass without DATABASE_URL runs it)' : false,
  },
  () => {
    const commands = quickStartCommands(readFileSync(path.join(ROOT, 'README.md'), 'utf8'));
    const startAt = commands.indexOf('npm start');
    let env: NodeJS.ProcessEnv;
    let port: string;
    let serverOutput = '';

    // The first terminal: the commands up to `npm start`, which keeps running.
    before(async () => {
      assert.ok(startAt !== -1, `the quick start runs npm start: ${JSON.stringify(commands)}`);
      for (const c of commands.slice(0, startAt)) assert.match(c, /^npm (install|ci)\b/, `before npm start, only the install: ${c}`);
      assert.ok(existsSync(path.join(ROOT, 'node_modules')), 'installed (npm install is not run here)');
      port = String(await freePort());
      dataDir = mkdtempSync(path.join(tmpdir(), 'splitline-quickstart-'));
      env = { PATH: process.env.PATH, HOME: process.env.HOME, DATA_DIR: dataDir, PORT: port, DEV_CHAIN_PORT: String(await freePort()) };
      server = spawn('npm', ['start'], { cwd: ROOT, env, detached: true, stdio: ['ignore', 'pipe', 'pipe'] });
      server.stdout!.setEncoding('utf8').on('data', (d: string) => (serverOutput += d));
      server.stderr!.setEncoding('utf8').on('data', (d: string) => (serverOutput += d));
      const exited = new Promise<number | null>((resolve) => server!.once('exit', resolve));
      await Promise.race([
        until(() => /Splitline\s+http:\/\/\S+/.test(serverOutput), START_TIMEOUT_MS, 'npm start to print its banner'),
        exited.then((code) => {
          throw new Error(`npm start exited (${code}) before listening`);
        }),
      ]).catch((err: unknown) => {
        throw new Error(`${err instanceof Error ? err.message : String(err)}\n${serverOutput.slice(-4000)}`);
      });
    }, { timeout: START_TIMEOUT_MS + 30_000 });

    test('run as written, in a second terminal, it ends with a completed receipt', async () => {
      assert.match(serverOutput, /KEY=\$\(npm run -s cli -- dev merchant/, 'the banner names the next step');
      const second = commands.slice(startAt + 1);
      assert.ok(second.length > 0, 'the quick start goes on after npm start');
      // One bash, so KEY and the like carry over from line to line.
      const script = ['set -euo pipefail', ...second.map((c) => c.replaceAll(`localhost:${README_PORT}`, `localhost:${port}`))].join('\n');
      const { code, stdout, stderr } = await bash(script, env, COMMANDS_TIMEOUT_MS);
      const context = `script:\n${script}\nstdout:\n${stdout}\nstderr:\n${stderr}\nserver:\n${serverOutput.slice(-3000)}`;
      assert.equal(code, 0, context);

      // What the README says the commands print: the new receipt's payment URL, and at the end its status.
      const created = /\{"id":"([^"]+)","paymentUrl":"([^"]+)"/.exec(stdout);
      assert.ok(created !== null, `the receipt was created\n${context}`);
      const last = JSON.parse(stdout.trim().split('\n').at(-1)!) as { id: string; status: string };
      assert.equal(last.id, created[1]);
      assert.equal(last.status, 'completed', context);

      // And the payment page's API agrees, asked on its own (no key needed with the payment URL).
      const payUrl = new URL(created[2]!);
      const id = decodeURIComponent(payUrl.pathname.split('/').at(-1)!);
      const view = await waitFor(async () => {
        const res = await http(`http://127.0.0.1:${port}`, 'GET', `/api/pay/${encodeURIComponent(id)}${payUrl.search}`);
        return res.status === 200 && res.body.status === 'completed' ? res.body : undefined;
      }, CHAIN_WAIT_MS, 'the receipt to be completed');
      assert.equal(view.payment.due, '0');
      assert.equal(view.payment.paid, view.payment.amount);
    });

    test('dev pay takes the payment URL alone, and other test accounts', async () => {
      const merchant = await bash('npm run -s cli -- dev merchant --account 2 --json', env, COMMANDS_TIMEOUT_MS);
      assert.equal(merchant.code, 0, merchant.stderr);
      const { primaryKey, wallet } = JSON.parse(merchant.stdout) as { primaryKey: string; wallet: string };
      assert.equal(wallet, devAccount(2).address.toLowerCase());
      const base = `http://127.0.0.1:${port}`;
      const receipt = await http(base, 'POST', '/api/receipts', {
        key: primaryKey,
        body: { id: 'quickstart-url', lineItems: [{ label: 'Tea', priceUsd: 2.25 }], totalUsd: 2.25 },
      });
      assert.equal(receipt.status, 201, JSON.stringify(receipt.body));
      const paid = await bash(`npm run -s cli -- dev pay '${receipt.body.paymentUrl}' --account 3 --json`, env, COMMANDS_TIMEOUT_MS);
      assert.equal(paid.code, 0, paid.stderr);
      const result = JSON.parse(paid.stdout) as { receiptId: string; status: string; from: string; amount: string };
      assert.deepEqual(
        { receiptId: result.receiptId, status: result.status, from: result.from, amount: result.amount },
        { receiptId: 'quickstart-url', status: 'completed', from: devAccount(3).address.toLowerCase(), amount: '2.25 USDC' },
      );
      // Paid already: a second run sends nothing and says so.
      const again = await bash(`npm run -s cli -- dev pay '${receipt.body.paymentUrl}' --account 3`, env, COMMANDS_TIMEOUT_MS);
      assert.equal(again.code, 0, again.stderr);
      assert.match(again.stderr, /needs nothing more/);
      assert.match(again.stdout, /^Receipt quickstart-url is completed/);
    });
  },
);
