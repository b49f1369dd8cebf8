/**
 * The chain's JSON-RPC endpoint fails: a loopback proxy in front of the test's anvil answers 500s,
 * or stalls (never answers), or passes through. The app joins the dev chain through the proxy
 * (CHAIN=dev with RPC_URL, RPC_TIMEOUT_MS short). While the endpoint fails, the chain worker's
 * passes fail and back off, and a paid receipt stays where it is: not completed, not failed. Once
 * the endpoint answers again, the payment completes.
 */
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { Writable } from 'node:stream';
import { after, before, describe, test } from 'node:test';
import type { InjectOptions } from 'fastify';
import { pino } from 'pino';
import { createWalletClient, erc20Abi, http as viemHttp, type Hex } from 'viem';
import { buildApp } from '../src/app.ts';
import { devAccount } from '../src/chain/dev-accounts.ts';
import { startChain, type ChainDeps } from '../src/chain/client.ts';
import { loadConfig } from '../src/config.ts';
import { createDeps, type Deps } from '../src/deps.ts';
import { createSubscription } from '../src/gateway/subscriptions.ts';
import { freshPostgresDatabase, holdToContract, type Res, type TestApp } from './helpers/app.ts';
import { admin, signIn } from './helpers/session.ts';
import { PLATFORM, startTestChain, type TestChain } from './chain/helpers.ts';
import { until } from './helpers/wait.ts';

type Mode = 'pass' | 'error' | 'stall';

/** A JSON-RPC proxy that can be told to fail. */
class FaultyRpc {
  mode: Mode = 'pass';
  readonly seen: { at: number; mode: Mode }[] = [];
  private readonly stalled = new Set<ServerResponse>();
  private server: Server | undefined;

  constructor(private readonly upstream: string) {}

  async listen(): Promise<string> {
    this.server = createServer((req, res) => void this.handle(req, res));
    await new Promise<void>((r) => this.server!.listen(0, '127.0.0.1', r));
    return `http://127.0.0.1:${(this.server.address() as { port: number }).port}`;
  }

  set(mode: Mode): void {
    this.mode = mode;
    if (mode !== 'stall') for (const res of this.stalled) res.destroy();
    this.stalled.clear();
  }

  private async handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const chunks: Buffer[] = [];
    for await (const c of req) chunks.push(c as Buffer);
    const mode = this.mode;
    this.seen.push({ at: Date.now(), mode });
    if (mode === 'error') {
      res.writeHead(500, { 'content-type': 'text/plain' }).end('upstream exploded');
      return;
    }
    if (mode === 'stall') {
      this.stalled.add(res);
      return;
    }
    const upstream = await fetch(this.upstream, { method: 'POST', headers: { 'content-type': 'application/json' }, body: Buffer.concat(chunks) });
    res.writeHead(upstream.status, { 'content-type': 'application/json' }).end(await upstream.text());
  }

  async close(): Promise<void> {
    this.set('pass');
    this.server?.closeAllConnections();
    await new Promise<void>((r) => (this.server ? this.server.close(() => r()) : r()));
  }
}

interface LogLine {
  msg: string;
  time: number;
  failures?: number;
  retryInMs?: number;
}

let tc: TestChain;
let rpc: FaultyRpc;
let chain: ChainDeps;
let deps: Deps;
let t: TestApp;
const logs: LogLine[] = [];
const cleanups: (() => Promise<void>)[] = [];

before(async () => {
  tc = await startTestChain();
  rpc = new FaultyRpc(tc.chain.rpcUrl);
  const rpcUrl = await rpc.listen();
  const dataDir = mkdtempSync(path.join(tmpdir(), 'splitline-rpc-'));
  cleanups.push(async () => rmSync(dataDir, { recursive: true, force: true }));
  const fresh = process.env.DATABASE_URL ? await freshPostgresDatabase(process.env.DATABASE_URL) : undefined;
  if (fresh) cleanups.push(() => fresh.drop());
  const config = loadConfig({
    DATA_DIR: dataDir,
    SITE_URL: 'http://pay.test',
    PLATFORM_RECIPIENT_ADDRESS: PLATFORM,
    CHAIN: 'dev',
    RPC_URL: rpcUrl,
    USDC_ADDRESS: tc.chain.usdc.address,
    RPC_TIMEOUT_MS: '1000',
    CONFIRMATIONS: '1',
    ...(fresh ? { DATABASE_URL: fresh.url } : {}),
  });
  const sink = new Writable({
    write(chunk: Buffer, _enc, done) {
      for (const line of chunk.toString('utf8').split('\n')) if (line.startsWith('{')) logs.push(JSON.parse(line) as LogLine);
      done();
    },
  });
  // Debug: the worker logs every failed pass, the repeats of a run at debug (src/workers/leased-loop.ts).
  const logger = pino({ level: 'debug' }, sink);
  // The option under test: CHAIN=dev with RPC_URL joins the proxy's chain instead of starting one.
  chain = await startChain({ config, logger });
  deps = await createDeps(config, { logger, pgliteDir: 'memory://', chain });
  const app = await buildApp(deps);
  await app.ready();
  holdToContract(app);
  t = {
    app,
    deps,
    config,
    key: async (wallet, opts = {}) =>
      (await createSubscription(deps.database.db, { wallet, scopes: opts.scopes, rateLimitPerMinute: opts.rateLimitPerMinute ?? 100_000 })).primaryKey,
    async call(key, method, url, body, headers = {}): Promise<Res> {
      const res = await app.inject({
        method,
        url,
        headers: { ...(key === null ? {} : { 'ocp-apim-subscription-key': key }), ...headers },
        ...(body === undefined ? {} : { payload: body as InjectOptions['payload'] }),
      });
      const json = (res.headers['content-type'] ?? '').toString().includes('json') && res.body !== '';
      return { status: res.statusCode, body: json ? res.json() : res.body, headers: res.headers };
    },
    async close() {
      await app.close();
      await deps.close();
    },
  };
  deps.startWorkers();
});

after(async () => {
  await t?.close();
  await chain?.close();
  await rpc?.close();
  await tc?.close();
  for (const c of cleanups.reverse()) await c();
});

const failedPasses = (since: number) => logs.filter((l) => l.msg === 'chain worker pass failed' && l.time >= since);

describe('an RPC endpoint that errors or stalls', { timeout: 150_000 }, () => {
  test('verification backs off, leaves the receipt alone, and completes once the endpoint recovers', async () => {
    const s = await signIn(t);
    const deployed = await admin(t, s, 'POST', '/api/split/deploy', {
      recipients: [
        { address: s.wallet, sharesBps: 9950 },
        { address: PLATFORM, sharesBps: 50 },
      ],
    });
    assert.equal(deployed.status, 200, JSON.stringify(deployed.body));
    const key = await t.key(s.wallet);
    const buyer = createWalletClient({ chain: tc.chain.publicClient.chain, transport: viemHttp(tc.chain.rpcUrl), account: devAccount(0) });
    const pay = async (id: string): Promise<{ search: string; hash: Hex }> => {
      const created = await t.call(key, 'POST', '/api/receipts', { id, lineItems: [{ label: 'Tea', priceUsd: 2.5 }], totalUsd: 2.5 });
      const search = new URL(created.body.paymentUrl).search;
      const { payment } = (await t.call(null, 'GET', `/api/pay/${id}${search}`)).body;
      // The buyer's wallet talks to the node directly; only the service's endpoint is faulty.
      const hash = await buyer.writeContract({ address: payment.tokenAddress, abi: erc20Abi, functionName: 'transfer', args: [payment.payTo, BigInt(payment.due)] });
      await tc.chain.publicClient.waitForTransactionReceipt({ hash });
      return { search, hash };
    };
    const history = async (id: string) =>
      ((await t.call(key, 'GET', `/api/receipts/${id}`)).body.statusHistory as { status: string }[]).map((h) => h.status);
    const completed = (id: string) =>
      until(async () => (await history(id)).at(-1) === 'completed', 40_000, `${id} to complete`);

    // Healthy endpoint: a payment completes.
    const first = await pay('rpc-ok');
    assert.equal((await t.call(null, 'POST', `/api/pay/rpc-ok/transaction${first.search}`, { transactionHash: first.hash })).status, 202);
    await completed('rpc-ok');

    // 500s: a receipt paid once the service's endpoint fails stays put while every pass fails and backs off.
    rpc.set('error');
    const errorFrom = Date.now();
    const paid = await pay('rpc-fault');
    assert.equal((await t.call(null, 'POST', `/api/pay/rpc-fault/transaction${paid.search}`, { transactionHash: paid.hash })).status, 202);
    // Until six passes have failed: backoffs of 200, 400, 800, 1600 and 3200 ms between them.
    await until(() => failedPasses(errorFrom).length >= 6, 45_000, 'six failed passes');
    const errorMs = Date.now() - errorFrom;
    const errors = failedPasses(errorFrom);
    const gaps = errors.slice(1).map((l, i) => l.time - errors[i]!.time);
    // Each failed pass announces the back-off before the next, which doubles per failure from the
    // dev chain's 100 ms base: 200, 400, 800, 1600, 3200 ms and on, growing by well over two seconds.
    const backoffs = errors.map((l) => l.retryInMs!);
    assert.deepEqual(backoffs, backoffs.map((_, i) => backoffs[0]! * 2 ** i), `each failure doubles the back-off: ${backoffs.join(', ')} ms`);
    assert.ok(backoffs.at(-1)! - backoffs[0]! >= 2000, `the back-off grows: ${backoffs.join(', ')} ms`);
    // Each gap is the back-off plus one failed pass (viem's own retries inside it: about a second
    // against a 500ing endpoint, more on a loaded machine). A real-time lower bound on purpose: the
    // worker must really wait out the back-off it announced, and load can only lengthen a gap.
    for (const [i, gap] of gaps.entries()) {
      assert.ok(gap >= backoffs[i]!, `failed pass ${i + 2} came ${gap} ms after the one before, inside its ${backoffs[i]} ms back-off; gaps ${gaps.join(', ')} ms`);
    }
    assert.ok(errors.at(-1)!.failures! >= errors.length, 'consecutive failures are counted');
    const requestsDuringErrors = rpc.seen.filter((r) => r.mode === 'error').length;
    assert.deepEqual(await history('rpc-fault'), ['pending'], 'not mined, not failed, not completed while the endpoint errors');

    // Stall: requests hang; the transport's timeout ends each, so passes still fail, and nothing moves.
    rpc.set('stall');
    const stallFrom = Date.now();
    // The next pass comes after the backoff (6.4 s by now); its calls then end by RPC_TIMEOUT_MS.
    await until(() => failedPasses(stallFrom).length >= 1, 40_000, 'a pass failed by timeout');
    const stallMs = Date.now() - stallFrom;
    assert.ok(rpc.seen.some((r) => r.mode === 'stall'), 'requests reached the stalled endpoint');
    assert.deepEqual(await history('rpc-fault'), ['pending'], 'still untouched while the endpoint stalls');
    const payment = await t.call(null, 'GET', `/api/pay/rpc-fault${paid.search}`);
    assert.equal(payment.body.status, 'pending');

    // Recovery: the same payment completes, through every step, once.
    rpc.set('pass');
    const recoveredAt = Date.now();
    await completed('rpc-fault');
    const recoveryMs = Date.now() - recoveredAt;
    assert.deepEqual(await history('rpc-fault'), ['pending', 'tx_mined', 'recipient_validated', 'completed']);
    console.log(
      `500s for ${Math.round(errorMs / 1000)} s: ${errors.length} failed passes, gaps ${gaps.join(', ')} ms, ${requestsDuringErrors} RPC requests; ` +
        `stall: the first pass failed by timeout ${stallMs} ms in (RPC_TIMEOUT_MS 1000); completed ${recoveryMs} ms after recovery`,
    );
  });
});
