/**
 * LookupBatcher and GroupCommit: lookups and writes of one event-loop turn share a query or a
 * commit, and every caller gets its own answer or error; with maxInFlight (orders), at most that
 * many batches run at once and what arrives meanwhile goes together in the next.
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
    assert.match(String(bad1.reason), /connection refused/);
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
    }, { maxBatch: 2 });
    assert.deepEqual(await Promise.all([1, 2, 3, 4, 5].map((n) => group.submit(n))), [10, 20, 30, 40, 50]);
    assert.deepEqual(batches, [[1, 2], [3, 4], [5]]);
  });
});

/** A batch function that records its batches and finishes each one only when told to. */
function gatedPlacer() {
  const batches: number[][] = [];
  const gates: (() => void)[] = [];
  const place = async (items: number[]): Promise<Settled<string>[]> => {
    batches.push(items);
    await new Promise<void>((resolve) => gates.push(resolve));
    return items.map((n): Settled<string> => (n < 0 ? { ok: false, error: new Error(`refused ${n}`) } : { ok: true, value: `placed ${n}` }));
  };
  return { batches, gates, place };
}

const turn = () => new Promise((resolve) => setImmediate(resolve));

describe('GroupCommit with maxInFlight (orders)', () => {
  test('orders of one turn share a batch, and each gets its own outcome', async () => {
    const { batches, gates, place } = gatedPlacer();
    const queue = new GroupCommit(place, { maxInFlight: 2 });
    const outcomes = [1, -2, 3].map((n) => queue.submit(n).then(String, (err: Error) => err.message));
    await turn();
    assert.deepEqual(batches, [[1, -2, 3]]);
    gates.shift()!();
    assert.deepEqual(await Promise.all(outcomes), ['placed 1', 'refused -2', 'placed 3']);
  });

  test('at most maxInFlight batches run; orders arriving meanwhile go together in the next one', async () => {
    const { batches, gates, place } = gatedPlacer();
    const queue = new GroupCommit(place, { maxInFlight: 2 });
    const all: Promise<string>[] = [];
    for (const wave of [[1], [2], [3, 4], [5]]) {
      for (const n of wave) all.push(queue.submit(n));
      await turn();
    }
    assert.deepEqual(batches, [[1], [2]], 'two under way, the rest waiting');
    gates.shift()!();
    await turn();
    await turn();
    assert.deepEqual(batches, [[1], [2], [3, 4, 5]]);
    gates.shift()!();
    gates.shift()!();
    assert.deepEqual(await Promise.all(all), ['placed 1', 'placed 2', 'placed 3', 'placed 4', 'placed 5']);
  });

  test('a batch larger than maxBatch is split', async () => {
    const { batches, gates, place } = gatedPlacer();
    const queue = new GroupCommit(place, { maxInFlight: 4, maxBatch: 2 });
    const all = [1, 2, 3, 4, 5].map((n) => queue.submit(n));
    await turn();
    assert.deepEqual(batches, [[1, 2], [3, 4], [5]]);
    while (gates.length > 0) gates.shift()!();
    assert.equal((await Promise.all(all)).length, 5);
  });

  test('a batch that fails fails each of its orders, and the queue goes on', async () => {
    let calls = 0;
    const queue = new GroupCommit<number, number>(
      async (items) => {
        if (calls++ === 0) throw new Error('database unavailable');
        return items.map((n) => ({ ok: true, value: n * 10 }));
      },
      { maxInFlight: 2 },
    );
    const failed = await Promise.allSettled([queue.submit(1), queue.submit(2)]);
    assert.deepEqual(
      failed.map((r) => r.status === 'rejected' && (r.reason as Error).message),
      ['database unavailable', 'database unavailable'],
    );
    assert.equal(await queue.submit(3), 30);
  });
});
