/**
 * Payment latency on the dev chain (issue 4, item 8): from the block that includes a buyer's
 * payment to the receipt being `completed`, and to its `receipt.completed` webhook arriving.
 * Target: p50 ≤ 1 s for both, with CONFIRMATIONS=1.
 *
 * Starts the real service as a child process with CHAIN=dev (its own anvil, automining: a
 * transaction's block is sealed when the node accepts it), a merchant with a deployed split, and
 * a loopback webhook receiver. Then, one receipt at a time, a funded dev account transfers exactly
 * `payment.due` of `payment.tokenAddress` to the receipt's own payment address `payment.payTo`,
 * as read from GET /api/pay/<id> (docs: /work/shared/DESIGN.md, "Payments"). The bench also posts
 * the hash as the payment page does, but it is only a hint: the chain worker finds the transfer
 * by scanning blocks whether or not a hash arrives. Before `completed` the worker must see the
 * transfer, send the sweep of the payment address into the split (one transaction through the
 * factory), see the sweep in a later block and have both CONFIRMATIONS deep: the figures below
 * include all of that. Per receipt:
 *
 *   included   the moment the bench holds the transaction receipt (the block exists)
 *   completed  the `at` of the `completed` entry in the receipt's status history (service clock,
 *              same machine), and the moment GET /api/pay/<id> first shows it (polled every 50 ms)
 *   webhook    the moment the receiver gets the `receipt.completed` delivery
 *
 * Each receipt is checked afterwards: the payment address holds nothing, the split received the
 * amount in a sweep attributed to the receipt (its block is recorded in the sample), and the
 * webhook names the payment's transaction and payment address.
 *
 * Writes bench/results/payments-latest.{json,md} (payments-quick.* with BENCH_QUICK=1).
 *   BENCH_PAYMENTS=n   receipts to pay (default 30, 10 with BENCH_QUICK=1; 0 skips this part)
 *   DATABASE_URL       run the service on that PostgreSQL server (in a database of its own)
 * Run alone with `tsx bench/payments.ts`; `npm run bench` runs it after the route bench.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { createServer, type Server as HttpServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { pathToFileURL } from 'node:url';
import { createPublicClient, createWalletClient, defineChain, erc20Abi, http, type Hex, type TransactionReceipt } from 'viem';
import { generatePrivateKey, privateKeyToAccount } from 'viem/accounts';
import { foundry } from 'viem/chains';
import { devAccount } from '../src/chain/dev-accounts.ts';
import type { Challenge, SignedIn } from '../src/contract/auth.ts';
import type { DevChain } from '../src/contract/dev-chain.ts';
import type { PaymentView } from '../src/contract/pay.ts';
import type { CreatedReceipt, ReceiptDetail } from '../src/contract/receipts.ts';
import type { SplitDeployed, SplitTransactions } from '../src/contract/split.ts';
import type { SubscriptionCreated } from '../src/contract/subscriptions.ts';
import { compiledProgram, freePort, launchService, type LaunchedService } from '../scripts/service-launcher.ts';
import { freshPostgresDatabase } from '../test/helpers/app.ts';
import { isQuick, machine, withCleanup, writeBenchResults, type Machine } from './bench-run.ts';
import { benchGasless, gaslessCount, type GaslessReport } from './gasless.ts';

const PLATFORM = '0x000000000000000000000000000000000000beef';
const TARGET_MS = 1000;
const POLL_MS = 50;
/** The first nine dev accounts are free for buyers; the tenth deploys splits. */
const BUYERS = 9;

export interface PaymentSample {
  receiptId: string;
  /** The receipt's own payment address (payment.payTo), where the buyer sent the money. */
  payTo: string;
  /** The block of the buyer's transfer. */
  blockNumber: number;
  /** The block of the worker's sweep of payTo into the split (after blockNumber). */
  sweepBlockNumber: number;
  /** Unix ms the bench held the transaction receipt. */
  includedAt: number;
  /** Gas of the buyer's transfer, and of the worker's sweep: what a gasless payment's one transaction compares with. */
  transferGas: number;
  sweepGas: number;
  completedMs: number;
  visibleMs: number;
  webhookMs: number;
}

export interface Stats {
  p50: number;
  p95: number;
  max: number;
}

export interface PaymentsReport {
  generatedAt: string;
  database: 'pglite' | 'postgres';
  machine: Machine;
  settings: { receipts: number; confirmations: 1; pollMs: number; quick: boolean };
  completed: Stats;
  visible: Stats;
  webhook: Stats;
  targets: { target: string; measured: string; result: 'PASS' | 'MISS' }[];
  samples: PaymentSample[];
  /** Gas per gasless payment (bench/gasless.ts); null when BENCH_GASLESS=0. */
  gasless: GaslessReport | null;
}

export function percentile(sorted: number[], p: number): number {
  if (sorted.length === 0) return NaN;
  const i = Math.min(sorted.length - 1, Math.max(0, Math.ceil((p / 100) * sorted.length) - 1));
  return sorted[i]!;
}

function stats(values: number[]): Stats {
  const sorted = [...values].sort((a, b) => a - b);
  return { p50: percentile(sorted, 50), p95: percentile(sorted, 95), max: sorted[sorted.length - 1] ?? NaN };
}

// ---- talking to the service ----

interface Http {
  base: string;
  cookie?: string;
  csrf?: string;
  key?: string;
}

/** One request; `T` is the answer the route's contract promises (the bench checks the status, not the shape). */
async function call<T = unknown>(h: Http, method: string, url: string, body?: unknown): Promise<{ status: number; json: T; res: Response }> {
  const headers: Record<string, string> = { origin: h.base };
  if (body !== undefined) headers['content-type'] = 'application/json';
  if (h.cookie !== undefined) headers.cookie = h.cookie;
  if (h.csrf !== undefined) headers['x-csrf-token'] = h.csrf;
  if (h.key !== undefined) headers['ocp-apim-subscription-key'] = h.key;
  const res = await fetch(h.base + url, { method, headers, body: body === undefined ? undefined : JSON.stringify(body) });
  const text = await res.text();
  return { status: res.status, json: (text === '' ? null : JSON.parse(text)) as T, res };
}

async function expectStatus<T>(p: Promise<{ status: number; json: T }>, status: number, what: string): Promise<T> {
  const r = await p;
  if (r.status !== status) throw new Error(`${what}: expected ${status}, got ${r.status} ${JSON.stringify(r.json)}`);
  return r.json;
}

/** A merchant signed in through the EIP-712 flow, with a deployed split, a key and a webhook. */
async function setUpMerchant(base: string, webhookUrl: string) {
  const account = privateKeyToAccount(generatePrivateKey());
  const anon: Http = { base };
  const { nonce, typedData } = await expectStatus(call<Challenge>(anon, 'POST', '/api/auth/challenge', { wallet: account.address }), 200, 'challenge');
  const { EIP712Domain: _domain, ...types } = typedData.types;
  const signature = await account.signTypedData({ domain: typedData.domain, types, primaryType: typedData.primaryType, message: typedData.message });
  const login = await call<SignedIn>(anon, 'POST', '/api/auth/login', { wallet: account.address, nonce, signature });
  if (login.status !== 200) throw new Error(`login: ${login.status} ${JSON.stringify(login.json)}`);
  const cookie = login.res.headers.getSetCookie().find((c) => c.startsWith('cb_auth_token='))?.split(';')[0];
  if (cookie === undefined) throw new Error('login set no session cookie');
  const session: Http = { base, cookie, csrf: login.json.csrfToken };
  const wallet = account.address.toLowerCase();
  const deployed = await expectStatus(
    call<SplitDeployed>(session, 'POST', '/api/split/deploy', { recipients: [{ address: wallet, sharesBps: 9950 }, { address: PLATFORM, sharesBps: 50 }] }),
    200,
    'split deploy',
  );
  await expectStatus(call(session, 'POST', '/api/admin/webhooks', { url: webhookUrl, events: ['receipt.completed'] }), 201, 'webhook registration');
  const sub = await expectStatus(call<SubscriptionCreated>(session, 'POST', '/api/admin/subscriptions', { name: 'bench' }), 201, 'subscription');
  return { split: deployed.split.address as Hex, keyed: { base, key: sub.primaryKey } satisfies Http };
}

/** The parts of a `receipt.completed` delivery the bench checks. */
interface CompletedEvent {
  type: string;
  data: { receiptId: string; status: string; exception: string | null; amount: string; amountPaid: string; amountDue: string; transactionHash: string | null; payTo: string | null };
}

/** Records when each receipt's `receipt.completed` webhook arrives, and what it said. */
async function startReceiver(): Promise<{
  url: string;
  arrived: Map<string, number>;
  payloads: Map<string, CompletedEvent>;
  wait(id: string, ms: number): Promise<number>;
  close(): Promise<void>;
}> {
  const arrived = new Map<string, number>();
  const payloads = new Map<string, CompletedEvent>();
  const waiters = new Map<string, (at: number) => void>();
  const server: HttpServer = createServer((req, res) => {
    const at = Date.now();
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      res.writeHead(204).end();
      const body = JSON.parse(Buffer.concat(chunks).toString('utf8')) as Partial<CompletedEvent>;
      const id = body.data?.receiptId;
      if (body.type !== 'receipt.completed' || id === undefined || arrived.has(id)) return;
      arrived.set(id, at);
      payloads.set(id, body as CompletedEvent);
      waiters.get(id)?.(at);
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}/hook`,
    arrived,
    payloads,
    wait(id, ms) {
      const known = arrived.get(id);
      if (known !== undefined) return Promise.resolve(known);
      return new Promise((resolve, reject) => {
        const timer = setTimeout(() => reject(new Error(`no webhook for ${id} within ${ms} ms`)), ms);
        waiters.set(id, (at) => {
          clearTimeout(timer);
          resolve(at);
        });
      });
    },
    close: () => new Promise((resolve) => server.close(() => resolve())),
  };
}

// ---- one payment ----

interface Quote {
  chainId: number;
  tokenAddress: Hex;
  tokenSymbol: string;
  tokenDecimals: number;
  payTo: Hex;
  splitAddress: Hex;
  amount: string;
  paid: string;
  due: string;
}

const same = (a: string | null | undefined, b: string | null | undefined) => a != null && b != null && a.toLowerCase() === b.toLowerCase();

async function payOne(o: {
  keyed: Http;
  chain: { rpcUrl: string; token: Hex; split: Hex };
  buyer: number;
  id: string;
  receiver: Awaited<ReturnType<typeof startReceiver>>;
}): Promise<PaymentSample> {
  const created = await expectStatus(
    call<CreatedReceipt>(o.keyed, 'POST', '/api/receipts', { id: o.id, lineItems: [{ label: 'Bench item', priceUsd: 1.23 }], totalUsd: 1.23 }),
    201,
    'receipt',
  );
  const search = new URL(created.paymentUrl).search;
  const pay = { base: o.keyed.base } satisfies Http;
  const quote = (await expectStatus(call<PaymentView>(pay, 'GET', `/api/pay/${o.id}${search}`), 200, 'quote')).payment as Quote;
  // What the payment page would show: the receipt's own address, never the split itself.
  if (!/^0x[0-9a-fA-F]{40}$/.test(quote.payTo ?? '')) throw new Error(`${o.id}: payment.payTo is ${JSON.stringify(quote.payTo)}`);
  if (same(quote.payTo, o.chain.split)) throw new Error(`${o.id}: payment.payTo is the split itself`);
  if (!same(quote.splitAddress, o.chain.split)) throw new Error(`${o.id}: payment.splitAddress ${quote.splitAddress} is not the merchant's split ${o.chain.split}`);
  if (!same(quote.tokenAddress, o.chain.token)) throw new Error(`${o.id}: payment.tokenAddress ${quote.tokenAddress} is not the dev chain's USDC ${o.chain.token}`);
  if (quote.paid !== '0' || quote.due !== quote.amount || BigInt(quote.due) <= 0n) throw new Error(`${o.id}: unexpected amounts before paying ${JSON.stringify(quote)}`);
  const chain = defineChain({ ...foundry, rpcUrls: { default: { http: [o.chain.rpcUrl] } } });
  const transport = http(o.chain.rpcUrl);
  const wallet = createWalletClient({ chain, transport, account: devAccount(o.buyer) });
  const client = createPublicClient({ chain, transport });

  const hash = await wallet.writeContract({ address: quote.tokenAddress, abi: erc20Abi, functionName: 'transfer', args: [quote.payTo, BigInt(quote.due)] });
  let mined: TransactionReceipt | undefined;
  while (mined === undefined) {
    mined = await client.getTransactionReceipt({ hash }).catch((err: unknown) => {
      if ((err as { name?: string }).name === 'TransactionReceiptNotFoundError') return undefined;
      throw err;
    });
    if (mined === undefined) await new Promise((resolve) => setTimeout(resolve, 10));
  }
  const includedAt = Date.now();
  if (mined.status !== 'success') throw new Error(`payment ${hash} reverted`);
  // Only a hint (the worker finds the transfer by its address without it), sent as the payment page does.
  await expectStatus(call(pay, 'POST', `/api/pay/${o.id}/transaction${search}`, { transactionHash: hash }), 202, 'hint');

  let visibleAt: number | undefined;
  const webhook = o.receiver.wait(o.id, 30_000);
  const deadline = Date.now() + 30_000;
  while (visibleAt === undefined) {
    const view = await expectStatus(call<PaymentView>(pay, 'GET', `/api/pay/${o.id}${search}`), 200, 'status');
    if (view.status === 'completed') visibleAt = Date.now();
    else if (['tx_mismatch', 'failed'].includes(view.status)) throw new Error(`${o.id} ended ${view.status} (${view.exception})`);
    else if (Date.now() > deadline) throw new Error(`${o.id} not completed within 30 s (still ${view.status})`);
    else await new Promise((resolve) => setTimeout(resolve, POLL_MS));
  }
  const webhookAt = await webhook;
  const detail = await expectStatus(call<ReceiptDetail>(o.keyed, 'GET', `/api/receipts/${o.id}`), 200, 'receipt detail');
  const history = detail.statusHistory;
  const completedAt = history.find((h) => h.status === 'completed')?.at;
  if (completedAt === undefined) throw new Error(`${o.id} has no completed entry in its history`);
  if (detail.exception !== null) throw new Error(`${o.id} completed with exception ${detail.exception}`);

  // The sweep is part of what was measured: the money left the payment address for the split.
  const left = await client.readContract({ address: quote.tokenAddress, abi: erc20Abi, functionName: 'balanceOf', args: [quote.payTo] });
  if (left !== 0n) throw new Error(`${o.id}: ${left} base units still at the payment address after completion`);
  const splitTxs = await expectStatus(call<SplitTransactions>(o.keyed, 'GET', '/api/split/transactions'), 200, 'split transactions');
  const sweep = splitTxs.find((t) => t.receiptId === o.id);
  if (sweep === undefined) throw new Error(`${o.id}: no split transaction attributed to the receipt (no sweep seen)`);
  if (same(sweep.transactionHash, hash)) throw new Error(`${o.id}: the split transaction is the buyer's own transfer, not a sweep`);
  const swept = await client.getTransactionReceipt({ hash: sweep.transactionHash as Hex });
  if (swept.blockNumber <= mined.blockNumber) throw new Error(`${o.id}: sweep in block ${swept.blockNumber}, not after the payment's ${mined.blockNumber}`);

  const event = o.receiver.payloads.get(o.id)!.data;
  const problems = [
    event.status !== 'completed' && `status ${event.status}`,
    event.exception !== null && `exception ${event.exception}`,
    event.amountDue !== '0' && `amountDue ${event.amountDue}`,
    event.amountPaid !== quote.due && `amountPaid ${event.amountPaid}`,
    !same(event.payTo, quote.payTo) && `payTo ${event.payTo}`,
    !same(event.transactionHash, hash) && `transactionHash ${event.transactionHash}`,
  ].filter((p): p is string => typeof p === 'string');
  if (problems.length > 0) throw new Error(`${o.id}: the receipt.completed webhook says ${problems.join(', ')}`);
  return {
    receiptId: o.id,
    payTo: quote.payTo.toLowerCase(),
    blockNumber: Number(mined.blockNumber),
    sweepBlockNumber: Number(swept.blockNumber),
    includedAt,
    transferGas: Number(mined.gasUsed),
    sweepGas: Number(swept.gasUsed),
    completedMs: completedAt - includedAt,
    visibleMs: visibleAt - includedAt,
    webhookMs: webhookAt - includedAt,
  };
}

// ---- the run ----

function markdown(r: PaymentsReport): string {
  const ms = (n: number) => `${Math.round(n)}`;
  const row = (what: string, s: Stats) => `| ${what} | ${ms(s.p50)} | ${ms(s.p95)} | ${ms(s.max)} |`;
  const lines = [
    '## Splitline bench: payment latency on the dev chain',
    '',
    `${r.generatedAt.slice(0, 16).replace('T', ' ')} UTC · ${r.database === 'postgres' ? 'PostgreSQL' : 'PGlite'} · CHAIN=dev (anvil, automine) · ` +
      `CONFIRMATIONS=1 · ${r.settings.receipts} receipts paid one after another · node ${r.machine.node} on ${r.machine.cpus} CPUs (${r.machine.cpuModel})`,
    '',
  ];
  if (r.machine.loadAverageAtStart > r.machine.cpus) {
    lines.push(`**The machine was busy with other work** (load average ${r.machine.loadAverageAtStart.toFixed(1)} on ${r.machine.cpus} CPUs at the start): figures are pessimistic.`, '');
  }
  lines.push(
    'Milliseconds from the moment the bench holds the transaction receipt (the including block exists) to:',
    '',
    '| to | p50 | p95 | max |',
    '|---|---:|---:|---:|',
    row('`completed` in the status history', r.completed),
    row(`\`completed\` seen through GET /api/pay (polled every ${r.settings.pollMs} ms)`, r.visible),
    row('`receipt.completed` webhook received', r.webhook),
    '',
    "Each buyer transfers exactly `payment.due` to the receipt's own payment address `payment.payTo`. Each figure includes the worker " +
      'finding that transfer in its block scan, sending the sweep of the payment address into the split (one transaction through the ' +
      'factory) and reading the sweep in a later block: a receipt completes only once the transfer and the sweep are both ' +
      'CONFIRMATIONS deep. The bench also posts the hash (POST /api/pay/<id>/transaction) as the payment page does; it is only a hint ' +
      'that wakes the worker sooner, and not needed for the receipt to complete.',
    '',
    ...gaslessLines(r),
    '| target (from the issue) | measured | result |',
    '|---|---:|---|',
    ...r.targets.map((t) => `| ${t.target} | ${t.measured} | ${t.result} |`),
    '',
  );
  return lines.join('\n');
}

function gaslessLines(r: PaymentsReport): string[] {
  const g = r.gasless;
  if (g === null || g.count === 0) return [];
  const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.ceil(xs.length / 2) - 1] ?? NaN;
  const transfer = median(r.samples.map((s) => s.transferGas));
  const sweep = median(r.samples.map((s) => s.sweepGas));
  const wei = g.samples.map((s) => BigInt(s.weiSpent)).sort((a, b) => (a < b ? -1 : a > b ? 1 : 0));
  const completed = median(g.samples.map((s) => s.completedMs));
  return [
    `**Gas per gasless payment** (${g.count} payments by buyers holding USDC and no ETH, POST /api/pay/<id>/authorization): ` +
      `${g.gasUsed.p50.toLocaleString('en-US')} gas p50 (min ${g.gasUsed.min.toLocaleString('en-US')}, max ${g.gasUsed.max.toLocaleString('en-US')}), ` +
      `${wei[Math.ceil(wei.length / 2) - 1]} wei p50 at the dev chain's gas price, paid by the service in one transaction (transferWithAuthorization and the sweep). ` +
      `A transfer payment above costs the buyer ${transfer.toLocaleString('en-US')} gas and the service ${sweep.toLocaleString('en-US')} for its sweep (p50). ` +
      `Posted authorization → \`completed\` seen through GET /api/pay: ${completed} ms p50. Every buyer's ETH was still 0.`,
    '',
  ];
}

/** Runs the payment bench; resolves to the exit code (non-zero when the bench itself failed). */
export async function benchPayments(env: NodeJS.ProcessEnv = process.env): Promise<number> {
  const quick = isQuick(env);
  const raw = env.BENCH_PAYMENTS?.trim();
  const count = raw === undefined || raw === '' ? (quick ? 10 : 30) : Number(raw);
  if (!Number.isInteger(count) || count < 0 || count > 1000) {
    console.error(`BENCH_PAYMENTS must be a whole number from 0 to 1000 (got "${raw}")`);
    return 1;
  }
  if (count === 0) {
    console.log('\nPayment latency: skipped (BENCH_PAYMENTS=0)');
    return 0;
  }
  return withCleanup(async (cleanup) => {
    let service: LaunchedService | undefined;
    try {
      const loadAtStart = os.loadavg()[0] ?? 0;
      const work = mkdtempSync(path.join(os.tmpdir(), 'splitline-bench-payments-'));
      cleanup.push(() => rmSync(work, { recursive: true, force: true }));
      let databaseUrl: string | undefined;
      const server = env.DATABASE_URL?.trim();
      if (server) {
        const fresh = await freshPostgresDatabase(server);
        cleanup.push(() => fresh.drop());
        databaseUrl = fresh.url;
      }
      const receiver = await startReceiver();
      cleanup.push(() => receiver.close());
      const port = await freePort();
      service = await launchService({
        name: 'Splitline on the dev chain',
        program: await compiledProgram(),
        env: {
          SITE_URL: `http://127.0.0.1:${port}`,
          DATA_DIR: work,
          LOG_LEVEL: 'warn',
          CHAIN: 'dev',
          CONFIRMATIONS: '1',
          WEBHOOK_ALLOW_PRIVATE: 'true',
          PLATFORM_RECIPIENT_ADDRESS: PLATFORM,
          // The bench polls the payment page's public API from one address, far above a buyer's pace.
          PUBLIC_RATE_LIMIT_PER_MINUTE: '1000000',
          ...(databaseUrl === undefined ? {} : { DATABASE_URL: databaseUrl }),
          ...(env.REDIS_URL ? { REDIS_URL: env.REDIS_URL } : {}),
        },
        port,
        logFile: path.join(work, 'service.log'),
        ready: { healthPath: '/healthz' },
        timeoutMs: 120_000,
      });
      cleanup.push(() => service?.stop());

      console.log(`\nPayment latency: ${count} receipts paid on the dev chain, CONFIRMATIONS=1`);
      const { split, keyed } = await setUpMerchant(service.base, receiver.url);
      const dev = await expectStatus(call<DevChain>({ base: service.base }, 'GET', '/dev/chain'), 200, 'dev chain');
      const chain = { rpcUrl: `${service.base}/dev/rpc`, token: dev.usdcAddress as Hex, split };
      const samples: PaymentSample[] = [];
      for (let i = 0; i < count; i++) {
        const s = await payOne({ keyed, chain, buyer: i % BUYERS, id: `bench-pay-${i + 1}`, receiver });
        samples.push(s);
        if ((i + 1) % 10 === 0 || i + 1 === count) console.log(`  ${i + 1}/${count} paid (last: completed ${s.completedMs} ms, webhook ${s.webhookMs} ms)`);
      }
      const gaslessN = gaslessCount(env, quick);
      let gasless: GaslessReport | null = null;
      if (gaslessN > 0) {
        console.log(`  ${gaslessN} payments without gas (buyers with USDC and no ETH)…`);
        gasless = await benchGasless({ base: service.base, key: keyed.key, rpcUrl: chain.rpcUrl, count: gaslessN, funder: 0, call });
        console.log(`  gas per gasless payment: p50 ${gasless.gasUsed.p50}, max ${gasless.gasUsed.max}`);
      }
      const completed = stats(samples.map((s) => s.completedMs));
      const visible = stats(samples.map((s) => s.visibleMs));
      const webhook = stats(samples.map((s) => s.webhookMs));
      const judge = (target: string, value: number) => ({
        target,
        measured: `${Math.round(value)} ms`,
        result: value <= TARGET_MS ? ('PASS' as const) : ('MISS' as const),
      });
      const report: PaymentsReport = {
        generatedAt: new Date().toISOString(),
        database: databaseUrl === undefined ? 'pglite' : 'postgres',
        machine: machine(loadAtStart),
        settings: { receipts: count, confirmations: 1, pollMs: POLL_MS, quick },
        completed,
        visible,
        webhook,
        // The stricter of the two completion figures (seen through the API) is the one judged.
        targets: [judge('block → receipt completed, p50 ≤ 1 s', visible.p50), judge('block → webhook delivered, p50 ≤ 1 s', webhook.p50)],
        samples,
        gasless,
      };
      console.log('\n' + markdown(report));
      const written = writeBenchResults(`payments-${quick ? 'quick' : 'latest'}`, report, markdown(report));
      console.log(`Written: ${path.relative(process.cwd(), written.json)}, ${path.relative(process.cwd(), written.md)}`);
      return 0;
    } catch (err) {
      console.error(`\nPayment bench failed: ${err instanceof Error ? err.message : String(err)}`);
      if (service !== undefined) console.error(`The service's last log lines:\n${service.tail()}`);
      return 1;
    }
  });
}

if (process.argv[1] !== undefined && import.meta.url === pathToFileURL(process.argv[1]).href) {
  void benchPayments().then((code) => process.exit(code));
}
