/**
 * The service on the simulation, as the worker's end-to-end tests use it: the real app (in
 * process, its chain joined through the provider proxy, its workers running), merchants with a
 * deployed split, receipts, and buyers paying them straight on the node as wallets do.
 */
import assert from 'node:assert/strict';
import { after, before, type TestContext } from 'node:test';
import { erc20Abi, type Address, type Hex } from 'viem';
import type { ChainDeps } from '../../src/chain/client.ts';
import { startTestApp, type TestApp } from '../helpers/app.ts';
import { admin, signIn, type Session } from '../helpers/session.ts';
import { waitFor } from '../helpers/wait.ts';
import { joinSim, PLAIN_PROVIDER, startSim, type ProviderBehaviour, type Sim } from './helpers.ts';

export const PLATFORM = '0x000000000000000000000000000000000000beef';

export interface SimApp {
  t: TestApp;
  chain: ChainDeps;
  close(): Promise<void>;
}

/** The app on the simulation with CONFIRMATIONS=3 (Base's default here), its workers started. */
export async function startSimApp(sim: Sim, env: Record<string, string> = {}): Promise<SimApp> {
  const full = { CONFIRMATIONS: '3', PLATFORM_RECIPIENT_ADDRESS: PLATFORM, WEBHOOK_ALLOW_PRIVATE: 'true', ...sim.env(), ...env };
  // Joining reads the token and the factory: done on a quiet provider, as a deployment's first start is.
  const behaviour = sim.proxy.behaviour();
  sim.proxy.configure(PLAIN_PROVIDER);
  const chain = await joinSim(sim, full);
  const t = await startTestApp(full, { chain });
  sim.proxy.configure(behaviour);
  return {
    t,
    chain,
    async close() {
      await t.close();
      await chain.close();
    },
  };
}

/**
 * A test file's simulation and the app on it, its workers running: started before the file's
 * tests (handed to `started`) and stopped after them. `started` runs inside the same `before` hook:
 * node 20 runs a second top-level `before` as soon as it is registered, without waiting for this
 * one, so a file's own set-up belongs in `started`.
 */
export function useSimApp(started: (s: { sim: Sim; app: SimApp }) => unknown, env: Record<string, string> = {}): void {
  let sim: Sim | undefined;
  let app: SimApp | undefined;
  before(async () => {
    sim = await startSim();
    app = await startSimApp(sim, env);
    app.t.deps.startWorkers();
    await started({ sim, app });
  });
  after(async () => {
    await app?.close();
    await sim?.stop();
  });
}

export interface Shop {
  s: Session;
  wallet: string;
  key: string;
  split: Address;
}

/**
 * A merchant with a deployed split (99.5% theirs, 0.5% the platform's). Deployed on a quiet provider,
 * then the provider's behaviours are restored: the tests are about payments, not split set-up.
 */
export async function openShop(sim: Sim, t: TestApp, behaviour: ProviderBehaviour = sim.proxy.behaviour()): Promise<Shop> {
  sim.proxy.configure(PLAIN_PROVIDER);
  try {
    const s = await signIn(t);
    const res = await admin(t, s, 'POST', '/api/split/deploy', {
      recipients: [
        { address: s.wallet, sharesBps: 9950 },
        { address: PLATFORM, sharesBps: 50 },
      ],
    });
    assert.equal(res.status, 200, JSON.stringify(res.body));
    return { s, wallet: s.wallet, key: await t.key(s.wallet), split: res.body.split.address };
  } finally {
    sim.proxy.configure(behaviour);
  }
}

export interface OpenReceipt {
  id: string;
  payTo: Address;
  /** The payment page's API path with its signed query, as the buyer's browser opens it. */
  page: string;
  /** What the receipt asks for, in token units. */
  amount: bigint;
}

export async function openReceipt(t: TestApp, shop: Shop, id: string, totalUsd: number, extra: Record<string, unknown> = {}): Promise<OpenReceipt> {
  const res = await t.call(shop.key, 'POST', '/api/receipts', { id, lineItems: [{ label: 'Item', priceUsd: totalUsd }], totalUsd, ...extra });
  assert.equal(res.status, 201, JSON.stringify(res.body));
  const search = new URL(res.body.paymentUrl).search;
  const path = `/api/pay/${id}${search}`;
  const page = await t.call(null, 'GET', path);
  assert.equal(page.status, 200, JSON.stringify(page.body));
  return { id, payTo: page.body.payment.payTo, page: path, amount: BigInt(page.body.payment.amount) };
}

/** A buyer (dev account 0-8) pays `amount` of the test USDC to `to`, straight on the node; resolves with the mined transfer. */
export async function pay(sim: Sim, buyer: number, to: Address, amount: bigint): Promise<{ hash: Hex; blockNumber: bigint; minedAt: number }> {
  const hash = await sim.wallet(buyer).writeContract({ address: sim.usdc, abi: erc20Abi, functionName: 'transfer', args: [to, amount], gas: 100_000n });
  const mined = await sim.publicClient.waitForTransactionReceipt({ hash });
  assert.equal(mined.status, 'success');
  return { hash, blockNumber: mined.blockNumber, minedAt: Date.now() };
}

export async function detail(t: TestApp, shop: Shop, id: string) {
  const res = await t.call(shop.key, 'GET', `/api/receipts/${id}`);
  assert.equal(res.status, 200, JSON.stringify(res.body));
  return res.body;
}

/**
 * Waits for a receipt to reach `status` (and `exception`, when given); resolves with its detail and
 * when it was seen. A timeout says where the receipt stood.
 */
export async function reaches(t: TestApp, shop: Shop, id: string, status: string, timeoutMs: number, exception?: string | null) {
  let last: { status: string; exception: string | null; amountPaid: string; statusHistory: { status: string }[] } | undefined;
  try {
    return await waitFor(
      async () => {
        const d = await detail(t, shop, id);
        last = d;
        return d.status === status && (exception === undefined || d.exception === exception) ? { ...d, seenAt: Date.now() } : undefined;
      },
      timeoutMs,
      `${id} to be ${status}${exception === undefined ? '' : ` (${exception})`}`,
      200,
    );
  } catch (err) {
    const where = last === undefined ? 'never read' : `${last.status} (${last.exception}), paid ${last.amountPaid}, history ${last.statusHistory.map((h) => h.status).join(' > ')}`;
    throw new Error(`${(err as Error).message}; it stood at ${where}`, { cause: err });
  }
}

export const tokenBalance = (sim: Sim, of: Address) => sim.publicClient.readContract({ address: sim.usdc, abi: erc20Abi, functionName: 'balanceOf', args: [of] });

/** How long a payment took: ms from its block to completed, and each status on the way. */
export interface PaymentTiming {
  ms: number;
  /** Each status with its ms after the payment's block, for the message of a failing bound. */
  timeline: string;
}

/** Pays a new receipt of `shop` from buyer 0 and times it. */
export async function payAndTime(sim: Sim, t: TestApp, shop: Shop, id: string, usd: number, timeoutMs: number): Promise<PaymentTiming> {
  const r = await openReceipt(t, shop, id, usd);
  const paid = await pay(sim, 0, r.payTo, r.amount);
  const block = await sim.publicClient.getBlock({ blockNumber: paid.blockNumber });
  const done = await reaches(t, shop, id, 'completed', timeoutMs);
  const blockAt = Number(block.timestamp) * 1000;
  const history = done.statusHistory as { status: string; at: number }[];
  return {
    ms: history.find((h) => h.status === 'completed')!.at - blockAt,
    timeline: `${id} in block ${paid.blockNumber}: ${history.map((h) => `${h.status} +${h.at - blockAt} ms`).join(', ')}`,
  };
}

/**
 * A stranger's attack measured as the merchant feels it: the app on a new simulation, its workers
 * running, a victim merchant and the victim's payment timed before the attack (the baseline).
 */
export interface VictimRun {
  sim: Sim;
  app: SimApp;
  victim: Shop;
  baseline: PaymentTiming;
  /** Pays and times another receipt of the victim. */
  payAndTime(id: string, usd: number): Promise<PaymentTiming>;
  /**
   * Asserts that `after` took at most `boundMs` longer than the baseline, naming both timelines;
   * the test's output says the delay either way, so a run shows how much room the bound left.
   */
  assertDelayAtMost(t: TestContext, after: PaymentTiming, boundMs: number, what: string): void;
  close(): Promise<void>;
}

export async function startVictimRun(settleMs = 120_000): Promise<VictimRun> {
  const sim = await startSim();
  const app = await startSimApp(sim);
  app.t.deps.startWorkers();
  const victim = await openShop(sim, app.t);
  const time = (id: string, usd: number) => payAndTime(sim, app.t, victim, id, usd, settleMs);
  const baseline = await time('baseline', 4.2);
  return {
    sim,
    app,
    victim,
    baseline,
    payAndTime: time,
    assertDelayAtMost(t, after, boundMs, what) {
      const message = `block → completed ${after.ms} ms ${what}, ${baseline.ms} ms before (${after.timeline}; ${baseline.timeline})`;
      t.diagnostic(`delay ${after.ms - baseline.ms} ms (bound ${boundMs} ms): ${message}`);
      assert.ok(after.ms - baseline.ms <= boundMs, message);
    },
    async close() {
      await app.close();
      await sim.stop();
    },
  };
}
