/**
 * The mainnet-shaped simulation itself (./helpers.ts): its blocks carry Base's traffic, and its
 * provider proxy refuses, delays and lags as hosted providers do. The worker's tests on it rely on
 * these behaviours; each is asserted here against anvil's own answers.
 */
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { joinSim, PLAIN_PROVIDER, SIM_CHAIN_ID, startSim, type Sim } from './helpers.ts';
import { eventually } from '../helpers/wait.ts';

let sim: Sim;
before(async () => {
  sim = await startSim({ provider: PLAIN_PROVIDER, historyBlocks: 40 });
});
after(async () => {
  await sim?.stop();
});

const hex = (n: bigint) => `0x${n.toString(16)}`;

async function viaProxy(body: unknown): Promise<{ status: number; body: any }> {
  const res = await fetch(sim.proxy.url, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) });
  const text = await res.text();
  return { status: res.status, body: res.headers.get('content-type')?.includes('json') ? JSON.parse(text) : text };
}
const call = (method: string, params: unknown[] = [], id = 1) => viaProxy({ jsonrpc: '2.0', id, method, params });

describe('the chain', () => {
  test('is chain 8453 with a block every 2 seconds, each carrying at least 500 foreign Transfer logs and 50 transfers of the test USDC', async () => {
    assert.equal(Number(await sim.node.rpc<string>('eth_chainId')), SIM_CHAIN_ID);
    const start = await sim.node.head();
    await sim.waitForBlock(start + 3n);
    for (const block of [sim.liveFrom - 1n, start + 2n, start + 3n]) {
      const traffic = await sim.blockTraffic(block);
      assert.ok(traffic.foreignTransfers >= 500, `block ${block}: ${traffic.foreignTransfers} foreign Transfer logs`);
      assert.ok(traffic.tokenTransfers >= 50, `block ${block}: ${traffic.tokenTransfers} test-USDC transfers`);
    }
    const a = await sim.publicClient.getBlock({ blockNumber: start + 2n });
    const b = await sim.publicClient.getBlock({ blockNumber: start + 3n });
    assert.equal(b.timestamp - a.timestamp, 2n, 'blocks 2 seconds apart');
    const history = await sim.publicClient.getBlock({ blockNumber: sim.liveFrom - 2n });
    assert.equal((await sim.publicClient.getBlock({ blockNumber: sim.liveFrom - 1n })).timestamp - history.timestamp, 2n, 'history 2 seconds apart too');
    assert.deepEqual(sim.generator.errors, []);
  });

  test("a stranger's flood lands as fake Transfer logs into the targets, over the blocks asked for", async () => {
    const target = '0x00000000000000000000000000000000000f100d';
    const hashes = await sim.flood([target], 3_000, 3);
    const blocks = new Set<bigint>();
    let logs = 0;
    for (const hash of hashes) {
      const r = await sim.publicClient.getTransactionReceipt({ hash });
      assert.equal(r.status, 'success');
      blocks.add(r.blockNumber);
      logs += r.logs.filter((l) => l.address.toLowerCase() === sim.attacker.toLowerCase() && l.topics[2]?.endsWith(target.slice(2))).length;
    }
    assert.equal(logs, 3_000);
    assert.equal(blocks.size, 3);
  });

  test('a base-fee spike multiplies every block’s base fee while it lasts, then it returns to normal', async () => {
    sim.spikeBaseFee(200, 4_500);
    const spiked = await eventually(async () => {
      const b = await sim.publicClient.getBlock({ blockTag: 'latest' });
      assert.equal(b.baseFeePerGas, 2_000_000_000n);
      return b.number;
    }, 10_000, 'a spiked block');
    await sim.waitForBlock(spiked + 1n);
    assert.equal((await sim.publicClient.getBlock({ blockNumber: spiked + 1n })).baseFeePerGas, 2_000_000_000n, 'the next block too');
    await eventually(async () => assert.equal((await sim.publicClient.getBlock({ blockTag: 'latest' })).baseFeePerGas, 10_000_000n), 15_000, 'the normal base fee');
  });
});

describe('the provider proxy', () => {
  test('passes answers through untouched when every behaviour is off, and counts calls and bytes per method', async () => {
    sim.proxy.configure(PLAIN_PROVIDER);
    sim.proxy.resetStats();
    const head = await sim.node.head();
    const res = await viaProxy([
      { jsonrpc: '2.0', id: 1, method: 'eth_getBlockByNumber', params: [hex(head), false] },
      { jsonrpc: '2.0', id: 2, method: 'eth_chainId', params: [] },
    ]);
    assert.equal(res.status, 200);
    assert.equal(res.body.length, 2);
    assert.deepEqual(res.body[0].result, await sim.node.rpc('eth_getBlockByNumber', [hex(head), false]));
    assert.equal(Number(res.body[1].result), SIM_CHAIN_ID);
    const stats = sim.proxy.stats();
    assert.equal(stats.requests, 1);
    assert.equal(stats.methods.eth_getBlockByNumber?.calls, 1);
    assert.equal(stats.methods.eth_chainId?.calls, 1);
    assert.ok(stats.methods.eth_getBlockByNumber.bytes > 500);
    assert.equal(stats.bytes, Buffer.byteLength(JSON.stringify(res.body)));
  });

  test("refuses eth_getLogs answers over 10,000 logs as Infura does, with a range that holds at most that many", async () => {
    sim.proxy.configure({ ...PLAIN_PROVIDER, getLogsMaxResults: 10_000 });
    const res = await call('eth_getLogs', [{ fromBlock: '0x1', toBlock: hex(sim.liveFrom - 1n) }]);
    assert.equal(res.body.error.code, -32005);
    const m = /^query returned more than 10000 results\. Try with this block range \[(0x[0-9a-f]+), (0x[0-9a-f]+)\]\.$/.exec(res.body.error.message);
    assert.ok(m, res.body.error.message);
    const suggested = await call('eth_getLogs', [{ fromBlock: m[1], toBlock: m[2] }]);
    assert.ok(Array.isArray(suggested.body.result), JSON.stringify(suggested.body).slice(0, 200));
    assert.ok(suggested.body.result.length <= 10_000 && suggested.body.result.length > 5_000, `${suggested.body.result.length} logs`);
    // Filtered by the token's address, the same range is small enough.
    const filtered = await call('eth_getLogs', [{ fromBlock: '0x1', toBlock: hex(sim.liveFrom - 1n), address: sim.usdc }]);
    assert.ok(Array.isArray(filtered.body.result));
    assert.ok(filtered.body.result.length >= 40 * 50);
    assert.equal(sim.proxy.stats().getLogsRefused.results >= 1, true);
  });

  test('refuses an eth_getLogs range over 2,000 blocks with Alchemy’s message and suggested range', async () => {
    sim.proxy.configure({ ...PLAIN_PROVIDER, getLogsMaxBlocks: 2_000 });
    const head = await sim.node.head();
    const res = await call('eth_getLogs', [{ fromBlock: '0x0', toBlock: hex(head + 5_000n), address: sim.usdc }]);
    assert.equal(res.body.error.code, -32602);
    assert.match(res.body.error.message, /^Log response size exceeded\. .*this block range should work: \[0x0, 0x7cf\]$/);
    const ok = await call('eth_getLogs', [{ fromBlock: '0x0', toBlock: '0x7cf', address: sim.usdc }]);
    assert.ok(Array.isArray(ok.body.result));
  });

  test('a lagging node answers from its own head: block number, logs cut silently, blocks, receipts and nonces above it unknown', async () => {
    sim.proxy.configure({ ...PLAIN_PROVIDER, lag: { share: 1, minBlocks: 3, maxBlocks: 3 } });
    const payer = sim.wallet(0);
    // The chain holds still meanwhile, so the transaction stays in the newest block.
    await sim.node.rpc('evm_setIntervalMining', [0]);
    const asked = await (async () => {
      try {
        const hash = await payer.sendTransaction({ to: '0x000000000000000000000000000000000000dEaD', value: 1n });
        await sim.node.rpc('evm_mine', []);
        const head = await sim.node.head();
        assert.equal((await sim.publicClient.getTransactionReceipt({ hash })).blockNumber, head);
        const res = await viaProxy([
          { jsonrpc: '2.0', id: 1, method: 'eth_blockNumber', params: [] },
          { jsonrpc: '2.0', id: 2, method: 'eth_getTransactionReceipt', params: [hash] },
          { jsonrpc: '2.0', id: 3, method: 'eth_getBlockByNumber', params: [hex(head), false] },
          { jsonrpc: '2.0', id: 4, method: 'eth_getTransactionCount', params: [payer.account.address, 'pending'] },
          { jsonrpc: '2.0', id: 5, method: 'eth_getLogs', params: [{ fromBlock: hex(head - 5n), toBlock: hex(head), address: sim.usdc }] },
          { jsonrpc: '2.0', id: 6, method: 'eth_getBalance', params: [payer.account.address, hex(head)] },
          { jsonrpc: '2.0', id: 7, method: 'eth_getTransactionByHash', params: [hash] },
        ]);
        return { head, res };
      } finally {
        await sim.node.rpc('evm_setIntervalMining', [2]);
      }
    })();
    const { head, res } = asked;
    const [blockNumber, receipt, block, nonce, logs, balance, tx] = res.body;
    assert.equal(BigInt(blockNumber.result), head - 3n);
    assert.equal(receipt.result, null);
    assert.equal(block.result, null);
    assert.equal(BigInt(nonce.result), BigInt(await sim.node.rpc<string>('eth_getTransactionCount', [payer.account.address, hex(head - 3n)])));
    assert.ok(BigInt(nonce.result) < BigInt(await sim.node.rpc<string>('eth_getTransactionCount', [payer.account.address, 'latest'])));
    assert.ok(logs.result.length > 0);
    assert.ok(logs.result.every((l: { blockNumber: string }) => BigInt(l.blockNumber) <= head - 3n), 'cut at the lagging head');
    assert.equal(balance.error.message, 'header not found');
    assert.equal(tx.result.blockNumber, null, 'the transaction looks pending');
  });

  test('rate limits with HTTP 429 and -32005, and answers a share of requests 503', async () => {
    sim.proxy.configure({ ...PLAIN_PROVIDER, rateLimitPerSecond: 5 });
    const answers = await Promise.all(Array.from({ length: 12 }, (_, i) => call('eth_chainId', [], i)));
    const limited = answers.filter((a) => a.status === 429);
    assert.ok(limited.length >= 6, `${limited.length} of 12 limited`);
    assert.deepEqual(limited[0]!.body.error, { code: -32005, message: 'rate limited' });
    sim.proxy.configure({ ...PLAIN_PROVIDER, serverErrorShare: 1 });
    assert.equal((await call('eth_chainId')).status, 503);
    sim.proxy.configure({ ...PLAIN_PROVIDER, latencyMs: [50, 60] });
    const started = performance.now();
    await call('eth_chainId');
    assert.ok(performance.now() - started >= 49, 'the answer waited its latency');
  });
});

describe('the service joins it', () => {
  test('through the proxy as CHAIN=dev with RPC_URL, keeping the node’s chain id 8453 for its clients and payment pages', async () => {
    sim.proxy.configure(PLAIN_PROVIDER);
    const chain = await joinSim(sim);
    try {
      assert.equal(chain.chainId, SIM_CHAIN_ID);
      assert.equal(chain.publicClient.chain.id, SIM_CHAIN_ID);
      assert.equal(chain.rpcUrl, sim.proxy.url);
      assert.equal(chain.usdc.address, sim.usdc);
      assert.equal(chain.paymentFactory, sim.paymentFactory);
      assert.equal(await chain.publicClient.getChainId(), SIM_CHAIN_ID);
    } finally {
      await chain.close();
    }
  });
});
