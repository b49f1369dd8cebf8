/**
 * The loop the chain worker and the webhook dispatcher run under their leases
 * (src/workers/leased-loop.ts): one leader per lease, passes one at a time, kicks, back-off while
 * passes fail with the failures logged once, and a stop that gives the lease up only after the
 * work the passes started has ended. The lease table is PGlite's, in memory.
 */
import assert from 'node:assert/strict';
import { Writable } from 'node:stream';
import { after, before, describe, test } from 'node:test';
import { pino } from 'pino';
import { openDatabase, type Database } from '../../src/db/client.ts';
import { leases } from '../../src/db/schema.ts';
import { LeasedLoop, type LeasedLoopOptions } from '../../src/workers/leased-loop.ts';
import { until } from '../helpers/wait.ts';

let database: Database;
before(async () => {
  database = await openDatabase({ dataDir: 'memory://' });
});
after(async () => {
  await database.close();
});

/** A logger whose lines the test reads. */
function recordingLogger() {
  const lines: { level: number; msg: string; failures?: number }[] = [];
  const stream = new Writable({
    write(chunk: Buffer, _enc, done) {
      lines.push(JSON.parse(chunk.toString()));
      done();
    },
  });
  return { logger: pino({ level: 'debug' }, stream), lines };
}

let leaseNo = 0;
function loop(opts: Partial<LeasedLoopOptions> & Pick<LeasedLoopOptions, 'pass'>): LeasedLoop {
  return new LeasedLoop({
    db: database.db,
    logger: pino({ level: 'silent' }),
    lease: `test-${++leaseNo}`,
    holder: `holder-${leaseNo}`,
    what: 'test loop',
    intervalMs: 60_000,
    maxBackoffMs: 60_000,
    ...opts,
  });
}

async function leaseHolder(name: string): Promise<string | undefined> {
  const rows = await database.db.select().from(leases);
  return rows.find((r) => r.name === name)?.holder;
}

describe('LeasedLoop', () => {
  test("a pass's next wait comes from nextIntervalMs when it names one (a chain's next block due), else the interval", async () => {
    let passes = 0;
    let wait: number | undefined = 5;
    const l = loop({ intervalMs: 60_000, nextIntervalMs: () => wait, pass: async () => void passes++ });
    l.start();
    // With the 60 s interval alone only the first pass would run within the wait.
    await until(() => passes >= 3, 10_000, 'three passes at the named cadence');
    wait = undefined;
    await until(() => l.nextPassAt !== undefined && l.nextPassAt - Date.now() > 30_000, 10_000, 'the interval again');
    await l.stop();
  });

  test('one leader per lease; the other takes over once the leader stops', async () => {
    const ran: string[] = [];
    const a = loop({ lease: 'shared', holder: 'a', intervalMs: 20, pass: async () => void ran.push('a') });
    const b = loop({ lease: 'shared', holder: 'b', intervalMs: 20, pass: async () => void ran.push('b') });
    a.start();
    await until(() => ran.length >= 1, 5_000, "a's first pass");
    b.start();
    await until(() => ran.length >= 5, 5_000, 'a few passes');
    assert.ok(a.isLeader && !b.isLeader);
    assert.deepEqual(new Set(ran), new Set(['a']), 'only the leader runs passes');
    await a.stop();
    assert.equal(await leaseHolder('shared'), undefined, 'stop gives the lease up');
    await until(() => ran.at(-1) === 'b', 5_000, 'b taking over');
    assert.ok(b.isLeader);
    await b.stop();
  });

  test('a kick runs a pass at once; kicks during a pass ask for exactly one more', async () => {
    let passes = 0;
    let release: () => void = () => undefined;
    const l = loop({
      pass: async () => {
        passes++;
        if (passes === 2) await new Promise<void>((r) => (release = r));
      },
    });
    l.start();
    await until(() => passes === 1, 5_000, 'the first pass');
    l.kick();
    await until(() => passes === 2, 5_000, 'the kicked pass, long before the 60 s interval');
    l.kick();
    l.kick();
    l.kick();
    release();
    await until(() => passes === 3, 5_000, 'one pass for the kicks that came during the second');
    assert.equal(l.nextDelayMs, 60_000, 'then the steady interval');
    await l.stop();
    assert.equal(passes, 3);
  });

  test('failing passes back off, are logged once, and the recovery is logged', async () => {
    const { logger, lines } = recordingLogger();
    let passes = 0;
    const delays: number[] = [];
    const l = loop({
      logger,
      intervalMs: 1,
      maxBackoffMs: 4,
      pass: async () => {
        passes++;
        if (passes <= 4) throw new Error(`pass ${passes} fails`);
      },
    });
    l.start();
    await until(
      () => {
        delays.push(l.nextDelayMs);
        return passes >= 5;
      },
      5_000,
      'four failed passes and a good one',
      0,
    );
    await l.stop();
    const seen = [...new Set(delays)];
    assert.ok(seen.includes(2) && seen.includes(4), `the wait doubles after failures, up to the cap: ${seen.join(',')}`);
    assert.ok(!seen.some((d) => d > 4), `never beyond maxBackoffMs: ${seen.join(',')}`);
    assert.equal(l.nextDelayMs, 1, 'back to the interval after a good pass');
    const warnings = lines.filter((x) => x.level === 40);
    assert.equal(warnings.length, 1, `one warning for a run of failures within 30 s: ${JSON.stringify(warnings)}`);
    const failed = lines.filter((x) => x.msg === 'test loop pass failed');
    assert.deepEqual(failed.map((x) => x.failures), [1, 2, 3, 4], 'every failed pass is logged, the later ones at debug');
    assert.equal(warnings[0]!.msg, 'test loop pass failed');
    const resumed = lines.find((x) => x.msg === 'test loop resumed');
    assert.equal(resumed?.failures, 4, 'the recovery says how many passes failed');
  });

  test('a kick while passes fail waits for the back-off', async () => {
    let passes = 0;
    const l = loop({
      intervalMs: 60_000,
      pass: async () => {
        passes++;
        throw new Error('down');
      },
    });
    l.start();
    await until(() => l.failing === 1 && l.nextPassAt !== undefined, 5_000, 'the first failure');
    const due = l.nextPassAt!;
    l.kick();
    // Asserted on the schedule, not on the clock: the kick moved nothing.
    assert.equal(l.nextPassAt, due, 'the next pass is still the back-off away');
    assert.equal(l.nextDelayMs, 60_000, 'capped by maxBackoffMs');
    await l.stop();
    assert.equal(passes, 1, 'no pass ran for the kick');
  });

  test('stop waits for the drained work, holding the lease until it ends', async () => {
    const l = loop({ lease: 'drained', holder: 'drainer', pass: async () => undefined });
    l.start();
    await until(() => l.isLeader, 5_000, 'leadership');
    let heldDuringDrain: string | undefined;
    await l.stop(async () => {
      heldDuringDrain = await leaseHolder('drained');
    });
    assert.equal(heldDuringDrain, 'drainer', 'the lease is held while started work ends');
    assert.equal(await leaseHolder('drained'), undefined, 'and given up after');
    assert.equal(l.isLeader, false);
  });
});
