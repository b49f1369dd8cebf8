/**
 * The chain worker's cost per block (issue 4): what one pass of src/payments/worker.ts costs when
 * a block arrives, with 1,000 and with 100,000 open receipts, to show that the cost follows the
 * block's traffic and not the number of receipts waiting for money.
 *
 * In-process, as test/chain/helpers.ts startTestChain does: an anvil dev chain (its test USDC and
 * payment-forwarder factory deployed at start), the real database (PGlite in a temporary
 * directory, or a fresh database on the PostgreSQL server in DATABASE_URL), and a real
 * ChainWorker whose viem clients count every JSON-RPC request they send. Per size, in a database
 * of its own:
 *
 *   1. a merchant whose split is deployed on the chain (src/domain/split-setup.ts, as
 *      POST /api/split/deploy does), and N open receipts for it inserted in bulk (pending, expiring
 *      in 30 days, no payment address yet);
 *   2. a first worker pass, which stores the N payment addresses (src/payments/pay-address.ts):
 *      its time is reported; then VACUUM (ANALYZE), as a database that has been running has;
 *   3. anvil's automine off, then per block: a few buyers each transfer exactly a receipt's amount
 *      to a random open receipt's payment address, a few unrelated USDC transfers between dev
 *      accounts, the sweeps the previous pass sent; the block is mined, the payment page's hints
 *      are recorded, and one `worker.pass()` runs. Measured per pass: lastPass.rpcCalls, the JSON-RPC
 *      requests actually sent, lastPass.cpuMicros (this process: the worker, and PGlite when it
 *      is the database), wall time; per block on average, anvil's CPU and (PostgreSQL) the
 *      server's CPU for this database;
 *   4. two more blocks to mine the last sweeps, then every paid receipt must be completed.
 *
 * Writes bench/results/chain-worker-latest.{json,md} (chain-worker-quick.* with BENCH_QUICK=1).
 *   BENCH_WORKER=0          skips this part
 *   BENCH_WORKER_BLOCKS=n   measured blocks per size (default 50; 15 with BENCH_QUICK=1)
 *   BENCH_WORKER_SIZES=a,b  open receipts per run (default 1000,100000; 1000,20000 with BENCH_QUICK=1)
 *   BENCH_WORKER_SPLITLESS=n  one more run: the smallest size, 20 more merchants with a split and 500
 *                           open receipts each, and n open receipts of 50 merchants without a deployed
 *                           split (their payment addresses cannot be stored); default 0, no such run
 *   DATABASE_URL            run on that PostgreSQL server (in a fresh database per size)
 * Run alone with `tsx bench/chain-worker.ts`; `npm run bench` runs it after the payment bench.
 */
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { performance } from 'node:perf_hooks';
import { pathToFileURL } from 'node:url';
import { and, eq, inArray, isNotNull, sql } from 'drizzle-orm';
import pg from 'pg';
import { pino } from 'pino';
import { createPublicClient, createTestClient, createWalletClient, erc20Abi, http, type Address, type Hex } from 'viem';
import type { ChainDeps, ChainPublicClient, ChainWalletClient } from '../src/chain/client.ts';
import { DEV_DEPLOYER_INDEX, devAccount } from '../src/chain/dev-accounts.ts';
import { splitChainOf } from '../src/chain/split-setup-chain.ts';
import { openDatabase, type Database } from '../src/db/client.ts';
import { receipts, receiptStatusHistory, splitConfigs } from '../src/db/schema.ts';
import { setUpSplit } from '../src/domain/split-setup.ts';
import { newPayToken, prepareReceipt } from '../src/domain/receipts.ts';
import { recordHint } from '../src/payments/hints.ts';
import { ChainWorker, type PassStats } from '../src/payments/worker.ts';
import { freshPostgresDatabase, randomWallet } from '../test/helpers/app.ts';
import { startTestChain, type TestChain } from '../test/chain/helpers.ts';
import { isQuick, machine, withCleanup, writeBenchResults, type Machine } from './bench-run.ts';
import { bulkInsert } from './bulk-insert.ts';
import { percentile, type Stats } from './payments.ts';
import { createRng, type Rng } from './rng.ts';
import { receiptId } from './seed-receipts.ts';

const PLATFORM = '0x000000000000000000000000000000000000beef';
const PLATFORM_FEE_BPS = 50;
const SEED_BATCH = 5000;
/**
 * Unmeasured blocks before each size. With 10, whichever size ran first measured 15-30% slower
 * (the JIT still warming up in this process), so 1,000 receipts looked dearer than 100,000.
 */
const WARMUP_BLOCKS = 30;
const DRAIN_BLOCKS = 2;
/** Buyers (dev accounts 0..2) paying receipts, and unrelated transfers (accounts 3, 4 → 5..8) per block. */
const PAYMENTS_PER_BLOCK = 3;
const OTHER_TRANSFERS_PER_BLOCK = 2;
const CLOCK_TICK_MS = 1000 / 100;
/** The BENCH_WORKER_SPLITLESS run: other merchants with a split, and the merchants without one. */
const SPLITLESS_RUN_OTHER_SPLITS = 20;
const SPLITLESS_RUN_RECEIPTS_PER_SPLIT = 500;
const SPLITLESS_MERCHANTS = 50;

export interface BlockSample {
  block: number;
  /** Transactions in the block: payments into receipts, unrelated transfers, sweeps sent by the previous pass. */
  payments: number;
  otherTransfers: number;
  sweepsMined: number;
  settled: number;
  sweepsSent: number;
  hints: number;
  /** lastPass.rpcCalls, as the worker counts them. */
  rpcCalls: number;
  /** JSON-RPC requests the worker's clients actually sent during the pass. */
  rpcRequests: number;
  /** lastPass.cpuMicros, in ms. */
  cpuMs: number;
  wallMs: number;
}

export interface WorkerRun {
  openReceipts: number;
  /** Open receipts of another merchant whose split is not deployed (no payment address). */
  splitlessReceipts: number;
  seedMs: number;
  fill: { addresses: number; wallMs: number; cpuMs: number; rpcRequests: number };
  vacuumMs: number;
  perBlock: { rpcCalls: Stats; rpcRequests: Stats; cpuMs: Stats; wallMs: Stats; settled: Stats; sweepsSent: Stats };
  /** Mean per measured block, from /proc in 10 ms ticks. */
  anvilCpuMsPerBlock: number;
  /** PostgreSQL only: CPU of this database's server backends per measured block; null on PGlite (inside cpuMs). */
  dbServerCpuMsPerBlock: number | null;
  /** JSON-RPC methods the worker sent over the measured blocks, with counts. */
  rpcMethods: Record<string, number>;
  paid: number;
  paidCompleted: number;
  openAtEnd: number;
  samples: BlockSample[];
}

export interface WorkerReport {
  generatedAt: string;
  database: 'pglite' | 'postgres';
  machine: Machine;
  settings: {
    blocks: number;
    warmupBlocks: number;
    paymentsPerBlock: number;
    otherTransfersPerBlock: number;
    confirmations: 1;
    quick: boolean;
  };
  runs: WorkerRun[];
  /** Largest run's p50 over the smallest run's p50. */
  growth: { openReceipts: [number, number]; rpcRequests: number; cpuMs: number; wallMs: number };
}

function stats(values: number[]): Stats {
  const sorted = [...values].sort((a, b) => a - b);
  return { p50: percentile(sorted, 50), p95: percentile(sorted, 95), max: sorted[sorted.length - 1] ?? NaN };
}

/** utime + stime of a process in ms (10 ms ticks), or null when it is gone or unreadable. */
function processCpuMs(pid: number | undefined): number | null {
  if (pid === undefined) return null;
  try {
    // The command name (field 2) may hold spaces: count fields after its closing parenthesis.
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    return (Number(fields[11]) + Number(fields[12])) * CLOCK_TICK_MS;
  } catch {
    return null;
  }
}

/** JSON-RPC requests sent through a transport, by method. */
class RpcCounter {
  requests = 0;
  methods = new Map<string, number>();

  onFetchRequest = (_request: Request, init: RequestInit): void => {
    let methods: string[] = ['?'];
    try {
      const body = JSON.parse(typeof init.body === 'string' ? init.body : '') as { method: string } | { method: string }[];
      methods = (Array.isArray(body) ? body : [body]).map((b) => b.method);
    } catch {
      // counted as '?'
    }
    for (const m of methods) {
      this.requests++;
      this.methods.set(m, (this.methods.get(m) ?? 0) + 1);
    }
  };

  snapshot(): Map<string, number> {
    return new Map(this.methods);
  }
}

/** The test chain's deps with clients of our own that count what the worker sends. */
function countingChain(tc: TestChain, counter: RpcCounter): ChainDeps {
  const chain = tc.chain.publicClient.chain;
  const transport = http(tc.chain.rpcUrl, { timeout: tc.config.rpcTimeoutMs, onFetchRequest: counter.onFetchRequest });
  const publicClient = createPublicClient({ chain, transport, pollingInterval: 50 }) as ChainPublicClient;
  const walletClient = createWalletClient({ chain, transport, account: devAccount(DEV_DEPLOYER_INDEX), pollingInterval: 50 }) as ChainWalletClient;
  return { ...tc.chain, publicClient, walletClient };
}

/** N open receipts for one merchant: pending, unpaid, expiring in 30 days, no payment address yet. */
async function seedOpenReceipts(db: Database['db'], wallet: string, count: number, rng: Rng): Promise<void> {
  const now = Date.now();
  for (let start = 0; start < count; start += SEED_BATCH) {
    const rows: (typeof receipts.$inferInsert)[] = [];
    const history: (typeof receiptStatusHistory.$inferInsert)[] = [];
    for (let i = start; i < Math.min(start + SEED_BATCH, count); i++) {
      const id = receiptId(i);
      const priceUsd = (100 + rng.int(9900)) / 100;
      const lineItems = [{ label: 'Bench item', priceUsd, qty: 1 }];
      const prepared = prepareReceipt({ wallet, id, lineItems, totalUsd: priceUsd });
      const createdAt = now - (count - i) * 1000;
      rows.push({
        wallet,
        id,
        payToken: newPayToken(),
        source: 'api',
        status: 'pending',
        currency: 'USD',
        totalCents: prepared.totalCents,
        lineItems: prepared.stored,
        requestHash: prepared.requestHash,
        paidUnits: '0',
        expiresAt: now + 30 * 24 * 3_600_000,
        createdAt,
        updatedAt: createdAt,
      });
      history.push({ wallet, receiptId: id, status: 'pending', source: 'api', at: createdAt });
    }
    await db.transaction(async (tx) => {
      await bulkInsert(tx, receipts, rows);
      await bulkInsert(tx, receiptStatusHistory, history);
    });
  }
}

/** CPU of the PostgreSQL backends serving one database, read from /proc (the server runs on this machine). */
class ServerCpu {
  private constructor(
    private readonly monitor: pg.Client,
    private readonly database: string,
  ) {}

  static async open(url: string): Promise<ServerCpu> {
    const monitor = new pg.Client({ connectionString: url });
    await monitor.connect();
    const name = new URL(url).pathname.slice(1);
    return new ServerCpu(monitor, name);
  }

  async backends(): Promise<number[]> {
    const res = await this.monitor.query<{ pid: number }>('select pid from pg_stat_activity where datname = $1 and pid <> pg_backend_pid()', [this.database]);
    return res.rows.map((r) => r.pid);
  }

  close(): Promise<void> {
    return this.monitor.end();
  }
}

function cpuOf(pids: number[]): Map<number, number> {
  const out = new Map<number, number>();
  for (const pid of pids) {
    const ms = processCpuMs(pid);
    if (ms !== null) out.set(pid, ms);
  }
  return out;
}

interface RunContext {
  tc: TestChain;
  chain: ChainDeps;
  counter: RpcCounter;
  databaseServer: string | undefined;
  blocks: number;
  log: (line: string) => void;
}

async function runSize(c: RunContext, openReceipts: number, splitless: number, cleanup: (() => unknown)[]): Promise<WorkerRun> {
  const { tc, chain, counter } = c;
  const rng = createRng(20_241_124 + openReceipts);
  const publicClient = tc.chain.publicClient;
  const testClient = createTestClient({ chain: publicClient.chain, mode: 'anvil', transport: http(tc.chain.rpcUrl) });
  // Deriving a mnemonic account costs a PBKDF2 (tens of ms): once per run, never per block.
  const wallets = Array.from({ length: 9 }, (_, i) =>
    createWalletClient({ chain: publicClient.chain, transport: http(tc.chain.rpcUrl), account: devAccount(i) }),
  );

  // A database of its own.
  let databaseUrl: string | undefined;
  let dataDir: string | undefined;
  if (c.databaseServer !== undefined) {
    const fresh = await freshPostgresDatabase(c.databaseServer, 'splitline_bench_worker');
    cleanup.push(() => fresh.drop());
    databaseUrl = fresh.url;
  } else {
    dataDir = mkdtempSync(path.join(os.tmpdir(), 'splitline-bench-worker-'));
    const dir = dataDir;
    cleanup.push(() => rmSync(dir, { recursive: true, force: true }));
  }
  const database = await openDatabase({ databaseUrl, dataDir, poolSize: 10 });
  let closed = false;
  const closeDatabase = async () => {
    if (closed) return;
    closed = true;
    await database.close();
  };
  cleanup.push(closeDatabase);
  const db = database.db;
  const serverCpu = databaseUrl === undefined ? undefined : await ServerCpu.open(databaseUrl);
  if (serverCpu !== undefined) cleanup.push(() => serverCpu.close().catch(() => undefined));

  // A merchant whose split is on the chain (automine on for the deployment).
  await testClient.setAutomine(true);
  const merchant = randomWallet();
  const { split } = await setUpSplit(
    db,
    merchant,
    { recipients: [{ address: merchant, sharesBps: 10_000 - PLATFORM_FEE_BPS }, { address: PLATFORM, sharesBps: PLATFORM_FEE_BPS }] },
    { address: PLATFORM, feeBps: PLATFORM_FEE_BPS },
    Date.now(),
    // The dev chain's deployment budget, as the admin route passes it (config SPLIT_DEPLOYS_PER_DAY on CHAIN=dev).
    splitChainOf(chain, 1_000_000),
  );
  if (split.address === null) throw new Error('the split was not deployed');

  let t = performance.now();
  await seedOpenReceipts(db, merchant, openReceipts, rng);
  const seedMs = performance.now() - t;
  c.log(`  ${openReceipts.toLocaleString('en-US')} open receipts inserted in ${(seedMs / 1000).toFixed(1)} s`);
  if (splitless > 0) {
    // A service with many merchants: some more with a split (their receipts get addresses too),
    // and receipts of merchants without a deployed split, as POST /api/receipts allows: half of
    // them configured recipients without deploying, half configured nothing.
    const recipientsOf = (w: string) => [{ address: w, sharesBps: 10_000 - PLATFORM_FEE_BPS }, { address: PLATFORM, sharesBps: PLATFORM_FEE_BPS }];
    for (let m = 0; m < SPLITLESS_RUN_OTHER_SPLITS; m++) {
      const other = randomWallet();
      await db.insert(splitConfigs).values({ wallet: other, address: randomWallet(), recipients: recipientsOf(other), createdAt: Date.now() });
      await seedOpenReceipts(db, other, SPLITLESS_RUN_RECEIPTS_PER_SPLIT, rng);
    }
    for (let m = 0; m < SPLITLESS_MERCHANTS; m++) {
      const other = randomWallet();
      if (m % 2 === 0) await db.insert(splitConfigs).values({ wallet: other, address: null, recipients: recipientsOf(other), createdAt: Date.now() });
      const share = Math.floor(splitless / SPLITLESS_MERCHANTS) + (m < splitless % SPLITLESS_MERCHANTS ? 1 : 0);
      await seedOpenReceipts(db, other, share, rng);
    }
    c.log(
      `  and ${SPLITLESS_RUN_OTHER_SPLITS} more merchants with a split (${SPLITLESS_RUN_RECEIPTS_PER_SPLIT} open receipts each), ` +
        `${splitless.toLocaleString('en-US')} open receipts of ${SPLITLESS_MERCHANTS} merchants without a deployed split`,
    );
  }

  const head = await publicClient.getBlockNumber({ cacheTime: 0 });
  const worker = new ChainWorker({
    db,
    chain,
    logger: pino({ level: 'silent' }),
    confirmations: 1,
    platformRecipient: PLATFORM,
    startBlock: head + 1n,
  });

  // The first pass stores every payment address.
  let requestsBefore = counter.requests;
  t = performance.now();
  const first = await worker.pass();
  const fillWallMs = performance.now() - t;
  const [{ filled }] = (await db
    .select({ filled: sql<number>`count(*)::int` })
    .from(receipts)
    .where(isNotNull(receipts.payAddress))) as [{ filled: number }];
  const addressable = openReceipts + (splitless > 0 ? SPLITLESS_RUN_OTHER_SPLITS * SPLITLESS_RUN_RECEIPTS_PER_SPLIT : 0);
  if (filled !== addressable) throw new Error(`the first pass stored ${filled} of ${addressable} payment addresses`);
  const [{ unaddressed }] = (await db
    .select({ unaddressed: sql<number>`count(*)::int` })
    .from(receipts)
    .where(sql`${receipts.payAddress} is null`)) as [{ unaddressed: number }];
  if (unaddressed !== splitless) throw new Error(`${unaddressed} receipts have no payment address after the first pass, expected ${splitless}`);
  const fill = { addresses: filled, wallMs: fillWallMs, cpuMs: first.cpuMicros / 1000, rpcRequests: counter.requests - requestsBefore };
  c.log(`  first pass stored ${filled.toLocaleString('en-US')} payment addresses in ${(fillWallMs / 1000).toFixed(2)} s (CPU ${(fill.cpuMs / 1000).toFixed(2)} s)`);

  // A database that has been running has planner statistics and vacuumed rows (the fill rewrote every row).
  t = performance.now();
  await db.execute(sql`vacuum (analyze)`);
  await db.execute(sql`checkpoint`).catch(() => undefined);
  const vacuumMs = performance.now() - t;

  await testClient.setAutomine(false);
  const unpaid = Array.from({ length: openReceipts }, (_, i) => receiptId(i));
  const paid: string[] = [];
  const samples: BlockSample[] = [];
  let anvilCpuMs = 0;
  let serverCpuMs = 0;
  let methodsAtStart = new Map<string, number>();
  let methodsAtEnd = new Map<string, number>();
  let sweepsPending = 0;
  const total = WARMUP_BLOCKS + c.blocks + DRAIN_BLOCKS;
  for (let b = 0; b < total; b++) {
    const measured = b >= WARMUP_BLOCKS && b < WARMUP_BLOCKS + c.blocks;
    const draining = b >= WARMUP_BLOCKS + c.blocks;
    if (b === WARMUP_BLOCKS) methodsAtStart = counter.snapshot();
    const sends: Promise<Hex>[] = [];
    const hints: { id: string; hash: Promise<Hex> }[] = [];
    if (!draining) {
      const ids: string[] = [];
      for (let p = 0; p < PAYMENTS_PER_BLOCK && unpaid.length > 0; p++) ids.push(unpaid.splice(rng.int(unpaid.length), 1)[0]!);
      const rows = await db
        .select({ id: receipts.id, payAddress: receipts.payAddress, totalCents: receipts.totalCents })
        .from(receipts)
        .where(and(eq(receipts.wallet, merchant), inArray(receipts.id, ids)));
      rows.forEach((r, p) => {
        if (r.payAddress === null) throw new Error(`${r.id} has no payment address`);
        const hash = wallets[p]!.writeContract({
          address: chain.usdc.address,
          abi: erc20Abi,
          functionName: 'transfer',
          args: [r.payAddress as Address, r.totalCents * 10n ** BigInt(chain.usdc.decimals - 2)],
        });
        sends.push(hash);
        hints.push({ id: r.id, hash });
        paid.push(r.id);
      });
      for (let o = 0; o < OTHER_TRANSFERS_PER_BLOCK; o++) {
        const to = wallets[5 + rng.int(4)]!.account.address;
        sends.push(
          wallets[PAYMENTS_PER_BLOCK + o]!.writeContract({
            address: chain.usdc.address,
            abi: erc20Abi,
            functionName: 'transfer',
            args: [to, BigInt(1 + rng.int(5_000_000))],
          }),
        );
      }
    }
    const hashes = await Promise.all(sends);
    await testClient.mine({ blocks: 1 });
    for (const hash of hashes) {
      const mined = await publicClient.waitForTransactionReceipt({ hash, pollingInterval: 20 });
      if (mined.status !== 'success') throw new Error(`transfer ${hash} reverted`);
    }
    // The payment page sends each payment's hash as a hint once its wallet has it.
    for (const h of hints) await recordHint(db, { wallet: merchant, receiptId: h.id, hash: await h.hash, now: Date.now() });

    const pids = serverCpu === undefined ? [] : await serverCpu.backends();
    const serverBefore = cpuOf(pids);
    const anvilBefore = processCpuMs(tc.chain.dev?.process?.pid);
    requestsBefore = counter.requests;
    t = performance.now();
    const pass: PassStats = await worker.pass();
    const wallMs = performance.now() - t;
    const requests = counter.requests - requestsBefore;
    const anvilAfter = processCpuMs(tc.chain.dev?.process?.pid);
    const serverAfter = serverCpu === undefined ? new Map<number, number>() : cpuOf(await serverCpu.backends());
    if (measured) {
      if (anvilBefore !== null && anvilAfter !== null) anvilCpuMs += anvilAfter - anvilBefore;
      for (const [pid, ms] of serverAfter) serverCpuMs += ms - (serverBefore.get(pid) ?? ms);
      samples.push({
        block: Number(pass.head),
        payments: hints.length,
        otherTransfers: draining ? 0 : OTHER_TRANSFERS_PER_BLOCK,
        sweepsMined: sweepsPending,
        settled: pass.settled,
        sweepsSent: pass.sweeps,
        hints: pass.hints,
        rpcCalls: pass.rpcCalls,
        rpcRequests: requests,
        cpuMs: pass.cpuMicros / 1000,
        wallMs,
      });
    }
    sweepsPending = pass.sweeps;
    if (b === WARMUP_BLOCKS + c.blocks - 1) {
      methodsAtEnd = counter.snapshot();
      const done = samples.length;
      const last = samples[done - 1]!;
      c.log(`  ${done} blocks measured (last: ${last.rpcRequests} RPC requests, CPU ${last.cpuMs.toFixed(1)} ms, wall ${last.wallMs.toFixed(1)} ms)`);
    }
  }
  // The drain blocks' requests are not part of the measured blocks.
  const rpcMethods: Record<string, number> = {};
  for (const [m, n] of methodsAtEnd) {
    const d = n - (methodsAtStart.get(m) ?? 0);
    if (d > 0) rpcMethods[m] = d;
  }
  await testClient.setAutomine(true);

  const [{ completed }] = (await db
    .select({ completed: sql<number>`count(*)::int` })
    .from(receipts)
    .where(and(eq(receipts.wallet, merchant), inArray(receipts.id, paid), eq(receipts.status, 'completed')))) as [{ completed: number }];
  const [{ open }] = (await db
    .select({ open: sql<number>`count(*)::int` })
    .from(receipts)
    .where(and(eq(receipts.wallet, merchant), eq(receipts.status, 'pending')))) as [{ open: number }];
  if (completed !== paid.length) throw new Error(`${paid.length - completed} of ${paid.length} paid receipts did not complete`);
  const left = await Promise.all(
    (await db.select({ a: receipts.payAddress }).from(receipts).where(and(eq(receipts.wallet, merchant), inArray(receipts.id, paid)))).map((r) =>
      publicClient.readContract({ address: chain.usdc.address, abi: erc20Abi, functionName: 'balanceOf', args: [r.a as Address] }),
    ),
  );
  if (left.some((v) => v !== 0n)) throw new Error('money was left at a paid receipt\'s payment address');

  cleanup.splice(cleanup.indexOf(closeDatabase), 1);
  await closeDatabase();
  // The remaining cleanup steps (drop the database, remove the directory) run at the end.
  const ms = (s: BlockSample[], f: (x: BlockSample) => number) => stats(s.map(f));
  return {
    openReceipts,
    splitlessReceipts: splitless,
    seedMs,
    fill,
    vacuumMs,
    perBlock: {
      rpcCalls: ms(samples, (s) => s.rpcCalls),
      rpcRequests: ms(samples, (s) => s.rpcRequests),
      cpuMs: ms(samples, (s) => s.cpuMs),
      wallMs: ms(samples, (s) => s.wallMs),
      settled: ms(samples, (s) => s.settled),
      sweepsSent: ms(samples, (s) => s.sweepsSent),
    },
    anvilCpuMsPerBlock: anvilCpuMs / samples.length,
    dbServerCpuMsPerBlock: serverCpu === undefined ? null : serverCpuMs / samples.length,
    rpcMethods,
    paid: paid.length,
    paidCompleted: completed,
    openAtEnd: open,
    samples,
  };
}

// ---- the report ----

function markdown(r: WorkerReport): string {
  const f1 = (n: number) => (Number.isInteger(n) ? String(n) : n.toFixed(1));
  const row = (what: string, s: Stats) => `| ${what} | ${f1(s.p50)} | ${f1(s.p95)} | ${f1(s.max)} |`;
  const n = (x: number) => x.toLocaleString('en-US');
  const lines = [
    '## Splitline bench: chain worker cost per block',
    '',
    `${r.generatedAt.slice(0, 16).replace('T', ' ')} UTC · ${r.database === 'postgres' ? 'PostgreSQL' : 'PGlite'} · CHAIN=dev (anvil, one block mined per pass) · ` +
      `CONFIRMATIONS=1 · ${r.settings.blocks} blocks measured per size after ${r.settings.warmupBlocks} unmeasured · node ${r.machine.node} on ${r.machine.cpus} CPUs (${r.machine.cpuModel})`,
    '',
  ];
  if (r.machine.loadAverageAtStart > r.machine.cpus) {
    lines.push(`**The machine was busy with other work** (load average ${r.machine.loadAverageAtStart.toFixed(1)} on ${r.machine.cpus} CPUs at the start): figures are pessimistic.`, '');
  }
  lines.push(
    `Each block holds ${r.settings.paymentsPerBlock} payments (a dev account transfers exactly a random open receipt's amount to its payment address), ` +
      `${r.settings.otherTransfersPerBlock} unrelated USDC transfers between dev accounts, and the sweeps the previous pass sent; after each block the ` +
      "payment page's hints are recorded and one `ChainWorker.pass()` runs: it reads the block, settles the receipts it touched, sends their sweeps " +
      'into the split, completes the receipts whose sweep it reads, expires nothing (no receipt is due), and follows the hints. Every paid receipt ' +
      'completed, with nothing left at its payment address.',
    '',
    '"RPC calls" is what the worker reports (lastPass.rpcCalls); "RPC requests" is what its viem clients actually sent. CPU is lastPass.cpuMicros: ' +
      (r.database === 'pglite'
        ? 'this process, which on PGlite includes the database itself.'
        : 'this process only; the PostgreSQL server\'s own CPU for the database is given separately.'),
    '',
  );
  for (const run of r.runs) {
    lines.push(
      `### ${n(run.openReceipts)} open receipts` +
        (run.splitlessReceipts > 0
          ? `, plus ${SPLITLESS_RUN_OTHER_SPLITS} more merchants with a split and ${SPLITLESS_RUN_RECEIPTS_PER_SPLIT} open receipts each, and ${n(run.splitlessReceipts)} open receipts of ${SPLITLESS_MERCHANTS} merchants without a deployed split`
          : ''),
      '',
      `Inserted in ${(run.seedMs / 1000).toFixed(1)} s; the first pass stored ${n(run.fill.addresses)} payment addresses in ` +
        `${(run.fill.wallMs / 1000).toFixed(2)} s (CPU ${(run.fill.cpuMs / 1000).toFixed(2)} s, ${run.fill.rpcRequests} RPC requests); VACUUM (ANALYZE) ${(run.vacuumMs / 1000).toFixed(1)} s.`,
      '',
      '| per block | p50 | p95 | max |',
      '|---|---:|---:|---:|',
      row('RPC calls (lastPass.rpcCalls)', run.perBlock.rpcCalls),
      row('RPC requests sent', run.perBlock.rpcRequests),
      row('worker CPU, ms', run.perBlock.cpuMs),
      row('pass wall time, ms', run.perBlock.wallMs),
      row('receipts settled', run.perBlock.settled),
      row('sweeps sent', run.perBlock.sweepsSent),
      '',
      `Mean per block: anvil CPU ${run.anvilCpuMsPerBlock.toFixed(1)} ms` +
        (run.dbServerCpuMsPerBlock === null ? '' : `, PostgreSQL server CPU ${run.dbServerCpuMsPerBlock.toFixed(1)} ms`) +
        ` (10 ms ticks from /proc). RPC methods over the measured blocks: ${Object.entries(run.rpcMethods)
          .sort((a, b) => b[1] - a[1])
          .map(([m, c]) => `${m} ${c}`)
          .join(', ')}. ${run.paidCompleted} of ${run.paid} paid receipts completed; ${n(run.openAtEnd)} still open.`,
      '',
    );
  }
  const g = r.growth;
  lines.push(
    `From ${n(g.openReceipts[0])} to ${n(g.openReceipts[1])} open receipts, p50 per block: RPC requests ×${g.rpcRequests.toFixed(2)}, ` +
      `worker CPU ×${g.cpuMs.toFixed(2)}, wall time ×${g.wallMs.toFixed(2)}.`,
    '',
  );
  const base = r.runs.find((x) => x.splitlessReceipts === 0 && x.openReceipts === g.openReceipts[0]);
  for (const x of r.runs.filter((y) => y.splitlessReceipts > 0)) {
    if (base === undefined) break;
    const server = x.dbServerCpuMsPerBlock !== null && base.dbServerCpuMsPerBlock !== null ? `, PostgreSQL server CPU ${base.dbServerCpuMsPerBlock.toFixed(1)} → ${x.dbServerCpuMsPerBlock.toFixed(1)} ms` : '';
    lines.push(
      `With ${n(x.splitlessReceipts)} open receipts of merchants without a deployed split in the database, per block (p50): ` +
        `worker CPU ${base.perBlock.cpuMs.p50.toFixed(1)} → ${x.perBlock.cpuMs.p50.toFixed(1)} ms, wall time ${base.perBlock.wallMs.p50.toFixed(1)} → ${x.perBlock.wallMs.p50.toFixed(1)} ms${server}.`,
      '',
    );
  }
  return lines.join('\n');
}

/** Runs the chain worker bench; resolves to the exit code (non-zero when the bench itself failed). */
export async function benchChainWorker(env: NodeJS.ProcessEnv = process.env): Promise<number> {
  if (['0', 'false', 'no'].includes((env.BENCH_WORKER ?? '').trim().toLowerCase())) {
    console.log('\nChain worker cost per block: skipped (BENCH_WORKER=0)');
    return 0;
  }
  const quick = isQuick(env);
  const rawBlocks = env.BENCH_WORKER_BLOCKS?.trim();
  const blocks = rawBlocks === undefined || rawBlocks === '' ? (quick ? 15 : 50) : Number(rawBlocks);
  const rawSizes = env.BENCH_WORKER_SIZES?.trim();
  const sizes = (rawSizes === undefined || rawSizes === '' ? (quick ? '1000,20000' : '1000,100000') : rawSizes).split(',').map((s) => Number(s.trim()));
  const rawSplitless = env.BENCH_WORKER_SPLITLESS?.trim();
  const splitless = rawSplitless === undefined || rawSplitless === '' ? 0 : Number(rawSplitless);
  if (!Number.isInteger(splitless) || splitless < 0 || splitless > 1_000_000) {
    console.error(`BENCH_WORKER_SPLITLESS must be a whole number from 0 to 1,000,000 (got "${rawSplitless}")`);
    return 1;
  }
  if (!Number.isInteger(blocks) || blocks < 1 || blocks > 1000) {
    console.error(`BENCH_WORKER_BLOCKS must be a whole number from 1 to 1000 (got "${rawBlocks}")`);
    return 1;
  }
  if (sizes.length < 1 || sizes.some((s) => !Number.isInteger(s) || s < (WARMUP_BLOCKS + blocks) * PAYMENTS_PER_BLOCK || s > 1_000_000)) {
    console.error(`BENCH_WORKER_SIZES must list whole numbers from ${(WARMUP_BLOCKS + blocks) * PAYMENTS_PER_BLOCK} to 1,000,000 (got "${rawSizes}")`);
    return 1;
  }
  return withCleanup(async (cleanup) => {
    try {
      const loadAtStart = os.loadavg()[0] ?? 0;
      const server = env.DATABASE_URL?.trim() || undefined;
      console.log(`\nChain worker cost per block: ${sizes.map((s) => s.toLocaleString('en-US')).join(' and ')} open receipts, ${blocks} blocks each, ${server ? 'PostgreSQL' : 'PGlite'}`);
      const tc = await startTestChain();
      cleanup.push(() => tc.close());
      const counter = new RpcCounter();
      const context: RunContext = { tc, chain: countingChain(tc, counter), counter, databaseServer: server, blocks, log: (l) => console.log(l) };
      const runs: WorkerRun[] = [];
      for (const size of sizes) runs.push(await runSize(context, size, 0, cleanup));
      const sized = [...runs];
      if (splitless > 0) runs.push(await runSize(context, Math.min(...sizes), splitless, cleanup));
      const smallest = sized.reduce((a, b) => (b.openReceipts < a.openReceipts ? b : a));
      const largest = sized.reduce((a, b) => (b.openReceipts > a.openReceipts ? b : a));
      const report: WorkerReport = {
        generatedAt: new Date().toISOString(),
        database: server === undefined ? 'pglite' : 'postgres',
        machine: machine(loadAtStart),
        settings: { blocks, warmupBlocks: WARMUP_BLOCKS, paymentsPerBlock: PAYMENTS_PER_BLOCK, otherTransfersPerBlock: OTHER_TRANSFERS_PER_BLOCK, confirmations: 1, quick },
        runs,
        growth: {
          openReceipts: [smallest.openReceipts, largest.openReceipts],
          rpcRequests: largest.perBlock.rpcRequests.p50 / smallest.perBlock.rpcRequests.p50,
          cpuMs: largest.perBlock.cpuMs.p50 / smallest.perBlock.cpuMs.p50,
          wallMs: largest.perBlock.wallMs.p50 / smallest.perBlock.wallMs.p50,
        },
      };
      console.log('\n' + markdown(report));
      const written = writeBenchResults(`chain-worker-${quick ? 'quick' : 'latest'}`, report, markdown(report));
      console.log(`Written: ${path.relative(process.cwd(), written.json)}, ${path.relative(process.cwd(), written.md)}`);
      return 0;
    } catch (err) {
      console.error(`\nChain worker bench failed: ${err instanceof Error ? (err.stack ?? err.message) : String(err)}`);
      return 1;
    }
  });
}

if (process.argv[1] !== undefined && import.meta.url === pathToFileURL(process.argv[1]).href) {
  void benchChainWorker().then((code) => process.exit(code));
}
