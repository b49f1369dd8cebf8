/**
 * LookupBatcher and GroupCommit: lookups and writes of one event-loop turn share a query or a
 * commit, and every caller gets its own answer or error.
 */
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { GroupCommit, LookupBatcher, type Settled } from '../../src/db/batch.ts';

function recordingLoader(fail?: (group: string) => Error | undefined) {
  const calls: { group: string; keys: string[] }[] = [];
  const load = async (group: string, keys: string[]) => {
    calls.push({ group, keys });
    const err = fail?.(group);
    if (err !== undefined) throw err;
    // Only even-numbered keys exist.
    return new Map(keys.filter((k) => Number(k.slice(1)) % 2 === 0).map((k) => [k, `${group}/${k}`]));
  };
  return { calls, load };
}

describe('LookupBatcher', () => {
  test('lookups of one turn are one query per group, each caller getting its own value', async () => {
    const { calls, load } = recordingLoader();
    const batcher = new LookupBatcher(load);
    const results = await Promise.all([
      batcher.get('a', 'k0'),
      batcher.get('a', 'k1'),
      batcher.get('b', 'k2'),
      batcher.get('a', 'k2'),
    ]);
    assert.deepEqual(results, ['a/k0', undefined, 'b/k2', 'a/k2']);
    assert.deepEqual(calls, [
      { group: 'a', keys: ['k0', 'k1', 'k2'] },
      { group: 'b', keys: ['k2'] },
    ]);
  });

  test('the same key asked twice is queried once and answers both', async () => {
    const { calls, load } = recordingLoader();
    const batcher = new LookupBatcher(load);
    const [x, y] = await Promise.all([batcher.get('a', 'k4'), batcher.get('a', 'k4')]);
    assert.equal(x, 'a/k4');
    assert.equal(y, 'a/k4');
    assert.deepEqual(calls, [{ group: 'a', keys: ['k4'] }]);
  });

  test('a later turn queries again: nothing is cached', async () => {
    const { calls, load } = recordingLoader();
    const batcher = new LookupBatcher(load);
    await batcher.get('a', 'k0');
    await batcher.get('a', 'k0');
    assert.equal(calls.length, 2);
  });

  test('a batch larger than the limit is split', async () => {
    const { calls, load } = recordingLoader();
    const batcher = new LookupBatcher(load, 3);
    const keys = Array.from({ length: 7 }, (_, i) => `k${i}`);
    const results = await Promise.all(keys.map((k) => batcher.get('a', k)));
    assert.deepEqual(results, ['a/k0', undefined, 'a/k2', undefined, 'a/k4', undefined, 'a/k6']);
    assert.deepEqual(
      calls.map((c) => c.keys),
      [['k0', 'k1', 'k2'], ['k3', 'k4', 'k5'], ['k6']],
    );
  });

  test("a failed query rejects its own callers only", async () => {
    const { load } = recordingLoader((group) => (group === 'down' ? new Error('connection refused') : undefined));
    const batcher = new LookupBatcher(load);
    const [bad1, bad2, good] = await Promise.allSettled([batcher.get('down', 'k0'), batcher.get('down', 'k1'), batcher.get('up', 'k0')]);
    assert.equal(bad1.status, 'rejected');
    assert.equal(bad2.status, 'rejected');
    assert.match(String((bad1 as PromiseRejectedResult).reason), /connection refused/);
    assert.deepEqual(good, { status: 'fulfilled', value: 'up/k0' });
  });
});

describe('GroupCommit', () => {
  test('writes of one turn are one commit, each settled on its own', async () => {
    const batches: number[][] = [];
    const group = new GroupCommit<number, string>(async (items) => {
      batches.push(items);
      return items.map((n): Settled<string> => (n % 2 === 0 ? { ok: true, value: `saved ${n}` } : { ok: false, error: new Error(`refused ${n}`) }));
    });
    const outcomes = await Promise.allSettled([group.submit(2), group.submit(3), group.submit(4)]);
    assert.deepEqual(batches, [[2, 3, 4]]);
    assert.deepEqual(outcomes[0], { status: 'fulfilled', value: 'saved 2' });
    assert.match(String((outcomes[1] as PromiseRejectedResult).reason), /refused 3/);
    assert.deepEqual(outcomes[2], { status: 'fulfilled', value: 'saved 4' });
  });

  test('a commit that throws fails every write of its batch, and the next turn commits anew', async () => {
    let down = true;
    const group = new GroupCommit<number, number>(async (items) => {
      if (down) throw new Error('connection lost');
      return items.map((n) => ({ ok: true, value: n }));
    });
    const failed = await Promise.allSettled([group.submit(1), group.submit(2)]);
    assert.deepEqual(
      failed.map((o) => o.status),
      ['rejected', 'rejected'],
    );
    down = false;
    assert.equal(await group.submit(3), 3);
  });

  test('a batch larger than the limit is split into several commits', async () => {
    const batches: number[][] = [];
    const group = new GroupCommit<number, number>(async (items) => {
      batches.push(items);
      return items.map((n) => ({ ok: true, value: n * 10 }));
    }, 2);
    assert.deepEqual(await Promise.all([1, 2, 3, 4, 5].map((n) => group.submit(n))), [10, 20, 30, 40, 50]);
    assert.deepEqual(batches, [[1, 2], [3, 4], [5]]);
  });
});
