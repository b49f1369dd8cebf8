/**
 * The public tracking route's answer time for an existing receipt and for an unknown one
 * (POST /api/receipts/status needs no credential): if they differed, anyone could count a
 * merchant's receipts by timing it. Starts the service as a child process (the embedded database,
 * or PostgreSQL and Redis with DATABASE_URL and REDIS_URL), creates receipts with a key, then
 * sends the status for a known and an unknown receipt in turn, one request at a time over HTTP,
 * and prints the medians and quartiles of each. A measurement for the README, never a test.
 *
 * Run with `tsx bench/status-timing.ts` (STATUS_TIMING_ROUNDS, 2000 by default).
 */
import { mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { generatePrivateKey, privateKeyToAccount } from 'viem/accounts';
import { launchService } from '../scripts/service-launcher.ts';
import { signIn } from './apk.ts';

const ROUNDS = Number(process.env.STATUS_TIMING_ROUNDS ?? 2000);
const RECEIPTS = 200;
const json = { 'content-type': 'application/json' };

const quantile = (sorted: number[], q: number) => sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))]!;

async function main(): Promise<void> {
  const work = mkdtempSync(path.join(os.tmpdir(), 'splitline-status-timing-'));
  const account = privateKeyToAccount(generatePrivateKey());
  const service = await launchService({
    name: 'Splitline (status timing)',
    env: {
      DATA_DIR: path.join(work, 'data'),
      LOG_LEVEL: 'warn',
      SUPERADMIN_WALLETS: account.address,
      PUBLIC_RATE_LIMIT_PER_MINUTE: '1000000',
      DATABASE_URL: process.env.DATABASE_URL,
      REDIS_URL: process.env.REDIS_URL,
    },
    ready: { healthPath: '/healthz' },
    timeoutMs: 120_000,
  });
  try {
    const base = service.base;
    const who = await signIn(base, account);
    const created = await fetch(`${base}/api/admin/subscriptions`, {
      method: 'POST',
      headers: { ...json, cookie: who.cookie, 'x-csrf-token': who.csrfToken },
      body: JSON.stringify({ name: 'status timing' }),
    });
    if (created.status !== 201) throw new Error(`subscription answered ${created.status}: ${await created.text()}`);
    const key = ((await created.json()) as { primaryKey: string }).primaryKey;
    const wallet = account.address.toLowerCase();
    for (let i = 0; i < RECEIPTS; i++) {
      const res = await fetch(`${base}/api/receipts`, {
        method: 'POST',
        headers: { ...json, 'ocp-apim-subscription-key': key },
        body: JSON.stringify({ id: `known-${i}`, lineItems: [{ label: 'Tea', priceUsd: 2 }], totalUsd: 2 }),
      });
      if (res.status !== 201) throw new Error(`receipt answered ${res.status}: ${await res.text()}`);
    }
    const statuses = ['link_opened', 'buyer_logged_in', 'checkout_initialized'] as const;
    const track = async (receiptId: string, i: number): Promise<number> => {
      const started = performance.now();
      const res = await fetch(`${base}/api/receipts/status`, {
        method: 'POST',
        headers: json,
        body: JSON.stringify({ receiptId, wallet, status: statuses[i % statuses.length] }),
      });
      await res.text();
      const ms = performance.now() - started;
      if (res.status !== 200) throw new Error(`status answered ${res.status}`);
      return ms;
    };
    const known: number[] = [];
    const unknown: number[] = [];
    for (let i = 0; i < 200; i++) await track(i % 2 === 0 ? `known-${i % RECEIPTS}` : `unknown-${i}`, i);
    for (let i = 0; i < ROUNDS; i++) {
      // In turn, so load from elsewhere on the machine falls on both alike.
      known.push(await track(`known-${i % RECEIPTS}`, i));
      unknown.push(await track(`unknown-${i}`, i));
    }
    const line = (name: string, all: number[]) => {
      const s = [...all].sort((a, b) => a - b);
      return `${name.padEnd(8)} median ${quantile(s, 0.5).toFixed(2)} ms  (p25 ${quantile(s, 0.25).toFixed(2)}, p75 ${quantile(s, 0.75).toFixed(2)}, p90 ${quantile(s, 0.9).toFixed(2)})`;
    };
    const database = process.env.DATABASE_URL ? 'PostgreSQL' : 'embedded';
    console.log(`POST /api/receipts/status, ${ROUNDS} requests each, ${database} database`);
    console.log(line('known', known));
    console.log(line('unknown', unknown));
  } finally {
    await service.stop();
    rmSync(work, { recursive: true, force: true });
  }
}

await main();
