/**
 * npm run soak: a long mixed load against a real server process, to show that nothing grows
 * without bound and nothing fails over time.
 *
 * It starts the service (src/main.ts through tsx, by scripts/service-launcher.ts) on a free
 * loopback port with a fresh DATA_DIR: PGlite and the dev chain by default; with DATABASE_URL set,
 * a fresh database created on that server (dropped afterwards); with REDIS_URL set, Redis rate
 * limits. Then, for SOAK_SECONDS, it runs at once:
 *   - API workers: receipt lists and reads, receipt writes, orders, users search, tracking statuses;
 *   - buyers: the nine free test-mnemonic accounts pay receipts in test USDC through the service's
 *     /dev/rpc to each receipt's own payment address, and send the hashes as hints; a checker follows each payment to `completed`.
 * Every SOAK_REPORT_SECONDS it prints throughput, p99 latency per kind, and the server's RSS and heap
 * (reported by scripts/soak-memory-probe.ts, preloaded into the server process). At the end it
 * prints a summary with the linear-regression slope of RSS and heap over time after the warm-up,
 * and a verdict. It exits 1 on any failed request, any payment not completed, a server that does not
 * shut down cleanly, or a slope above its threshold.
 *
 * Environment (all optional):
 *   SOAK_SECONDS          duration of the load                          (600)
 *   SOAK_WORKERS          concurrent API workers                         (6)
 *   SOAK_RATE             API requests per second, all workers together;
 *                         0 runs them flat out (a saturation test, not a soak)  (50)
 *   SOAK_BUYERS           paying accounts, 0 to 9                        (9)
 *   SOAK_PAY_INTERVAL_MS  pause between one buyer's payments             (3000)
 *   SOAK_REPORT_SECONDS   seconds between progress lines                 (10)
 *   SOAK_WARMUP_SECONDS   excluded from the slopes    (25% of the run, at most 120)
 *   SOAK_MAX_RSS_SLOPE    MB per minute allowed for RSS after warm-up    (2)
 *   SOAK_MAX_HEAP_SLOPE   MB per minute allowed for the live heap (after a full GC)  (1)
 *   SOAK_KEEP=1           keep the DATA_DIR and server log afterwards
 * The last line is `SOAK_RESULT <json>` for scripts (test/soak.test.ts reads it).
 *
 * The load is paced below saturation on purpose: a soak looks for what accumulates at a steady
 * rate. Flat out (SOAK_RATE=0) on the embedded PGlite, the API traffic takes the single database
 * connection from the chain worker, whose verification then falls behind the buyers.
 */
import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { createPublicClient, createWalletClient, defineChain, erc20Abi, http, type Address, type Hex } from 'viem';
import { generatePrivateKey, privateKeyToAccount, type PrivateKeyAccount } from 'viem/accounts';
import { createRng } from '../bench/rng.ts';
import { userRecord } from '../bench/seed-users.ts';
import { devAccount } from '../src/chain/dev-accounts.ts';
import type { Challenge, SignedIn } from '../src/contract/auth.ts';
import type { DevChain } from '../src/contract/dev-chain.ts';
import type { PaymentView } from '../src/contract/pay.ts';
import type { CreatedReceipt, ReceiptDetail } from '../src/contract/receipts.ts';
import type { SubscriptionCreated } from '../src/contract/subscriptions.ts';
import { freshPostgresDatabase } from '../test/helpers/app.ts';
import { freePort, launchService, sourceProgram, type LaunchedService } from './service-launcher.ts';

// ── settings ─────────────────────────────────────────────────────────────────────────────────────

function num(name: string, fallback: number, min: number, max: number): number {
  const raw = process.env[name];
  if (raw === undefined || raw === '') return fallback;
  const n = Number(raw);
  if (!Number.isFinite(n) || n < min || n > max) {
    console.error(`${name} must be a number from ${min} to ${max} (got "${raw}")`);
    process.exit(2);
  }
  return n;
}

const SECONDS = num('SOAK_SECONDS', 600, 5, 24 * 3600);
const WORKERS = num('SOAK_WORKERS', 6, 1, 256);
const RATE = num('SOAK_RATE', 50, 0, 100_000);
const BUYERS = num('SOAK_BUYERS', 9, 0, 9);
const PAY_INTERVAL_MS = num('SOAK_PAY_INTERVAL_MS', 3000, 0, 60_000);
const REPORT_SECONDS = num('SOAK_REPORT_SECONDS', 10, 1, 3600);
const WARMUP_SECONDS = num('SOAK_WARMUP_SECONDS', Math.min(120, Math.round(SECONDS * 0.25)), 0, SECONDS - 2);
const MAX_RSS_SLOPE = num('SOAK_MAX_RSS_SLOPE', 2, 0, 1e6);
const MAX_HEAP_SLOPE = num('SOAK_MAX_HEAP_SLOPE', 1, 0, 1e6);
const KEEP = process.env.SOAK_KEEP === '1';
const PLATFORM = '0x000000000000000000000000000000000000beef';

// ── measurements ─────────────────────────────────────────────────────────────────────────────────

const KINDS = ['list', 'read', 'write', 'order', 'search', 'status', 'quote', 'submit', 'transfer', 'complete'] as const;
type Kind = (typeof KINDS)[number];

class Stats {
  private interval = new Map<Kind, number[]>();
  readonly all = new Map<Kind, number[]>();
  requests = 0;
  intervalRequests = 0;
  errors = 0;
  readonly errorSamples = new Map<string, number>();

  record(kind: Kind, ms: number): void {
    for (const m of [this.interval, this.all]) {
      let list = m.get(kind);
      if (list === undefined) m.set(kind, (list = []));
      list.push(ms);
    }
    if (kind !== 'transfer' && kind !== 'complete') {
      this.requests++;
      this.intervalRequests++;
    }
  }

  fail(what: string): void {
    this.errors++;
    const key = what.slice(0, 300);
    this.errorSamples.set(key, (this.errorSamples.get(key) ?? 0) + 1);
  }

  /** p99 per kind since the last call, and the requests counted since then. */
  takeInterval(): { p99: Map<Kind, number>; requests: number } {
    const p99 = new Map<Kind, number>();
    for (const [k, v] of this.interval) p99.set(k, percentile(v, 0.99));
    const requests = this.intervalRequests;
    this.interval = new Map();
    this.intervalRequests = 0;
    return { p99, requests };
  }
}

function percentile(values: number[], p: number): number {
  if (values.length === 0) return 0;
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.ceil(p * sorted.length) - 1)]!;
}

/** Least-squares slope of y over x. */
function slope(points: { x: number; y: number }[]): number {
  if (points.length < 2) return 0;
  const mx = points.reduce((s, p) => s + p.x, 0) / points.length;
  const my = points.reduce((s, p) => s + p.y, 0) / points.length;
  const num = points.reduce((s, p) => s + (p.x - mx) * (p.y - my), 0);
  const den = points.reduce((s, p) => s + (p.x - mx) ** 2, 0);
  return den === 0 ? 0 : num / den;
}

interface MemorySample {
  at: number;
  rss: number;
  heapUsed: number;
  external: number;
  /** Taken right after a full garbage collection: heapUsed is the live heap. */
  afterGc: boolean;
}

const MB = 1024 * 1024;

// ── the server ───────────────────────────────────────────────────────────────────────────────────

/** The server's memory as scripts/soak-memory-probe.ts reports it, in order. */
const memory: MemorySample[] = [];
let server: LaunchedService | undefined;

function isMemorySample(m: unknown): m is MemorySample & { type: 'soak:memory' } {
  return typeof m === 'object' && m !== null && (m as { type?: unknown }).type === 'soak:memory';
}

async function startServer(dataDir: string, env: Record<string, string>): Promise<LaunchedService> {
  const port = await freePort();
  return launchService({
    name: 'the server',
    program: sourceProgram(['./scripts/soak-memory-probe.ts']),
    nodeArgs: ['--expose-gc'],
    port,
    env: {
      SITE_URL: `http://127.0.0.1:${port}`,
      DATA_DIR: dataDir,
      LOG_LEVEL: 'warn',
      PLATFORM_RECIPIENT_ADDRESS: PLATFORM,
      PUBLIC_RATE_LIMIT_PER_MINUTE: '1000000',
      ...env,
    },
    logFile: path.join(dataDir, 'server.log'),
    ready: { healthPath: '/healthz' },
    onMessage: (m) => {
      if (isMemorySample(m)) memory.push({ at: m.at, rss: m.rss, heapUsed: m.heapUsed, external: m.external, afterGc: m.afterGc });
    },
    timeoutMs: 90_000,
  });
}

// ── HTTP ─────────────────────────────────────────────────────────────────────────────────────────

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** An answer; `T` is what the route's contract promises for the status the caller expects (and checks first). */
interface Answer<T = unknown> {
  status: number;
  body: T;
  ms: number;
  headers: Headers;
}

async function call<T = unknown>(method: string, url: string, opts: { key?: string; body?: unknown; headers?: Record<string, string> } = {}): Promise<Answer<T>> {
  const started = performance.now();
  const res = await fetch(server!.base + url, {
    method,
    headers: {
      ...(opts.body === undefined ? {} : { 'content-type': 'application/json' }),
      ...(opts.key === undefined ? {} : { 'ocp-apim-subscription-key': opts.key }),
      ...opts.headers,
    },
    ...(opts.body === undefined ? {} : { body: JSON.stringify(opts.body) }),
    signal: AbortSignal.timeout(30_000),
  });
  const text = await res.text();
  const ms = performance.now() - started;
  let body: unknown = text;
  if ((res.headers.get('content-type') ?? '').includes('json') && text !== '') body = JSON.parse(text);
  return { status: res.status, body: body as T, ms, headers: res.headers };
}

async function must<T>(what: string, p: Promise<Answer<T>>, status: number): Promise<Answer<T>> {
  const res = await p;
  if (res.status !== status) throw new Error(`${what}: ${res.status} ${JSON.stringify(res.body).slice(0, 500)}`);
  return res;
}

// ── set-up: a merchant with a split, a key, inventory, and users to search ──────────────────────────

interface Setup {
  key: string;
  skus: string[];
  usdc: Address;
  chainId: number;
}

async function signIn(account: PrivateKeyAccount, origin: string): Promise<Record<string, string>> {
  const ch = await must('challenge', call<Challenge>('POST', '/api/auth/challenge', { body: { wallet: account.address } }), 200);
  const { EIP712Domain: _domain, ...types } = ch.body.typedData.types;
  const signature = await account.signTypedData({ ...ch.body.typedData, types });
  const login = await must('login', call<SignedIn>('POST', '/api/auth/login', { body: { wallet: account.address, nonce: ch.body.nonce, signature } }), 200);
  const cookie = login.headers.getSetCookie().find((c) => c.startsWith('cb_auth_token='))!.split(';')[0]!;
  return { cookie, 'x-csrf-token': login.body.csrfToken, origin };
}

async function setUp(merchant: PrivateKeyAccount): Promise<Setup> {
  const session = await signIn(merchant, server!.base);
  const sub = await must('subscription', call<SubscriptionCreated>('POST', '/api/admin/subscriptions', { headers: session, body: { name: 'soak', rateLimitPerMinute: 1_000_000 } }), 201);
  const key = sub.body.primaryKey;
  const recipients = [
    { address: merchant.address.toLowerCase(), sharesBps: 9950 },
    { address: PLATFORM, sharesBps: 50 },
  ];
  await must('split deploy', call('POST', '/api/split/deploy', { headers: session, body: { recipients } }), 200);
  await must('shop config', call('POST', '/api/shop/config', { headers: session, body: { processingFeePct: 2.5, name: 'Soak shop' } }), 200);
  const skus = ['espresso', 'latte', 'bagel', 'mug', 'beans'];
  for (const [i, sku] of skus.entries()) {
    await must(`inventory ${sku}`, call('POST', '/api/inventory', { key, body: { sku, name: sku, priceUsd: 2 + i, stockQty: -1 } }), 201);
  }
  const rng = createRng(42);
  const users = Array.from({ length: 2000 }, (_, i) => userRecord(rng, i, Date.now()));
  await must('users import', call('POST', '/api/admin/users', { headers: session, body: users }), 200);
  const chain = await must('dev chain', call<DevChain>('GET', '/dev/chain'), 200);
  return { key, skus, usdc: chain.body.usdcAddress as Address, chainId: chain.body.chainId };
}

// ── the load ─────────────────────────────────────────────────────────────────────────────────────

const TRACKING = ['link_opened', 'buyer_logged_in', 'checkout_initialized'];
const NAMES = ['ana', 'ben', 'chloe', 'ivan', 'julia', 'kofi', 'priya', 'zz-nobody'];
const WEIGHTS: [Kind, number][] = [
  ['list', 3],
  ['read', 3],
  ['write', 2],
  ['order', 2],
  ['search', 2],
  ['status', 1],
];

interface Load {
  stats: Stats;
  known: string[];
  outstanding: Map<string, number>;
  payments: { submitted: number; completed: number };
  stopAt: number;
}

function pickKind(n: number): Kind {
  const total = WEIGHTS.reduce((s, [, w]) => s + w, 0);
  let r = n % total;
  for (const [k, w] of WEIGHTS) {
    if (r < w) return k;
    r -= w;
  }
  return 'list';
}

async function apiWorker(w: number, s: Setup, load: Load, wallet: string): Promise<void> {
  const { stats, known } = load;
  // Each worker keeps its share of SOAK_RATE on a fixed schedule; late requests do not bunch up.
  const intervalMs = RATE === 0 ? 0 : (WORKERS * 1000) / RATE;
  let next = Date.now() + (intervalMs * w) / WORKERS;
  for (let i = 0; Date.now() < load.stopAt; i++) {
    if (intervalMs > 0) {
      const wait = next - Date.now();
      if (wait > 0) await sleep(wait);
      next = Math.max(next + intervalMs, Date.now() - intervalMs);
    }
    const kind = pickKind(i * 7 + w);
    const some = known.length > 0 ? known[(i * 7919 + w) % known.length]! : undefined;
    let res: Answer;
    let expect = 200;
    try {
      if (kind === 'list') res = await call('GET', '/api/receipts?limit=50', { key: s.key });
      else if (kind === 'read' && some !== undefined) res = await call('GET', `/api/receipts/${some}`, { key: s.key });
      else if (kind === 'search') res = await call('GET', `/api/users/search?q=${NAMES[i % NAMES.length]}&limit=20`, { key: s.key });
      else if (kind === 'order') {
        const items = [{ sku: s.skus[i % s.skus.length]!, qty: 1 + (i % 3) }, { sku: s.skus[(i + 2) % s.skus.length]!, qty: 1 }];
        res = await call('POST', '/api/orders', { key: s.key, body: { items, taxRate: 0.0825 } });
      } else if (kind === 'status' && some !== undefined) {
        res = await call('POST', '/api/receipts/status', { body: { receiptId: some, wallet, status: TRACKING[i % TRACKING.length] } });
      } else {
        const id = `soak-${w}-${i}-${randomBytes(3).toString('hex')}`;
        res = await call('POST', '/api/receipts', { key: s.key, body: { id, lineItems: [{ label: 'Soak item', priceUsd: 1.5, qty: 1 + (i % 4) }], totalUsd: 1.5 * (1 + (i % 4)) } });
        expect = 201;
        if (res.status === 201 && known.length < 5000) known.push(id);
      }
    } catch (err) {
      stats.fail(`${kind}: ${(err as Error).message}`);
      continue;
    }
    const actual = kind === 'read' && some === undefined ? 'write' : kind === 'status' && some === undefined ? 'write' : kind;
    if (res.status !== expect) stats.fail(`${actual}: ${res.status} ${JSON.stringify(res.body).slice(0, 200)}`);
    else stats.record(actual, res.ms);
  }
}

async function buyer(index: number, s: Setup, load: Load): Promise<void> {
  const { stats } = load;
  const chain = defineChain({ id: s.chainId, name: 'dev', nativeCurrency: { name: 'Ether', symbol: 'ETH', decimals: 18 }, rpcUrls: { default: { http: [`${server!.base}/dev/rpc`] } } });
  const transport = http(`${server!.base}/dev/rpc`, { timeout: 30_000 });
  const wallet = createWalletClient({ chain, transport, account: devAccount(index) });
  const reader = createPublicClient({ chain, transport, pollingInterval: 100 });
  for (let n = 0; Date.now() < load.stopAt; n++) {
    const id = `pay-${index}-${n}`;
    const cents = 100 + ((n * 37 + index) % 900);
    try {
      const created = await call<CreatedReceipt>('POST', '/api/receipts', { key: s.key, body: { id, lineItems: [{ label: 'Coffee', priceUsd: cents / 100 }], totalUsd: cents / 100 } });
      if (created.status !== 201) throw new Error(`create ${created.status} ${JSON.stringify(created.body)}`);
      stats.record('write', created.ms);
      const search = new URL(created.body.paymentUrl).search;
      const quote = await call<PaymentView>('GET', `/api/pay/${id}${search}`);
      if (quote.status !== 200 || quote.body.payment === null) throw new Error(`quote ${quote.status} ${JSON.stringify(quote.body)}`);
      stats.record('quote', quote.ms);
      const { payTo, due } = quote.body.payment as { payTo: Hex; due: string };
      const t0 = performance.now();
      const hash = await wallet.writeContract({ address: s.usdc, abi: erc20Abi, functionName: 'transfer', args: [payTo, BigInt(due)] });
      const mined = await reader.waitForTransactionReceipt({ hash, timeout: 60_000 });
      if (mined.status !== 'success') throw new Error(`transfer ${hash} ${mined.status}`);
      stats.record('transfer', performance.now() - t0);
      const sub = await call('POST', `/api/pay/${id}/transaction${search}`, { body: { transactionHash: hash } });
      if (sub.status !== 202) throw new Error(`submit ${sub.status} ${JSON.stringify(sub.body)}`);
      stats.record('submit', sub.ms);
      load.outstanding.set(id, Date.now());
      load.payments.submitted++;
    } catch (err) {
      stats.fail(`payment ${id}: ${(err as Error).message}`);
    }
    await sleep(PAY_INTERVAL_MS);
  }
}

/** Follows submitted payments until they complete; a payment that fails or mismatches is an error. */
async function checker(s: Setup, load: Load, until: () => boolean): Promise<void> {
  while (!until()) {
    // Oldest first, a few at a time, so a long queue does not delay the newest by much.
    const batch = [...load.outstanding].slice(0, 8);
    await Promise.all(
      batch.map(async ([id, since]) => {
        const res = await call<ReceiptDetail>('GET', `/api/receipts/${id}`, { key: s.key }).catch((err: unknown) => {
          load.stats.fail(`payment check ${id}: ${(err as Error).message}`);
          return undefined;
        });
        const status: string | undefined = res?.body?.status;
        if (status === 'completed') {
          load.outstanding.delete(id);
          load.payments.completed++;
          load.stats.record('complete', Date.now() - since);
        } else if (status === 'failed' || status === 'tx_mismatch') {
          load.outstanding.delete(id);
          load.stats.fail(`payment ${id} ended ${status}`);
        }
      }),
    );
    await sleep(200);
  }
}

// ── reporting ────────────────────────────────────────────────────────────────────────────────────

function fmtMs(ms: number | undefined): string {
  return ms === undefined ? '-' : ms >= 100 ? String(Math.round(ms)) : ms.toFixed(1);
}

function lastMemory(): MemorySample | undefined {
  return memory[memory.length - 1];
}

/** The live heap: the last sample taken after a full collection. */
function lastLiveHeap(): MemorySample | undefined {
  return [...memory].reverse().find((m) => m.afterGc);
}

function progressLine(startedAt: number, load: Load, lastAt: number): string {
  const { p99, requests } = load.stats.takeInterval();
  const secs = (Date.now() - lastAt) / 1000;
  const mem = lastMemory();
  const live = lastLiveHeap();
  const kinds = KINDS.filter((k) => p99.has(k)).map((k) => `${k} ${fmtMs(p99.get(k))}`).join(', ');
  return (
    `[${String(Math.round((Date.now() - startedAt) / 1000)).padStart(5)} s] ${(requests / secs).toFixed(0).padStart(5)} req/s` +
    `  errors ${load.stats.errors}  rss ${mem ? (mem.rss / MB).toFixed(0) : '?'} MB  live heap ${live ? (live.heapUsed / MB).toFixed(0) : '?'} MB` +
    `  payments ${load.payments.completed}/${load.payments.submitted}  p99 ms: ${kinds}`
  );
}

// ── main ─────────────────────────────────────────────────────────────────────────────────────────

async function main(): Promise<number> {
  const dataDir = mkdtempSync(path.join(tmpdir(), 'splitline-soak-'));
  const fresh = process.env.DATABASE_URL ? await freshPostgresDatabase(process.env.DATABASE_URL, 'splitline_soak') : undefined;
  const merchant = privateKeyToAccount(generatePrivateKey());
  let code: number;
  try {
    console.log(
      `soak: ${SECONDS} s, ${WORKERS} API workers at ${RATE === 0 ? 'full speed' : `${RATE} req/s`}, ${BUYERS} buyers every ${PAY_INTERVAL_MS} ms; ` +
        `database ${fresh ? 'PostgreSQL (fresh database)' : 'PGlite'}, rate limits ${process.env.REDIS_URL ? 'Redis' : 'in memory'}; ` +
        `warm-up ${WARMUP_SECONDS} s; limits RSS ${MAX_RSS_SLOPE} MB/min, heap ${MAX_HEAP_SLOPE} MB/min`,
    );
    server = await startServer(dataDir, {
      SUPERADMIN_WALLETS: merchant.address,
      ...(fresh ? { DATABASE_URL: fresh.url } : {}),
      ...(process.env.REDIS_URL ? { REDIS_URL: process.env.REDIS_URL } : {}),
    });
    const setup = await setUp(merchant);
    console.log(`server ${server.base} (pid ${server.pid}), log ${server.logFile}`);

    const startedAt = Date.now();
    const load: Load = { stats: new Stats(), known: [], outstanding: new Map(), payments: { submitted: 0, completed: 0 }, stopAt: startedAt + SECONDS * 1000 };
    const stopSoon = () => {
      console.log('interrupted: stopping the load');
      load.stopAt = Math.min(load.stopAt, Date.now());
    };
    process.once('SIGINT', stopSoon);
    process.once('SIGTERM', stopSoon);

    let lastAt = startedAt;
    const reporter = setInterval(() => {
      console.log(progressLine(startedAt, load, lastAt));
      lastAt = Date.now();
    }, REPORT_SECONDS * 1000);
    let checking = true;
    const check = checker(setup, load, () => !checking);
    await Promise.all([
      ...Array.from({ length: WORKERS }, (_, w) => apiWorker(w, setup, load, merchant.address.toLowerCase())),
      ...Array.from({ length: BUYERS }, (_, b) => buyer(b, setup, load)),
    ]);
    clearInterval(reporter);
    const loadEndedAt = Date.now();
    console.log(progressLine(startedAt, load, lastAt));

    // Payments still on their way get a minute to complete.
    const settleBy = Date.now() + 60_000;
    while (load.outstanding.size > 0 && Date.now() < settleBy) await sleep(250);
    checking = false;
    await check;
    for (const id of load.outstanding.keys()) load.stats.fail(`payment ${id} did not complete within 60 s of the end`);

    // Memory after warm-up, in MB against minutes.
    const window = memory.filter((m) => m.at >= startedAt + WARMUP_SECONDS * 1000 && m.at <= loadEndedAt);
    const liveWindow = window.filter((m) => m.afterGc);
    const minutes = (m: MemorySample) => (m.at - startedAt) / 60_000;
    const rssSlope = slope(window.map((m) => ({ x: minutes(m), y: m.rss / MB })));
    const heapSlope = slope(liveWindow.map((m) => ({ x: minutes(m), y: m.heapUsed / MB })));
    const first = window[0];
    const last = window[window.length - 1];
    const firstLive = liveWindow[0];
    const lastLive = liveWindow[liveWindow.length - 1];

    const exitStarted = Date.now();
    const exit = await server.stop(20_000);
    const shutdownMs = Date.now() - exitStarted;
    // A signal here is SIGKILL: the server had not stopped within 20 s of SIGTERM.
    const exitCode = exit.code ?? exit.signal;

    const all = load.stats.all;
    const totalSecs = (loadEndedAt - startedAt) / 1000;
    console.log('\nsummary');
    console.log(`  duration        ${totalSecs.toFixed(0)} s of load, ${load.stats.requests} requests (${(load.stats.requests / totalSecs).toFixed(0)} req/s)`);
    console.log(`  errors          ${load.stats.errors}`);
    for (const [what, n] of load.stats.errorSamples) console.log(`    ${n} × ${what}`);
    console.log(`  payments        ${load.payments.completed} completed of ${load.payments.submitted} submitted`);
    console.log('  latency (ms)    kind        count     p50     p99     max');
    for (const k of KINDS) {
      const v = all.get(k);
      if (v === undefined) continue;
      console.log(
        `                  ${k.padEnd(10)}${String(v.length).padStart(7)} ${fmtMs(percentile(v, 0.5)).padStart(7)} ${fmtMs(percentile(v, 0.99)).padStart(7)} ${fmtMs(Math.max(...v)).padStart(7)}`,
      );
    }
    console.log(
      `  memory          after ${WARMUP_SECONDS} s warm-up, ${window.length} samples: RSS ${first ? (first.rss / MB).toFixed(0) : '?'} → ` +
        `${last ? (last.rss / MB).toFixed(0) : '?'} MB, slope ${rssSlope.toFixed(2)} MB/min (limit ${MAX_RSS_SLOPE}); live heap (${liveWindow.length} ` +
        `samples after a full GC) ${firstLive ? (firstLive.heapUsed / MB).toFixed(0) : '?'} → ${lastLive ? (lastLive.heapUsed / MB).toFixed(0) : '?'} MB, ` +
        `slope ${heapSlope.toFixed(2)} MB/min (limit ${MAX_HEAP_SLOPE}); external ${last ? (last.external / MB).toFixed(0) : '?'} MB`,
    );
    console.log(`  shutdown        exit ${exitCode} after ${shutdownMs} ms`);

    const problems: string[] = [];
    if (load.stats.errors > 0) problems.push(`${load.stats.errors} errors`);
    if (load.payments.completed === 0 && BUYERS > 0) problems.push('no payment completed');
    if (window.length < 5 || liveWindow.length < 2) problems.push('too few memory samples after warm-up');
    if (rssSlope > MAX_RSS_SLOPE) problems.push(`RSS grows ${rssSlope.toFixed(2)} MB/min`);
    if (heapSlope > MAX_HEAP_SLOPE) problems.push(`heap grows ${heapSlope.toFixed(2)} MB/min`);
    if (exitCode !== 0) problems.push(`the server exited ${exitCode} on SIGTERM`);
    console.log(`  verdict         ${problems.length === 0 ? 'PASS: no errors, no growth trend' : `FAIL: ${problems.join('; ')}`}`);
    const result = {
      seconds: Math.round(totalSecs),
      requests: load.stats.requests,
      requestsPerSecond: Math.round(load.stats.requests / totalSecs),
      errors: load.stats.errors,
      payments: load.payments,
      p99Ms: Object.fromEntries(KINDS.filter((k) => all.has(k)).map((k) => [k, Math.round(percentile(all.get(k)!, 0.99))])),
      rss: { firstMb: first ? Math.round(first.rss / MB) : null, lastMb: last ? Math.round(last.rss / MB) : null, slopeMbPerMin: Number(rssSlope.toFixed(3)) },
      liveHeap: { firstMb: firstLive ? Math.round(firstLive.heapUsed / MB) : null, lastMb: lastLive ? Math.round(lastLive.heapUsed / MB) : null, slopeMbPerMin: Number(heapSlope.toFixed(3)) },
      shutdown: { exitCode, ms: shutdownMs },
      database: fresh ? 'postgres' : 'pglite',
      pass: problems.length === 0,
      problems,
    };
    console.log(`SOAK_RESULT ${JSON.stringify(result)}`);
    code = problems.length === 0 ? 0 : 1;
  } catch (err) {
    console.error('soak failed:', err);
    if (server !== undefined) console.error(server.tail(40));
    code = 1;
  } finally {
    await server?.kill();
    await fresh?.drop().catch((err: unknown) => console.error('could not drop the soak database:', err));
    if (KEEP) console.log(`kept ${dataDir}`);
    else rmSync(dataDir, { recursive: true, force: true });
  }
  return code;
}

main().then(
  (code) => process.exit(code),
  (err: unknown) => {
    console.error(err);
    process.exit(1);
  },
);
