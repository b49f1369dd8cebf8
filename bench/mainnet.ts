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
 *   strangers BENCH_MAINNET_ATTACK_ROUNDS rounds of a payment alone, then a payment during a
 *             stranger's act: 1-unit dust to 400 payment addresses of another merchant (issue 23:
 *             a delay of at most 2 s), and 50,000 fake Transfer logs over 5 blocks, also into
 *             payment addresses (at most 10 s). The delay is the p50 with the act less the p50
 *             alone, each payment timed like the ones above; rounds alternate so that drift in the
 *             machine's load falls on both
 *
 * Writes bench/results/mainnet-latest.{json,md} (mainnet-quick.* with BENCH_QUICK=1).
 *   BENCH_MAINNET=0            skips this part
 *   BENCH_MAINNET_IDLE_SEC=n   idle seconds measured (default 60; 30 with BENCH_QUICK=1)
 *   BENCH_MAINNET_PAYMENTS=n   payments (default 12; 6 with BENCH_QUICK=1)
 *   BENCH_MAINNET_ATTACK_ROUNDS=n  rounds of each act (default 5; 2 with BENCH_QUICK=1; 0 skips them)
 * Run alone with `tsx bench/mainnet.ts`; `npm run bench` runs it last.
 */
import { mkdirSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { pathToFileURL } from 'node:url';
import { and, count, inArray, isNull } from 'drizzle-orm';
import type { Address } from 'viem';
import { receipts } from '../src/db/schema.ts';
import { computeUnits } from '../src/chain/compute-units.ts';
import { ROOT } from '../scripts/service-launcher.ts';
import { startSim, type ProviderStats, type Sim } from '../test/sim/helpers.ts';
import { openReceipt, openShop, pay, payAndTime, reaches, startSimApp, type Shop, type SimApp } from '../test/sim/shop.ts';
import { waitFor } from '../test/helpers/wait.ts';
import { percentile, type Stats } from './payments.ts';
import { machine, type Machine } from './bench-run.ts';


const DAY_SEC = 86_400;
const WARMUP_SEC = 20;
const SETTLE_MS = 180_000;
/** Payment addresses each dust round sends 1 unit to, in one transaction (issue 23). */
const DUST_ADDRESSES = 400;
/** Fake Transfer logs of each flood round, over FLOOD_BLOCKS blocks (issue 23). */
const FLOOD_LOGS = 50_000;
const FLOOD_BLOCKS = 5;

/** Block → completed of payments alone and with a stranger's act, round by round. */
export interface StrangerDelay {
  rounds: number;
  aloneMs: number[];
  withActMs: number[];
  /** p50 with the act less p50 alone. */
  delayP50Ms: number;
}

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
  /** Time between the simulated chain's blocks during the payments (its timestamps, whole seconds). */
  blockGapsMs: { blocks: number; p50: number; max: number; over3s: number };
  completed: number;
  /** Payments right after dust and during a flood of fake logs, against payments alone; null when skipped. */
  strangers: { dust: StrangerDelay; flood: StrangerDelay } | null;
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
  const firstBlock = await sim.publicClient.getBlockNumber({ cacheTime: 0 });
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
  const blockGapsMs = await blockGaps(sim, firstBlock, await sim.publicClient.getBlockNumber({ cacheTime: 0 }));
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
    blockGapsMs,
  };
}

/**
 * The time between consecutive blocks from `from` to `to`, as the node stamped them: a block
 * later than the block time delays every payment waiting for depth, whatever the worker does, so
 * the report shows it beside block → completed.
 */
async function blockGaps(sim: Sim, from: bigint, to: bigint): Promise<MainnetReport['blockGapsMs']> {
  const stamps: number[] = [];
  for (let b = from; b <= to; b++) stamps.push(Number((await sim.publicClient.getBlock({ blockNumber: b })).timestamp) * 1000);
  const gaps = stamps.slice(1).map((t, i) => t - stamps[i]!);
  const sorted = [...gaps].sort((a, b) => a - b);
  return { blocks: gaps.length, p50: percentile(sorted, 50), max: sorted.at(-1) ?? NaN, over3s: gaps.filter((g) => g > 3000).length };
}

/**
 * Each round times a payment of `victim` alone, then starts the stranger's act, and times a payment
 * made once the act's first transaction is mined; returns when the act is over.
 */
async function strangerRounds(sim: Sim, app: SimApp, victim: Shop, name: string, rounds: number, act: () => Promise<{ done: Promise<unknown> }>): Promise<StrangerDelay> {
  const aloneMs: number[] = [];
  const withActMs: number[] = [];
  for (let round = 0; round < rounds; round++) {
    aloneMs.push((await payAndTime(sim, app.t, victim, `alone-${name}-${round}`, 4.2, SETTLE_MS)).ms);
    const { done } = await act();
    withActMs.push((await payAndTime(sim, app.t, victim, `with-${name}-${round}`, 4.4, SETTLE_MS)).ms);
    await done;
    console.log(`${name} round ${round + 1} of ${rounds}: alone ${aloneMs.at(-1)} ms, with the ${name} ${withActMs.at(-1)} ms`);
  }
  const p50 = (xs: number[]) => percentile([...xs].sort((a, b) => a - b), 50);
  return { rounds, aloneMs, withActMs, delayP50Ms: p50(withActMs) - p50(aloneMs) };
}

/**
 * Dust: DUST_ADDRESSES payment addresses of another merchant are stored first, and the worker has
 * looked at each for early money (a cost of new receipts, not of dust); each round sends 1 unit to
 * every one of them in one transaction (a round after the first dusts receipts already short,
 * which the worker settles again all the same), as test/sim/dust.test.ts does once. Flood: each
 * round a contract of the stranger's emits FLOOD_LOGS fake Transfer logs over FLOOD_BLOCKS blocks,
 * also into 20 open payment addresses of another merchant, as test/sim/attacks.test.ts does once.
 */
async function strangerPhase(sim: Sim, app: SimApp, rounds: number): Promise<NonNullable<MainnetReport['strangers']>> {
  const victim = await openShop(sim, app.t);
  const dusted = await openShop(sim, app.t);
  const targets: Address[] = [];
  for (let i = 0; i < DUST_ADDRESSES; i++) targets.push((await openReceipt(app.t, dusted, `dust-${i}`, 1)).payTo);
  const targeted = await openShop(sim, app.t);
  const floodTargets: Address[] = [];
  for (let i = 0; i < 20; i++) floodTargets.push((await openReceipt(app.t, targeted, `targeted-${i}`, 3)).payTo);
  await waitFor(
    async () => {
      const [left] = await app.t.deps.database.db
        .select({ n: count() })
        .from(receipts)
        .where(and(inArray(receipts.wallet, [dusted.wallet.toLowerCase(), targeted.wallet.toLowerCase()]), isNull(receipts.earlyMoneyCheckedAt)));
      return left!.n === 0 ? true : undefined;
    },
    SETTLE_MS,
    'the early-money look at every address of the strangers\' targets',
    500,
  );
  const dust = await strangerRounds(sim, app, victim, 'dust', rounds, async () => {
    await sim.scatter(targets, 1n);
    return { done: Promise.resolve() };
  });
  const flood = await strangerRounds(sim, app, victim, 'flood', rounds, async () => {
    const done = sim.flood(floodTargets, FLOOD_LOGS, FLOOD_BLOCKS);
    await sim.waitForBlock((await sim.node.head()) + 1n);
    return { done };
  });
  return { dust, flood };
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
    `| the chain's blocks during the payments: gap p50 / max, gaps over 3 s | ${n(r.blockGapsMs.p50 / 1000, 1)} / ${n(r.blockGapsMs.max / 1000, 1)} s, ${r.blockGapsMs.over3s} of ${r.blockGapsMs.blocks} | 2 s |`,
    `| idle RPC calls per day | ${n(r.idle.callsPerDay)} | |`,
    `| idle compute units per day | ${n(r.idle.computeUnitsPerDay)} | ≤ 5,000,000 |`,
    `| idle MB of answers per day | ${n(r.idle.mbPerDay, 1)} | |`,
    `| RPC calls per payment (over idle) | ${n(r.payments.callsPerPayment, 1)} | |`,
    `| compute units per payment (over idle) | ${n(r.payments.computeUnitsPerPayment)} | ≤ 200 |`,
    `| kB of answers per payment (over idle) | ${n(r.payments.kbPerPayment, 1)} | |`,
    `| calls refused by the rate limit, idle / payments | ${r.idle.rateLimitedCalls} / ${r.payments.rateLimitedCalls} | |`,
    ...(r.strangers === null
      ? []
      : [
          ...strangerRows(`dust to ${DUST_ADDRESSES} addresses`, r.strangers.dust, 2, n),
          ...strangerRows(`${n(FLOOD_LOGS)} fake Transfer logs`, r.strangers.flood, 10, n),
        ]),
    '',
    `Idle calls by method over ${n(r.idle.seconds)} s: ${Object.entries(r.idle.methods).map(([m, c]) => `${m} ${c}`).join(', ')}`,
    '',
    `Calls per payment by method (over idle): ${perPaymentByMethod(r)
      .map(([m, c]) => `${m} ${n(c, 2)}`)
      .join(', ')}`,
    '',
  ].join('\n');
}

function strangerRows(act: string, d: StrangerDelay, boundSec: number, n: (x: number, d?: number) => string): string[] {
  const secs = (xs: number[]) => xs.map((ms) => n(ms / 1000, 1)).join(', ');
  return [
    `| ${act}: delay of a payment, p50 of ${d.rounds} | ${n(d.delayP50Ms / 1000, 1)} s | ≤ ${boundSec} s |`,
    `| payments alone / with ${act}, block → completed | ${secs(d.aloneMs)} / ${secs(d.withActMs)} s | |`,
  ];
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
  const attackRounds = Number(env.BENCH_MAINNET_ATTACK_ROUNDS?.trim() || (quick ? 2 : 5));
  if (!Number.isInteger(idleSec) || idleSec < 10 || idleSec > 3600) {
    console.error('BENCH_MAINNET_IDLE_SEC must be whole seconds from 10 to 3600');
    return 1;
  }
  if (!Number.isInteger(count) || count < 2 || count > 500) {
    console.error('BENCH_MAINNET_PAYMENTS must be a whole number from 2 to 500');
    return 1;
  }
  if (!Number.isInteger(attackRounds) || attackRounds < 0 || attackRounds > 50) {
    console.error('BENCH_MAINNET_ATTACK_ROUNDS must be a whole number from 0 to 50');
    return 1;
  }
  console.log(`\nMainnet-shaped simulation: ${WARMUP_SEC} s warm-up, ${idleSec} s idle, ${count} payments, ${attackRounds} rounds of each stranger's act`);
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
    const strangers = attackRounds === 0 ? null : await strangerPhase(sim, app, attackRounds);
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
      blockGapsMs: paid.blockGapsMs,
      completed: paid.samples.length,
      strangers,
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
