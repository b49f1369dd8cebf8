/**
 * The chain worker on the mainnet-shaped simulation (issue 23, item 9; test/sim/helpers.ts): anvil
 * as chain 8453 with a 2-second block carrying 550 foreign Transfer logs and 50 test-USDC transfers,
 * the service reaching it only through the provider proxy with every behaviour on (10,000-result
 * and 2,000-block eth_getLogs limits, 50-150 ms latency, 25 requests/s, a node 1-3 blocks behind
 * on 30% of answers, 1% 503s), CONFIRMATIONS=3. The real app runs in this process (PGlite in
 * memory, or a fresh database on the PostgreSQL server in DATABASE_URL) with its workers.
 *
 *   idle      after a warm-up, the worker follows the chain with no receipt open for
 *             BENCH_MAINNET_IDLE_SEC seconds: RPC calls, Alchemy compute units
 *             (src/chain/compute-units.ts) and MB of answers, scaled to a day
 *   payments  BENCH_MAINNET_PAYMENTS receipts paid one after the other, a block apart: block →
 *             completed p50 / p95 (the block's timestamp to the `completed` entry of the status
 *             history), and the calls, compute units and bytes over the idle rate, per payment
 *
 * Writes bench/results/mainnet-latest.{json,md} (mainnet-quick.* with BENCH_QUICK=1).
 *   BENCH_MAINNET=0            skips this part
 *   BENCH_MAINNET_IDLE_SEC=n   idle seconds measured (default 60; 30 with BENCH_QUICK=1)
 *   BENCH_MAINNET_PAYMENTS=n   payments (default 12; 6 with BENCH_QUICK=1)
 * Run alone with `tsx bench/mainnet.ts`; `npm run bench` runs it last.
 */
import { mkdirSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { pathToFileURL } from 'node:url';
import { computeUnits } from '../src/chain/compute-units.ts';
import { ROOT } from '../scripts/service-launcher.ts';
import { startSim, type ProviderStats, type Sim } from '../test/sim/helpers.ts';
import { openReceipt, openShop, pay, reaches, startSimApp, type SimApp } from '../test/sim/shop.ts';
import { percentile, type Stats } from './payments.ts';
import { machine, type Machine } from './bench-run.ts';


const DAY_SEC = 86_400;
const WARMUP_SEC = 20;
const SETTLE_MS = 180_000;

export interface Cost {
  seconds: number;
  calls: number;
  computeUnits: number;
  bytes: number;
  rateLimitedCalls: number;
  methods: Record<string, number>;
}

export interface MainnetReport {
  generatedAt: string;
  database: 'pglite' | 'postgres';
  machine: Machine;
  settings: { confirmations: number; idleSec: number; payments: number; provider: ReturnType<Sim['proxy']['behaviour']> };
  idle: Cost & { callsPerDay: number; computeUnitsPerDay: number; mbPerDay: number };
  payments: Cost & { callsPerPayment: number; computeUnitsPerPayment: number; kbPerPayment: number };
  blockToCompletedMs: Stats;
  samplesMs: number[];
  completed: number;
}

function costOf(stats: ProviderStats, seconds: number): Cost {
  const methods = Object.fromEntries(Object.entries(stats.methods).map(([m, s]) => [m, s.calls]));
  return {
    seconds,
    calls: Object.values(methods).reduce((a, b) => a + b, 0),
    computeUnits: computeUnits(methods),
    bytes: stats.bytes,
    rateLimitedCalls: stats.rateLimited.calls,
    methods,
  };
}

async function idlePhase(sim: Sim, seconds: number) {
  sim.proxy.resetStats();
  const started = Date.now();
  await new Promise((r) => setTimeout(r, seconds * 1000));
  const cost = costOf(sim.proxy.resetStats(), (Date.now() - started) / 1000);
  const perDay = DAY_SEC / cost.seconds;
  return { ...cost, callsPerDay: cost.calls * perDay, computeUnitsPerDay: cost.computeUnits * perDay, mbPerDay: (cost.bytes * perDay) / 1e6 };
}

async function paymentPhase(sim: Sim, app: SimApp, count: number, idle: MainnetReport['idle']) {
  const shop = await openShop(sim, app.t);
  const receipts = [];
  for (let i = 0; i < count; i++) receipts.push(await openReceipt(app.t, shop, `bench-${i}`, (100 + i) / 100));
  sim.proxy.resetStats();
  const started = Date.now();
  const samples: number[] = [];
  const waits: Promise<void>[] = [];
  for (const r of receipts) {
    const paid = await pay(sim, 0, r.payTo, r.amount);
    const block = await sim.publicClient.getBlock({ blockNumber: paid.blockNumber });
    waits.push(
      reaches(app.t, shop, r.id, 'completed', SETTLE_MS).then((done) => {
        const history = (done as { statusHistory: { status: string; at: number }[] }).statusHistory;
        const at = history.find((h) => h.status === 'completed')!.at;
        samples.push(at - Number(block.timestamp) * 1000);
      }),
    );
    await sim.waitForBlock(paid.blockNumber + 1n);
  }
  await Promise.all(waits);
  const cost = costOf(sim.proxy.resetStats(), (Date.now() - started) / 1000);
  const share = cost.seconds / idle.seconds;
  const over = (all: number, idleAmount: number) => Math.max(0, all - idleAmount * share) / count;
  return {
    cost: {
      ...cost,
      callsPerPayment: over(cost.calls, idle.calls),
      computeUnitsPerPayment: over(cost.computeUnits, idle.computeUnits),
      kbPerPayment: over(cost.bytes, idle.bytes) / 1000,
    },
    samples,
  };
}

export function mainnetMarkdown(r: MainnetReport): string {
  const n = (x: number, d = 0) => x.toLocaleString('en-US', { maximumFractionDigits: d, minimumFractionDigits: d });
  return [
    `# Chain worker on the mainnet-shaped simulation (${r.generatedAt})`,
    '',
    `${r.database}, CONFIRMATIONS=${r.settings.confirmations}, every provider behaviour on; ${r.machine.cpus} CPUs (${r.machine.cpuModel}), load ${r.machine.loadAverageAtStart.toFixed(1)} → ${r.machine.loadAverageAtEnd.toFixed(1)}`,
    '',
    '| measure | value | target |',
    '|---|---:|---|',
    `| block → completed p50 | ${n(r.blockToCompletedMs.p50 / 1000, 1)} s | ≤ 9 s |`,
    `| block → completed p95 | ${n(r.blockToCompletedMs.p95 / 1000, 1)} s | ≤ 15 s |`,
    `| payments completed | ${r.completed} of ${r.settings.payments} | all |`,
    `| idle RPC calls per day | ${n(r.idle.callsPerDay)} | |`,
    `| idle compute units per day | ${n(r.idle.computeUnitsPerDay)} | ≤ 5,000,000 |`,
    `| idle MB of answers per day | ${n(r.idle.mbPerDay, 1)} | |`,
    `| RPC calls per payment (over idle) | ${n(r.payments.callsPerPayment, 1)} | |`,
    `| compute units per payment (over idle) | ${n(r.payments.computeUnitsPerPayment)} | ≤ 200 |`,
    `| kB of answers per payment (over idle) | ${n(r.payments.kbPerPayment, 1)} | |`,
    `| calls refused by the rate limit, idle / payments | ${r.idle.rateLimitedCalls} / ${r.payments.rateLimitedCalls} | |`,
    '',
    `Idle calls by method over ${n(r.idle.seconds)} s: ${Object.entries(r.idle.methods).map(([m, c]) => `${m} ${c}`).join(', ')}`,
    '',
    `Calls per payment by method (over idle): ${perPaymentByMethod(r)
      .map(([m, c]) => `${m} ${n(c, 2)}`)
      .join(', ')}`,
    '',
  ].join('\n');
}

/**
 * What the payments added to each method's calls, per payment: where the compute units per payment
 * go. Below zero when payments took the place of idle calls (a pass that found work reads fewer headers).
 */
function perPaymentByMethod(r: MainnetReport): [string, number][] {
  const share = r.payments.seconds / r.idle.seconds;
  const count = Math.max(1, r.settings.payments);
  return Object.entries(r.payments.methods)
    .map(([m, c]): [string, number] => [m, (c - (r.idle.methods[m] ?? 0) * share) / count])
    .sort((a, b) => b[1] - a[1]);
}

export async function benchMainnet(env: NodeJS.ProcessEnv = process.env): Promise<number> {
  if (['0', 'false', 'no'].includes((env.BENCH_MAINNET ?? '').trim().toLowerCase())) {
    console.log('\nMainnet-shaped simulation: skipped (BENCH_MAINNET=0)');
    return 0;
  }
  const quick = ['1', 'true', 'yes'].includes((env.BENCH_QUICK ?? '').toLowerCase());
  const idleSec = Number(env.BENCH_MAINNET_IDLE_SEC?.trim() || (quick ? 30 : 60));
  const count = Number(env.BENCH_MAINNET_PAYMENTS?.trim() || (quick ? 6 : 12));
  if (!Number.isInteger(idleSec) || idleSec < 10 || idleSec > 3600) {
    console.error('BENCH_MAINNET_IDLE_SEC must be whole seconds from 10 to 3600');
    return 1;
  }
  if (!Number.isInteger(count) || count < 2 || count > 500) {
    console.error('BENCH_MAINNET_PAYMENTS must be a whole number from 2 to 500');
    return 1;
  }
  console.log(`\nMainnet-shaped simulation: ${WARMUP_SEC} s warm-up, ${idleSec} s idle, ${count} payments`);
  const loadAtStart = os.loadavg()[0] ?? 0;
  let sim: Sim | undefined;
  let app: SimApp | undefined;
  try {
    sim = await startSim();
    app = await startSimApp(sim);
    app.t.deps.startWorkers();
    await new Promise((r) => setTimeout(r, WARMUP_SEC * 1000));
    const idle = await idlePhase(sim, idleSec);
    const paid = await paymentPhase(sim, app, count, idle);
    const sorted = [...paid.samples].sort((a, b) => a - b);
    const report: MainnetReport = {
      generatedAt: new Date().toISOString(),
      database: env.DATABASE_URL ? 'postgres' : 'pglite',
      machine: machine(loadAtStart),
      settings: { confirmations: app.t.config.confirmations, idleSec, payments: count, provider: sim.proxy.behaviour() },
      idle,
      payments: paid.cost,
      blockToCompletedMs: { p50: percentile(sorted, 50), p95: percentile(sorted, 95), max: sorted.at(-1) ?? NaN },
      samplesMs: paid.samples,
      completed: paid.samples.length,
    };
    const md = mainnetMarkdown(report);
    console.log('\n' + md);
    const dir = path.join(ROOT, 'bench', 'results');
    mkdirSync(dir, { recursive: true });
    const name = quick ? 'mainnet-quick' : 'mainnet-latest';
    writeFileSync(path.join(dir, `${name}.json`), JSON.stringify(report, null, 2) + '\n');
    writeFileSync(path.join(dir, `${name}.md`), md);
    return 0;
  } catch (err) {
    console.error(`\nMainnet-shaped simulation bench failed: ${err instanceof Error ? (err.stack ?? err.message) : String(err)}`);
    return 1;
  } finally {
    await app?.close();
    await sim?.stop();
  }
}

if (process.argv[1] !== undefined && import.meta.url === pathToFileURL(process.argv[1]).href) {
  void benchMainnet().then((code) => process.exit(code));
}
