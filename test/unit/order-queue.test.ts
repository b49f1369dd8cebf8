/**
 * OrderQueue: orders that arrive together share a batch, at most a few batches run at once, and
 * every caller gets its own answer or error.
 */
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import type { Settled } from '../../src/db/batch.ts';
import { OrderQueue } from '../../src/domain/orders.ts';

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

describe('OrderQueue', () => {
  test('orders of one turn share a batch, and each gets its own outcome', async () => {
    const { batches, gates, place } = gatedPlacer();
    const queue = new OrderQueue(place);
    const outcomes = [1, -2, 3].map((n) => queue.submit(n).then(String, (err: Error) => err.message));
    await turn();
    assert.deepEqual(batches, [[1, -2, 3]]);
    gates.shift()!();
    assert.deepEqual(await Promise.all(outcomes), ['placed 1', 'refused -2', 'placed 3']);
  });

  test('at most maxInFlight batches run; orders arriving meanwhile go together in the next one', async () => {
    const { batches, gates, place } = gatedPlacer();
    const queue = new OrderQueue(place, 2);
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
    const queue = new OrderQueue(place, 4, 2);
    const all = [1, 2, 3, 4, 5].map((n) => queue.submit(n));
    await turn();
    assert.deepEqual(batches, [[1, 2], [3, 4], [5]]);
    while (gates.length > 0) gates.shift()!();
    assert.equal((await Promise.all(all)).length, 5);
  });

  test('a batch that fails fails each of its orders, and the queue goes on', async () => {
    let calls = 0;
    const queue = new OrderQueue<number, number>(async (items) => {
      if (calls++ === 0) throw new Error('database unavailable');
      return items.map((n) => ({ ok: true, value: n * 10 }));
    });
    const failed = await Promise.allSettled([queue.submit(1), queue.submit(2)]);
    assert.deepEqual(
      failed.map((r) => r.status === 'rejected' && (r.reason as Error).message),
      ['database unavailable', 'database unavailable'],
    );
    assert.equal(await queue.submit(3), 30);
  });
});
