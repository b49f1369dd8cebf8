/**
 * What the chain worker costs a hosted provider, counted (issue 23 "Cost", DESIGN.md "A real
 * chain"): every call that reaches the simulation's provider proxy, per method, whoever in the
 * service made it (scanner, sweeper, wallet), with every provider behaviour on (a node 1-3 blocks
 * behind on 30% of answers, 503s, latency, limits). Alchemy's compute units come from
 * src/chain/compute-units.ts. Budget: 5 M compute units a day idle (115 per 2-second block).
 */
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { computeUnits } from '../../src/chain/compute-units.ts';
import { type ProviderStats, type Sim } from './helpers.ts';
import { waitFor } from '../helpers/wait.ts';
import { useSimApp, type SimApp } from './shop.ts';

/** 5 M compute units a day over 43,200 two-second blocks. */
const UNITS_PER_BLOCK = 115;
/** What reading the chain costs: the newest header, and logs. */
const SCANNER_METHODS = ['eth_getBlockByNumber', 'eth_getLogs'];

let sim: Sim;
let app: SimApp;
useSimApp(async (started) => {
  ({ sim, app } = started);
  // Past the worker's first passes (start, learning when blocks arrive).
  await sim.waitForBlock((await sim.node.head()) + 5n);
});

const callsOf = (s: ProviderStats): Record<string, number> => Object.fromEntries(Object.entries(s.methods).map(([m, x]) => [m, x.calls]));

describe('the chain worker’s calls, counted at the provider', () => {
  test('idle at the head: one eth_getLogs and a few headers per block, nothing else, within 5 M compute units a day', async (t) => {
    const from = await sim.node.head();
    sim.proxy.resetStats();
    await sim.waitForBlock(from + 20n);
    const calls = callsOf(sim.proxy.resetStats());
    const blocks = Number((await sim.node.head()) - from);
    const report = `${JSON.stringify(calls)} over ${blocks} blocks`;
    assert.deepEqual(
      Object.keys(calls).filter((m) => !SCANNER_METHODS.includes(m) && m !== 'eth_getBalance'),
      [],
      `only the scanner reads, and the deployer's balance for health: ${report}`,
    );
    assert.ok((calls.eth_getLogs ?? 0) <= blocks + 1, `at most one eth_getLogs per block: ${report}`);
    assert.ok((calls.eth_getBlockByNumber ?? 0) <= 3 * blocks, `a few headers per block: ${report}`);
    assert.ok((calls.eth_getBalance ?? 0) <= 2, `the deployer's balance every 30 s at most: ${report}`);
    const perBlock = computeUnits(calls) / blocks;
    t.diagnostic(`${perBlock.toFixed(1)} compute units a block (${Math.round(perBlock * 43_200)} a day): ${report}`);
    assert.ok(perBlock <= UNITS_PER_BLOCK, `${perBlock.toFixed(1)} compute units a block (${Math.round(perBlock * 43_200)} a day): ${report}`);
  });

  test('a head that does not move costs one header a poll and no other call', async () => {
    await sim.node.rpc('evm_setIntervalMining', [0]);
    try {
      // The last block mined is new to the worker until it has read it.
      const last = await sim.node.head();
      await waitFor(async () => ((app.t.deps.chainWorker!.lastPass?.head ?? 0n) >= last ? true : undefined), 60_000, 'the worker to read the last block', 100);
      await new Promise((r) => setTimeout(r, 500));
      sim.proxy.resetStats();
      await new Promise((r) => setTimeout(r, 8000));
      const calls = callsOf(sim.proxy.resetStats());
      assert.deepEqual(Object.keys(calls).filter((m) => m !== 'eth_getBlockByNumber' && m !== 'eth_getBalance'), [], JSON.stringify(calls));
      // Two quick looks once the block is overdue, then one a block time: 8 s hold at most 6.
      assert.ok((calls.eth_getBlockByNumber ?? 0) <= 6, JSON.stringify(calls));
    } finally {
      await sim.node.rpc('evm_setIntervalMining', [2]);
    }
  });
});
