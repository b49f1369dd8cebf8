/**
 * The bench's results: a table per route next to the baseline, the issue's targets marked PASS
 * or MISS, and the same written as JSON and markdown under bench/results/.
 */
import { mkdirSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { ROOT } from '../scripts/service-launcher.ts';
import type { Measured } from './load.ts';
import type { RouteId } from './scenarios.ts';
import type { Machine } from './bench-run.ts';

/** One route's outcome as measured, before it is compared with the baseline. */
export type RouteRun =
  | ({ id: RouteId; route: string; status: 'measured'; peakRssMb: number } & Measured)
  | { id: RouteId; route: string; status: 'skipped' | 'failed'; reason: string };

export type RouteResult =
  | (Extract<RouteRun, { status: 'measured' }> & { ratioToBaseline: number })
  | Exclude<RouteRun, { status: 'measured' }>;

/**
 * The baseline is measured before the routes and again after them: the two tell whether the
 * machine's capacity drifted during the run, and their mean is what ratios compare with.
 */
export interface Baseline {
  reqPerSec: number;
  before: Measured;
  after: Measured;
}

export function compareWithBaseline(runs: RouteRun[], baseline: Baseline): RouteResult[] {
  return runs.map((r) => (r.status === 'measured' ? { ...r, ratioToBaseline: r.reqPerSec / baseline.reqPerSec } : r));
}

export interface Report {
  generatedAt: string;
  database: 'postgres' | 'pglite';
  databaseDescription: string;
  rateLimits: 'redis' | 'memory';
  /** Load averages over one minute: other work on the machine skews every figure. */
  machine: Machine;
  /** `routes`: the BENCH_ROUTES of a run of some routes only. */
  settings: { connections: number; durationSec: number; warmupSec: number; quick: boolean; routes?: string[] };
  data: { receipts: number; otherMerchantsReceipts: number; users: number };
  baseline: Baseline;
  routes: RouteResult[];
  /** The service's resident memory after start-up, before any load. */
  idleRssMb: number;
  peakRssMb: number;
  targets: Target[];
  /** Routes that answered anything but their expected status, or failed outright. */
  failures: string[];
}

export interface Target {
  target: string;
  measured: string;
  result: 'PASS' | 'MISS' | 'n/a';
  note?: string;
}

const FULL_RECEIPTS = 100_000;
const FULL_USERS = 50_000;

type Measure = RouteResult & { status: 'measured' };

function measured(routes: RouteResult[], id: RouteId): Measure | undefined {
  const r = routes.find((x) => x.id === id);
  return r?.status === 'measured' ? r : undefined;
}

/** The targets from the issue. They are set for PostgreSQL with 50 connections. */
export function evaluateTargets(r: Pick<Report, 'database' | 'data' | 'routes' | 'peakRssMb'>): Target[] {
  const reference = r.database === 'postgres' ? [] : ['targets are set for PostgreSQL; shown for reference'];
  const judge = (target: string, value: number | undefined, cmp: '>=' | '<=' | '<', limit: number, unit: string, dataNote?: string): Target => {
    if (value === undefined) return { target, measured: '-', result: 'n/a', note: 'route not measured' };
    const pass = cmp === '>=' ? value >= limit : cmp === '<=' ? value <= limit : value < limit;
    const note = [...reference, ...(dataNote === undefined ? [] : [dataNote])].join('; ');
    return { target, measured: `${value.toFixed(unit === 'MB' ? 0 : 1)} ${unit}`, result: pass ? 'PASS' : 'MISS', ...(note ? { note } : {}) };
  };
  const smaller = (what: string, have: number, full: number) =>
    have < full ? `smaller data set: ${have.toLocaleString('en-US')} ${what}` : undefined;
  const read = measured(r.routes, 'receiptRead');
  const create = measured(r.routes, 'receiptCreate');
  const order = measured(r.routes, 'orderCreate');
  const contended = measured(r.routes, 'orderCreateContended');
  return [
    judge('receipt read >= 35% of baseline req/s', read && read.ratioToBaseline * 100, '>=', 35, '%'),
    judge('receipt read p99 <= 20 ms', read?.p99Ms, '<=', 20, 'ms'),
    judge('receipt creation >= 15% of baseline req/s', create && create.ratioToBaseline * 100, '>=', 15, '%'),
    judge('list of 100 receipts p99 <= 50 ms', measured(r.routes, 'receiptList')?.p99Ms, '<=', 50, 'ms', smaller('receipts', r.data.receipts, FULL_RECEIPTS)),
    judge('users search p99 <= 50 ms', measured(r.routes, 'userSearch')?.p99Ms, '<=', 50, 'ms', smaller('users', r.data.users, FULL_USERS)),
    judge('order creation >= 10% of baseline req/s', order && order.ratioToBaseline * 100, '>=', 10, '%'),
    judge('order creation p99 <= 50 ms', order?.p99Ms, '<=', 50, 'ms'),
    judge('orders of one limited sku >= 5% of baseline req/s', contended && contended.ratioToBaseline * 100, '>=', 5, '%'),
    judge('server RSS < 300 MB', r.peakRssMb, '<', 300, 'MB'),
  ];
}

const num = (n: number, digits = 0) => n.toLocaleString('en-US', { minimumFractionDigits: digits, maximumFractionDigits: digits });

export function markdown(r: Report): string {
  const lines: string[] = [];
  lines.push(`## Splitline bench: ${r.database === 'postgres' ? 'PostgreSQL' : 'PGlite'}`);
  lines.push('');
  lines.push(
    `${r.generatedAt.slice(0, 16).replace('T', ' ')} UTC · ${r.databaseDescription} · rate limits ${r.rateLimits === 'redis' ? 'in Redis' : 'in memory'} · ` +
      `${r.settings.connections} connections · ${r.settings.durationSec} s per route after ${r.settings.warmupSec} s warm-up ` +
      `(and the read routes first, unmeasured, on the fresh service) · ` +
      `node ${r.machine.node} on ${r.machine.cpus} CPUs (${r.machine.cpuModel}), load generator on the same machine`,
  );
  lines.push('');
  // At the end the bench's own load counts too, so only the start tells of other work.
  if (r.machine.loadAverageAtStart > r.machine.cpus) {
    lines.push(`**The machine was busy with other work** (load average ${num(r.machine.loadAverageAtStart, 1)} on ${r.machine.cpus} CPUs at the start): every figure is unreliable.`);
    lines.push('');
  }
  lines.push(
    `Data: ${num(r.data.receipts)} receipts for the benched merchant, ${num(r.data.otherMerchantsReceipts)} for other merchants, ${num(r.data.users)} users.`,
  );
  lines.push('');
  lines.push('| route | req/s | p50 ms | p99 ms | vs baseline | non-2xx | timeouts | peak RSS MB |');
  lines.push('|---|---:|---:|---:|---:|---:|---:|---:|');
  for (const [when, b] of [['before the routes', r.baseline.before], ['after the routes', r.baseline.after]] as const) {
    lines.push(
      `| bare node:http baseline, ${when} | ${num(b.reqPerSec)} | ${num(b.p50Ms)} | ${num(b.p99Ms)} | ` +
        `${num((100 * b.reqPerSec) / r.baseline.reqPerSec, 1)}% | ${num(b.non2xx)} | ${num(b.timeouts)} | |`,
    );
  }
  for (const x of r.routes) {
    if (x.status === 'measured') {
      const flag = x.unexpected + x.errors + x.timeouts > 0 || x.requests === 0 ? ' ⚠' : '';
      lines.push(
        `| \`${x.route}\`${flag} | ${num(x.reqPerSec)} | ${num(x.p50Ms)} | ${num(x.p99Ms)} | ${num(x.ratioToBaseline * 100, 1)}% | ` +
          `${num(x.non2xx)} | ${num(x.timeouts)} | ${num(x.peakRssMb)} |`,
      );
    } else {
      lines.push(`| \`${x.route}\` | ${x.status}: ${x.reason} | | | | | | |`);
    }
  }
  lines.push('');
  lines.push(`"vs baseline" compares with the mean of the two baseline runs, ${num(r.baseline.reqPerSec)} req/s.`);
  lines.push(`Server RSS: ${num(r.idleRssMb)} MB idle after start-up, ${num(r.peakRssMb)} MB at the peak under load.`);
  lines.push('');
  lines.push('| target (from the issue) | measured | result |');
  lines.push('|---|---:|---|');
  for (const t of r.targets) lines.push(`| ${t.target} | ${t.measured} | ${t.result}${t.note ? ` (${t.note})` : ''} |`);
  if (r.failures.length > 0) {
    lines.push('');
    lines.push('**The bench found errors:**');
    for (const f of r.failures) lines.push(`- ${f}`);
  }
  lines.push('');
  return lines.join('\n');
}

export function writeResults(r: Report): { json: string; md: string } {
  const dir = path.join(ROOT, 'bench', 'results');
  mkdirSync(dir, { recursive: true });
  // A quick smoke run, or a run of some routes only, must not overwrite the figures the README quotes.
  const routes = r.settings.routes === undefined ? '' : `-${[...r.settings.routes].sort().join('-')}`;
  const base = `${r.database}${routes}-${r.settings.quick ? 'quick' : 'latest'}`;
  const json = path.join(dir, `${base}.json`);
  const md = path.join(dir, `${base}.md`);
  writeFileSync(json, JSON.stringify(r, null, 2) + '\n');
  writeFileSync(md, markdown(r));
  return { json, md };
}

