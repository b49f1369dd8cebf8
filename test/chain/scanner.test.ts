/**
 * The chain worker's reading of the chain through a hosted provider (issue 23, DESIGN "A real
 * chain"), on the real dev chain: the service reaches anvil only through the simulation's provider
 * proxy (test/sim/proxy.ts: Infura's result limit, Alchemy's range limit, a lagging node), with a
 * small recorder in front of it that keeps every eth_getLogs filter and can answer HTTP 413 for a
 * body over a size. The worker is driven pass by pass. Buyers and strangers talk to anvil directly.
 */
import assert from 'node:assert/strict';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { after, before, beforeEach, describe, test } from 'node:test';
import { and, eq } from 'drizzle-orm';
import { createPublicClient, erc20Abi, http, HttpRequestError, LimitExceededRpcError, ResponseBodyTooLargeError, RpcRequestError, type Address, type Hex } from 'viem';
import { isRateLimited, isServerFailure } from '../../src/chain/lagging-nodes.ts';
import { devAccount } from '../../src/chain/dev-accounts.ts';
import type { ChainDeps } from '../../src/chain/client.ts';
import { computeUnits } from '../../src/chain/compute-units.ts';
import { paymentSplitterAbi } from '../../src/chain/split-contract.ts';
import { chainCursors, receipts, receiptTransfers } from '../../src/db/schema.ts';
import { refusal } from '../../src/payments/scanner.ts';
import { ChainWorker } from '../../src/payments/worker.ts';
import { admin, signIn } from '../helpers/session.ts';
import type { TestApp } from '../helpers/app.ts';
import { anvilClient, deployShop, devWallet, PLATFORM, receiptPayTo, startChainApp, startTestChain, testLogger, type Shop, type TestChain } from './helpers.ts';
import { PLAIN_PROVIDER, startProviderProxy, type ProviderProxy } from '../sim/proxy.ts';
import { simTrafficAbi, simTrafficBytecode } from '../sim/contracts.ts';

/** Records eth_getLogs filters and answers 413 for bodies over `maxBodyBytes`, in front of the provider. */
class Recorder {
  readonly filters: Record<string, unknown>[] = [];
  calls = 0;
  tooLarge = 0;
  maxBodyBytes = Infinity;
  /** The next `left` requests holding `method` are answered HTTP `status` (a 429 with Infura's body), unserved. */
  failing: { method: string; status: number; left: number } | undefined;
  /** Blocks (hex numbers) whose next header by number is answered null, as a node behind answers, that many times. */
  readonly lacking = new Map<string, number>();
  failed = 0;
  private server: Server | undefined;
  constructor(private readonly upstream: string) {}

  async listen(): Promise<string> {
    this.server = createServer((req, res) => {
      void (async () => {
        const chunks: Buffer[] = [];
        for await (const c of req) chunks.push(c as Buffer);
        const body = Buffer.concat(chunks).toString('utf8');
        const calls = ([] as { method: string; params?: unknown[] }[]).concat(JSON.parse(body));
        this.calls += calls.length;
        const fail = this.failing;
        if (fail !== undefined && fail.left > 0 && calls.some((c) => c.method === fail.method)) {
          fail.left--;
          this.failed++;
          if (fail.status === 429) {
            res.writeHead(429, { 'content-type': 'application/json' }).end(JSON.stringify({ jsonrpc: '2.0', id: null, error: { code: -32005, message: 'project ID request rate exceeded' } }));
          } else {
            res.writeHead(fail.status, { 'content-type': 'text/plain' }).end('upstream connect error or disconnect/reset before headers');
          }
          return;
        }
        const header = calls.length === 1 && calls[0]!.method === 'eth_getBlockByNumber' ? String(calls[0]!.params?.[0]) : undefined;
        const lacks = header === undefined ? 0 : (this.lacking.get(header) ?? 0);
        if (lacks > 0) {
          this.lacking.set(header!, lacks - 1);
          res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify({ jsonrpc: '2.0', id: (calls[0] as { id?: unknown }).id ?? null, result: null }));
          return;
        }
        for (const c of calls) if (c.method === 'eth_getLogs') this.filters.push((c.params?.[0] ?? {}) as Record<string, unknown>);
        const up = await fetch(this.upstream, { method: 'POST', headers: { 'content-type': 'application/json' }, body });
        const text = await up.text();
        if (calls.some((c) => c.method === 'eth_getLogs') && Buffer.byteLength(text) > this.maxBodyBytes) {
          this.tooLarge++;
          res.writeHead(413, { 'content-type': 'text/plain' }).end('Request Entity Too Large');
          return;
        }
        res.writeHead(up.status, { 'content-type': 'application/json' }).end(text);
      })().catch(() => res.destroy());
    });
    await new Promise<void>((r) => this.server!.listen(0, '127.0.0.1', r));
    return `http://127.0.0.1:${(this.server.address() as AddressInfo).port}`;
  }

  async close(): Promise<void> {
    this.server?.closeAllConnections();
    await new Promise<void>((r) => (this.server ? this.server.close(() => r()) : r()));
  }
}

let tc: TestChain;
let provider: ProviderProxy;
let recorder: Recorder;
let viaProxy: ChainDeps;
let t: TestApp;
let worker: ChainWorker;
/** Blocks read by hash at the head; deeper ones by range. Above the proxy's largest lag (3). */
const HORIZON = 4;
const CALLS_PER_PASS = 4;

before(async () => {
  tc = await startTestChain();
  provider = await startProviderProxy({ upstream: tc.chain.rpcUrl, behaviour: PLAIN_PROVIDER, seed: 23 });
  recorder = new Recorder(provider.url);
  const url = await recorder.listen();
  viaProxy = { ...tc.chain, publicClient: createPublicClient({ chain: tc.chain.publicClient.chain, transport: http(url, { retryCount: 2, retryDelay: 20 }) }) };
  t = await startChainApp(viaProxy, {
    CONFIRMATIONS: '1',
    PLATFORM_RECIPIENT_ADDRESS: PLATFORM,
    RPC_LAG_HORIZON_BLOCKS: String(HORIZON),
    RPC_LOGS_CALLS_PER_PASS: String(CALLS_PER_PASS),
  });
  worker = t.deps.chainWorker!;
  await worker.pass();
});
after(async () => {
  await t?.close();
  await recorder?.close();
  await provider?.close();
  await tc?.close();
});

const anvil = () => anvilClient(tc);
const wallet = (i: number) => devWallet(tc, i);
const usdc = () => tc.chain.usdc.address;

const shop = (): Promise<Shop> => deployShop(t);

const receipt = (sh: Shop, id: string, totalUsd: number, extra: Record<string, unknown> = {}): Promise<Hex> => receiptPayTo(t, sh, id, totalUsd, extra);

async function pay(from: number, to: Hex, amount: bigint, token: Address = usdc()): Promise<bigint> {
  const hash = await wallet(from).writeContract({ address: token, abi: erc20Abi, functionName: 'transfer', args: [to, amount] });
  return (await tc.chain.publicClient.waitForTransactionReceipt({ hash })).blockNumber;
}

async function detail(sh: Shop, id: string) {
  const res = await t.call(sh.key, 'GET', `/api/receipts/${id}`);
  assert.equal(res.status, 200);
  return { ...res.body, history: (res.body.statusHistory as { status: string }[]).map((h) => h.status) };
}

/** Passes until `done`, at most `max` of them; returns how many ran. */
async function passUntil(done: () => Promise<boolean>, max: number, what: string): Promise<number> {
  for (let i = 1; i <= max; i++) {
    await worker.pass();
    if (await done()) return i;
  }
  assert.fail(`${what}: not after ${max} passes`);
}

const completed = (sh: Shop, ids: string[]) => async () => {
  for (const id of ids) if ((await detail(sh, id)).status !== 'completed') return false;
  return true;
};

/** Every eth_getLogs since `from` named its contracts, and none of them is `stranger`. */
function assertFilteredSince(from: number, stranger?: string): void {
  const filters = recorder.filters.slice(from);
  assert.ok(filters.length > 0, 'the worker read logs');
  for (const f of filters) {
    const address = f.address as string[] | string | undefined;
    assert.ok(Array.isArray(address) && address.length > 0, `every eth_getLogs names its contracts: ${JSON.stringify(f)}`);
    assert.ok(address.includes(usdc().toLowerCase()), 'the token is among them');
    if (stranger !== undefined) assert.ok(!address.includes(stranger.toLowerCase()), 'a stranger never is');
  }
}

async function cursor(): Promise<bigint> {
  const [row] = await t.deps.database.db.select({ block: chainCursors.block }).from(chainCursors);
  return row!.block;
}

describe('reading the chain through a provider', () => {
  beforeEach(() => {
    provider.configure(PLAIN_PROVIDER);
    recorder.maxBodyBytes = Infinity;
  });

  test("a stranger's 48,000 fake Transfer logs are never read and delay nobody's payment", async () => {
    const sh = await shop();
    const payTo = await receipt(sh, 'flood-1', 5);
    const deployed = await wallet(7).deployContract({ abi: simTrafficAbi, bytecode: simTrafficBytecode() });
    const stranger = (await tc.chain.publicClient.waitForTransactionReceipt({ hash: deployed })).contractAddress!;
    provider.configure({ getLogsMaxResults: 10_000, getLogsMaxBlocks: 2_000 });
    recorder.maxBodyBytes = 10 * 1024 * 1024;
    const seen = recorder.filters.length;
    // 8 blocks of 6,000 fake transfers each into the receipt's own address, then the real payment.
    for (let i = 0; i < 8; i++) {
      const hash = await wallet(7).writeContract({ address: stranger, abi: simTrafficAbi, functionName: 'flood', args: [[payTo], 6_000n, 1n], gas: 25_000_000n });
      await tc.chain.publicClient.waitForTransactionReceipt({ hash });
    }
    await pay(2, payTo, 5_000_000n);
    await passUntil(completed(sh, ['flood-1']), 12, 'the payment after the flood completes');
    assert.equal((await detail(sh, 'flood-1')).amountPaid, '5000000', 'only the token counts');
    assertFilteredSince(seen, stranger);
    assert.equal(provider.stats().getLogsRefused.results + provider.stats().getLogsRefused.blocks + recorder.tooLarge, 0, 'nothing was refused: nothing large was asked');
    provider.configure(PLAIN_PROVIDER);
    recorder.maxBodyBytes = Infinity;
  });

  test('refused ranges (-32005, a range limit with its suggestion, HTTP 413) split down and never stall; catch-up is bounded per pass', async () => {
    const sh = await shop();
    const ids = ['split-1', 'split-2', 'split-3', 'split-4', 'split-5', 'split-6'];
    const addresses = await Promise.all(ids.map((id) => receipt(sh, id, 1)));
    // Payments in pairs over history the worker has not read, 30 blocks between the pairs.
    for (const [i, a] of addresses.entries()) {
      await pay(3, a, 1_000_000n);
      if (i % 2 === 1) await anvil().mine({ blocks: 30 });
    }
    // Two logs are over the result limit, and over the size limit (about 600 bytes a log).
    provider.configure({ getLogsMaxResults: 1, getLogsMaxBlocks: 16 });
    let getLogs = worker.scanner.rpcCalls.eth_getLogs ?? 0;
    const refused = { ...provider.stats().getLogsRefused };
    const passes = await passUntil(async () => {
      // Each pass keeps to its budget of eth_getLogs calls (and one more at the head).
      const made = (worker.scanner.rpcCalls.eth_getLogs ?? 0) - getLogs;
      getLogs = worker.scanner.rpcCalls.eth_getLogs ?? 0;
      assert.ok(made <= CALLS_PER_PASS, `a pass made ${made} eth_getLogs calls`);
      return completed(sh, ids)();
    }, 200, 'every payment in the refused history completes');
    assert.ok(passes > 3, `catch-up was spread over ${passes} passes`);
    const now = provider.stats().getLogsRefused;
    assert.ok(now.blocks > refused.blocks, 'the range limit was met');
    assert.ok(now.results > refused.results, 'the result limit was met');
    assert.ok(worker.scanner.rangeSize <= 16n, `the range size that worked is kept: ${worker.scanner.rangeSize}`);
    for (const id of ids) assert.equal((await detail(sh, id)).amountPaid, '1000000');

    // An answer over the transport's size: HTTP 413, split the same way.
    provider.configure(PLAIN_PROVIDER);
    recorder.maxBodyBytes = 1000;
    const big = ['big-1', 'big-2'];
    const bigAt = await Promise.all(big.map((id) => receipt(sh, id, 1)));
    for (const a of bigAt) await pay(3, a, 1_000_000n);
    await anvil().mine({ blocks: 20 });
    const tooLarge = recorder.tooLarge;
    await passUntil(completed(sh, big), 100, 'the payments behind an oversized answer complete');
    assert.ok(recorder.tooLarge > tooLarge, 'the size limit was met');
  });

  test('a block refused even alone is read again later, never skipped, and other receipts still expire meanwhile', async () => {
    const sh = await shop();
    const payTo = await receipt(sh, 'stuck-1', 2);
    await receipt(sh, 'expires-1', 2, { expiresInMinutes: 1 });
    await worker.pass();
    // Two transfers of the token in one block: with a one-result limit that block can never be read.
    await anvil().setAutomine(false);
    const h1 = await wallet(4).writeContract({ address: usdc(), abi: erc20Abi, functionName: 'transfer', args: [payTo, 1_000_000n] });
    const h2 = await wallet(5).writeContract({ address: usdc(), abi: erc20Abi, functionName: 'transfer', args: [payTo, 1_000_000n] });
    await anvil().mine({ blocks: 1 });
    await anvil().setAutomine(true);
    const block = (await tc.chain.publicClient.getTransactionReceipt({ hash: h1 })).blockNumber;
    assert.equal((await tc.chain.publicClient.getTransactionReceipt({ hash: h2 })).blockNumber, block);
    await anvil().mine({ blocks: 2 });
    provider.configure({ getLogsMaxResults: 1 });
    const later = Date.now() + 2 * 60_000;
    for (let i = 0; i < 3; i++) await worker.pass(later);
    assert.ok(worker.lastPass!.stopped?.includes(`block ${block}`), `the pass says where it stopped: ${worker.lastPass!.stopped}`);
    assert.equal(await cursor(), block - 1n, 'the refused block is not skipped');
    assert.equal((await detail(sh, 'stuck-1')).amountPaid, '0');
    const expired = await detail(sh, 'expires-1');
    assert.equal(expired.status, 'failed', 'expiry went on');
    provider.configure(PLAIN_PROVIDER);
    await passUntil(completed(sh, ['stuck-1']), 10, 'the block is read once the provider answers');
    assert.equal((await detail(sh, 'stuck-1')).amountPaid, '2000000');
  });

  test('a node 1-3 blocks behind on 40% of answers: no payment missed, no reorganisation, no withdrawal', async () => {
    const sh = await shop();
    const ids = Array.from({ length: 8 }, (_, i) => `lag-${i}`);
    const addresses = await Promise.all(ids.map((id) => receipt(sh, id, 1.5)));
    await worker.pass();
    provider.configure({ lag: { share: 0.4, minBlocks: 1, maxBlocks: 3 } });
    const reorganisations = worker.scanner.reorganisations;
    const lagged = provider.stats().lagged;
    for (const [i, a] of addresses.entries()) {
      await pay(6, a, 1_500_000n);
      if (i % 2 === 0) await anvil().mine({ blocks: 1 + (i % 3) });
      await worker.pass();
    }
    await anvil().mine({ blocks: 4 });
    await passUntil(completed(sh, ids), 60, 'every payment completes');
    assert.ok(provider.stats().lagged > lagged + 10, 'the lagging node answered often');
    assert.equal(worker.scanner.reorganisations, reorganisations, 'lag was never taken for a reorganisation');
    for (const id of ids) {
      const d = await detail(sh, id);
      assert.equal(d.amountPaid, '1500000');
      assert.deepEqual(d.history, ['pending', 'tx_mined', 'recipient_validated', 'completed'], `${id} never went back`);
    }
    provider.configure(PLAIN_PROVIDER);
  });

  test('with the head unchanged a pass makes one call; a new block costs a constant few', async () => {
    await anvil().mine({ blocks: 1 });
    await worker.pass();
    await worker.pass();
    const before = recorder.calls;
    const pass = await worker.pass();
    assert.equal(recorder.calls - before, 1, 'one call: the newest header');
    assert.equal(pass.rpcCalls, 1);
    await anvil().mine({ blocks: 1 });
    const one = recorder.calls;
    await worker.pass();
    assert.equal(recorder.calls - one, 2, 'a new block: its header and its logs by hash');
    const units = computeUnits({ eth_getBlockByNumber: 1, eth_getLogs: 1 });
    // Base: a block every 2 s, 43,200 a day.
    assert.ok(units * 43_200 <= 5_000_000, `idle at the head: ${units * 43_200} compute units a day`);
  });

  test('a 5xx on eth_getLogs is asked once more in the same pass; two in a row fail the pass; a rate limit ends the pass cleanly, unsplit and unrepeated', async () => {
    const sh = await shop();
    await worker.pass();
    const paid = (id: string) => async () => (await detail(sh, id)).amountPaid === '1000000';
    for (const [id, status] of [['passing-503', 503], ['passing-502', 502]] as const) {
      const payTo = await receipt(sh, id, 1);
      await worker.pass();
      await pay(3, payTo, 1_000_000n);
      recorder.failing = { method: 'eth_getLogs', status, left: 1 };
      const before = recorder.failed;
      const pass = await worker.pass();
      assert.equal(recorder.failed, before + 1, `the provider answered ${status} once`);
      assert.equal(pass.stopped, null, `the pass went on: ${pass.stopped}`);
      assert.ok(await paid(id)(), `HTTP ${status}: the payment was read in the same pass`);
    }
    // An outage (a failure, then another): the pass fails rather than ask on, and reads nothing.
    const outage = await receipt(sh, 'passing-outage', 1);
    await worker.pass();
    await pay(3, outage, 1_000_000n);
    recorder.failing = { method: 'eth_getLogs', status: 503, left: 2 };
    let before = recorder.failed;
    await assert.rejects(worker.pass(), /HTTP request failed/);
    assert.equal(recorder.failed, before + 2, 'asked twice, no more');
    assert.equal((await detail(sh, 'passing-outage')).amountPaid, '0');
    await passUntil(paid('passing-outage'), 2, 'the next pass reads the payment');
    // A rate limit: one call, no re-ask and no split into more calls; the pass ends cleanly and
    // the next one reads the block.
    const limited = await receipt(sh, 'rate-limited', 1);
    await worker.pass();
    await pay(3, limited, 1_000_000n);
    recorder.failing = { method: 'eth_getLogs', status: 429, left: 1 };
    before = recorder.failed;
    const logsBefore = recorder.filters.length;
    const pass = await worker.pass();
    assert.equal(recorder.failed, before + 1, 'the rate limit answered once');
    assert.equal(recorder.filters.length, logsBefore, 'no eth_getLogs was asked again or split after it');
    assert.match(pass.stopped ?? '', /rate limit/, 'the pass ended early, and said why');
    assert.equal((await detail(sh, 'rate-limited')).amountPaid, '0');
    await passUntil(paid('rate-limited'), 2, 'the next pass reads the payment');
    recorder.failing = undefined;
  });

  test('a node behind answers `latest` while a receipt waits: asked again in the same pass, and the payment is read in it', async () => {
    const sh = await shop();
    const payTo = await receipt(sh, 'stale-head', 1);
    await anvil().mine({ blocks: 3 });
    await worker.pass();
    await pay(3, payTo, 1_000_000n);
    const head = await tc.chain.publicClient.getBlockNumber({ cacheTime: 0 });
    // Only the pass's first header comes from a node three blocks behind: older than the head seen.
    provider.configure({ lag: { share: 1, minBlocks: 3, maxBlocks: 3, methods: ['eth_getBlockByNumber'], limit: 1 } });
    provider.resetStats();
    const pass = await worker.pass();
    assert.equal(provider.stats().laggedAnswers, 1, 'the first `latest` came from the node behind');
    assert.equal(pass.answeredHead, head, 'asked again, a node at the head answered');
    assert.equal(pass.head, head, 'the payment’s block was read');
    assert.equal((await detail(sh, 'stale-head')).amountPaid, '1000000', 'in the same pass');
  });

  test('while a receipt waits, a header a node behind lacks in a read of several new blocks is asked of another node: the pass reads them all', async () => {
    // A worker polling at a 2-second block time reads several new blocks of a busy chain with one
    // eth_getLogs, proven by their headers: the path where a null header used to end the pass.
    const w = new ChainWorker({ db: t.deps.database.db, chain: viaProxy, logger: testLogger(), confirmations: 1, platformRecipient: PLATFORM, blockTimeSeconds: 2, scanLimits: { horizon: BigInt(HORIZON), callsPerPass: CALLS_PER_PASS } });
    const sh = await shop();
    const payTo = await receipt(sh, 'lacking-header', 2);
    const head = async () => tc.chain.publicClient.getBlockNumber({ cacheTime: 0 });
    for (let i = 0; i < 20 && (w.lastPass?.head ?? -1n) < (await head()); i++) await w.pass();
    // A block with a transfer of the token, read pinned: the chain carries logs of the filter.
    await pay(3, payTo, 1_000_000n);
    await w.pass();
    // Two more blocks, the first a stranger's transfer of the token, the second the rest of the payment.
    const lacking = await pay(4, devAccount(5).address, 1n);
    const last = await pay(3, payTo, 1_000_000n);
    assert.equal(last, lacking + 1n);
    recorder.lacking.set(`0x${lacking.toString(16)}`, 1);
    const pass = await w.pass();
    assert.equal(recorder.lacking.get(`0x${lacking.toString(16)}`), 0, 'the node behind answered the header');
    assert.equal(pass.stopped, null, 'the pass was not ended by it');
    assert.ok(pass.head >= last, `both blocks read in the pass (read to ${pass.head}; the payment's rest is in ${last})`);
    assert.equal((await detail(sh, 'lacking-header')).amountPaid, '2000000');
    await w.sweeper.idle();
  });

  test('zero-value transfers of the token never count and never name the payer', async () => {
    const sh = await shop();
    const payTo = await receipt(sh, 'zero-1', 2);
    await pay(8, payTo, 0n);
    await pay(2, payTo, 2_000_000n);
    await passUntil(completed(sh, ['zero-1']), 10, 'the payment completes');
    const d = await detail(sh, 'zero-1');
    assert.equal(d.payer, devAccount(2).address.toLowerCase(), 'the payer is who sent the money');
    const rows = await t.deps.database.db
      .select({ amount: receiptTransfers.amountUnits })
      .from(receiptTransfers)
      .where(and(eq(receiptTransfers.wallet, sh.wallet), eq(receiptTransfers.receiptId, 'zero-1')));
    assert.ok(rows.every((r) => r.amount !== '0'), 'no zero-value row is stored');
  });

  test("split payment fees add up to the contract's platform share to the base unit", async () => {
    const sh = await shop();
    for (const amount of [1n, 4_999_999n]) await pay(3, sh.split, amount);
    for (let i = 0; i < 25; i++) await pay(4, sh.split, 199n);
    await anvil().mine({ blocks: 1 });
    await passUntil(async () => (await t.call(sh.key, 'GET', '/api/split/transactions')).body.length === 27, 20, 'every transfer is indexed');
    const rows = (await t.call(sh.key, 'GET', '/api/split/transactions')).body as { feesBaseUnits: string; amountBaseUnits: string }[];
    const fees = rows.reduce((s, r) => s + BigInt(r.feesBaseUnits), 0n);
    const read = (functionName: 'releasable' | 'released') =>
      tc.chain.publicClient.readContract({ address: sh.split, abi: paymentSplitterAbi, functionName, args: [usdc(), PLATFORM] });
    const contract = (await read('releasable')) + (await read('released'));
    assert.equal(fees, contract, 'indexed fees equal the platform share the contract holds');
    assert.equal(contract, ((4_999_999n + 1n + 25n * 199n) * 50n) / 10_000n);
  });

  test('a fresh install starts at the head; a fresh cursor with an open receipt starts just before it was created', async () => {
    // Fresh database, no receipts: the first block read is the head.
    const fresh = await startChainApp(viaProxy, { CONFIRMATIONS: '1', PLATFORM_RECIPIENT_ADDRESS: PLATFORM });
    try {
      const head = await tc.chain.publicClient.getBlockNumber({ cacheTime: 0 });
      await fresh.deps.chainWorker!.pass();
      assert.equal(fresh.deps.chainWorker!.scanner.startedAt, head);
      assert.equal(fresh.deps.chainWorker!.scanner.rpcCalls.eth_getLogs, 1, 'one block read, nothing of the past');
    } finally {
      await fresh.close();
    }
    // History: 400 blocks, 12 s apart; a receipt created at block K of it (its createdAt moved there).
    await anvil().mine({ blocks: 400, interval: 12 });
    const head = await tc.chain.publicClient.getBlock({ blockTag: 'latest' });
    const k = head.number - 100n;
    const atK = await tc.chain.publicClient.getBlock({ blockNumber: k });
    const app = await startChainApp(viaProxy, { CONFIRMATIONS: '1', PLATFORM_RECIPIENT_ADDRESS: PLATFORM, RPC_LAG_HORIZON_BLOCKS: String(HORIZON) });
    try {
      const s = await signIn(app);
      const res = await admin(app, s, 'POST', '/api/split/deploy', { recipients: [{ address: s.wallet, sharesBps: 9950 }, { address: PLATFORM, sharesBps: 50 }] });
      assert.equal(res.status, 200);
      const key = await app.key(s.wallet);
      const created = await app.call(key, 'POST', '/api/receipts', { id: 'late-start', lineItems: [{ label: 'Item', priceUsd: 3 }], totalUsd: 3 });
      assert.equal(created.status, 201);
      const page = await app.call(null, 'GET', `/api/pay/late-start${new URL(created.body.paymentUrl).search}`);
      // Created 10 minutes (the start's margin) after block K's time.
      await app.deps.database.db
        .update(receipts)
        .set({ createdAt: Number(atK.timestamp) * 1000 + 600_000 })
        .where(eq(receipts.id, 'late-start'));
      await pay(2, page.body.payment.payTo, 3_000_000n);
      const w = app.deps.chainWorker!;
      for (let i = 0; i < 40 && (await app.call(key, 'GET', '/api/receipts/late-start')).body.status !== 'completed'; i++) await w.pass();
      assert.equal((await app.call(key, 'GET', '/api/receipts/late-start')).body.status, 'completed');
      const start = w.scanner.startedAt!;
      assert.ok(start <= k, `the start ${start} is not after block ${k}`);
      assert.ok(start >= k - 2n * (head.number - k), `the start ${start} is near block ${k}, not far back`);
    } finally {
      await app.close();
    }
  });
});

describe('what counts as a refusal', () => {
  test("Infura's -32005, Alchemy's suggestion, 413 and viem's body limit split; other failures do not", () => {
    const infura = Object.assign(new Error('query returned more than 10000 results'), { code: -32005, data: { from: '0x10', to: '0x1f', limit: 10000 } });
    assert.deepEqual(refusal(infura)?.suggested, { from: 16n, to: 31n });
    const alchemy = Object.assign(new Error('x'), {
      code: -32602,
      details: 'Log response size exceeded. You can make eth_getLogs requests with up to a 2K block range ... this block range should work: [0x100, 0x8ff]',
    });
    assert.deepEqual(refusal(alchemy)?.suggested, { from: 256n, to: 2303n });
    assert.notEqual(refusal(Object.assign(new Error('HTTP request failed.'), { status: 413 })), null);
    // viem's own error for a body over the transport's limit, told by its class: its words match no refusal text.
    const tooLarge = new ResponseBodyTooLargeError({ maxSize: 10_000_000, size: 12_000_000 });
    assert.notEqual(refusal(tooLarge), null);
    assert.notEqual(refusal(new HttpRequestError({ url: 'http://127.0.0.1:8545', cause: tooLarge })), null, 'also as the cause of the request failing');
    assert.notEqual(refusal(new Error('eth_getLogs block range too large, max 500')), null);
    assert.equal(refusal(Object.assign(new Error('HTTP request failed.'), { status: 503 })), null);
    assert.equal(refusal(Object.assign(new Error('rate limited'), { status: 429 })), null);
    assert.equal(refusal(Object.assign(new Error('unknown block'), { code: -32000 })), null);
  });

  test("Infura's rate limit (HTTP 429 with -32005) is a rate limit, not a size refusal; a 5xx is a server's passing failure", () => {
    const infura = new LimitExceededRpcError(new RpcRequestError({ body: {}, url: 'http://127.0.0.1:8545', status: 429, error: { code: -32005, message: 'project ID request rate exceeded' } }));
    assert.equal(refusal(infura), null, 'never split');
    assert.ok(isRateLimited(infura));
    assert.ok(!isServerFailure(infura), 'never asked again at once');
    assert.ok(isRateLimited(Object.assign(new Error('rate limited'), { status: 429 })));
    assert.ok(isRateLimited(Object.assign(new Error('request limit reached'), { code: -32007 })), "QuickNode's code");
    for (const status of [408, 500, 502, 503, 504]) assert.ok(isServerFailure(Object.assign(new Error('HTTP request failed.'), { status })), `HTTP ${status}`);
    assert.ok(!isServerFailure(Object.assign(new Error('HTTP request failed.'), { status: 400 })));
    assert.ok(!isServerFailure(Object.assign(new Error('unknown block'), { code: -32000 })), 'an answer about the block is not');
    assert.ok(!isRateLimited(Object.assign(new Error('query returned more than 10000 results'), { code: -32005 })), "Infura's size refusal is not");
  });
});
