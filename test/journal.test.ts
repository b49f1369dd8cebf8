/**
 * The journal on its own, against PGlite: durability across a crash, a torn last line, replay
 * after a partial apply, statuses waiting for another instance's receipt, write ids shared with
 * the database path, and entries that can never apply.
 */
import assert from 'node:assert/strict';
import { ReceiptStore } from '../src/db/receipt-store.ts';
import { WriteClaims } from '../src/db/write-claims.ts';
import { appendFileSync, existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { after, before, describe, test } from 'node:test';
import { and, eq } from 'drizzle-orm';
import { pino } from 'pino';
import { openDatabase, type Database } from '../src/db/client.ts';
import { receipts, receiptStatusHistory, rejectedWrites, webhookEvents, writeIds } from '../src/db/schema.ts';
import { Conflict, InvalidInput } from '../src/lib/errors.ts';
import { createReceipt, recordTrackingStatus } from '../src/domain/receipts.ts';
import { applyEntry, parseEntry } from '../src/journal/entries.ts';
import { Journal } from '../src/journal/journal.ts';
import { randomWallet } from './helpers/app.ts';
import { until } from './helpers/wait.ts';

let database: Database;
let store: ReceiptStore;
const dirs: string[] = [];
const logs: { level: number; msg: string }[] = [];
const logger = pino({ level: 'debug' }, { write: (s: string) => void logs.push(JSON.parse(s)) });

before(async () => {
  database = await openDatabase({ dataDir: 'memory://' });
  store = new ReceiptStore(database.db);
});
after(async () => {
  await database.close();
  for (const d of dirs) rmSync(d, { recursive: true, force: true });
});

function dataDir(): string {
  const d = mkdtempSync(path.join(tmpdir(), 'splitline-journal-'));
  dirs.push(d);
  return d;
}

const open = (dir: string) => Journal.open(dir, { database, receipts: store, logger, siteUrl: 'http://pay.test', brandName: 'Shop' });
const journalFile = (dir: string) => path.join(dir, 'journal', 'journal.jsonl');
const linesOf = (file: string) => readFileSync(file, 'utf8').split('\n').filter((l) => l !== '');

const body = (wallet: string, id: string, price = 2.5) => ({ wallet, id, lineItems: [{ label: 'Tea', priceUsd: price, qty: 2 }], totalUsd: price * 2 });

async function receiptRows(wallet: string, id: string) {
  return database.db.select().from(receipts).where(and(eq(receipts.wallet, wallet), eq(receipts.id, id)));
}
async function historyOf(wallet: string, id: string) {
  const rows = await database.db
    .select()
    .from(receiptStatusHistory)
    .where(and(eq(receiptStatusHistory.wallet, wallet), eq(receiptStatusHistory.receiptId, id)))
    .orderBy(receiptStatusHistory.seq);
  return rows.map((r) => `${r.status}@${r.source}`);
}

describe('Journal', () => {
  test('entries survive a crash (no close) and replay exactly once, with the paymentUrl handed out', async () => {
    const dir = dataDir();
    const wallet = randomWallet();
    const crashed = await open(dir);
    const a = await crashed.recordReceipt(body(wallet, 'j-1'));
    const b = await crashed.recordReceipt(body(wallet, 'j-2'));
    await crashed.recordTrackingStatus({ wallet, receiptId: 'j-1', status: 'link_opened' });
    assert.equal(crashed.pending, 3);
    assert.match(a.paymentUrl, /^http:\/\/pay\.test\/pay\/j-1\?t=[A-Za-z0-9_-]{22}$/);

    // The first instance is dropped without close(), as kill -9 would leave it.
    const recovered = await open(dir);
    assert.equal(recovered.pending, 3);
    assert.equal(recovered.holds(wallet, 'j-1'), true);
    const detail = recovered.findReceipt(wallet, 'j-1');
    assert.equal(detail?.status, 'link_opened');
    assert.equal(detail?.totalUsd, 5);
    assert.equal(detail?.brandName, 'Shop');
    assert.deepEqual(
      detail?.statusHistory.map((h) => h.status),
      ['pending', 'link_opened'],
    );
    assert.deepEqual(await recovered.recordReceipt(body(wallet, 'j-2')), b, 'same id and body answers as before');

    const result = await recovered.replayNow();
    assert.deepEqual(result, { applied: 3, skipped: 0, rejected: 0, remaining: 0 });
    assert.equal(recovered.pending, 0);
    assert.equal(recovered.holds(wallet, 'j-1'), false);
    const [row1] = await receiptRows(wallet, 'j-1');
    assert.equal(row1?.status, 'link_opened');
    assert.equal(a.paymentUrl, `http://pay.test/pay/j-1?t=${row1?.payToken}`);
    assert.equal((await receiptRows(wallet, 'j-2'))[0]?.payToken, new URL(b.paymentUrl).searchParams.get('t'));
    assert.deepEqual(await historyOf(wallet, 'j-1'), ['pending@api', 'link_opened@tracking']);
    assert.deepEqual(linesOf(journalFile(dir)), [], 'compacted once everything applied');
    assert.ok(logs.some((l) => l.msg.includes('replay finished')));

    await recovered.close();
    await crashed.close();
    const again = await open(dir);
    assert.equal(again.pending, 0);
    assert.equal((await again.replayNow()).applied, 0);
    assert.equal((await receiptRows(wallet, 'j-1')).length, 1);
    await again.close();
  });

  test('a torn last line is ignored, logged and cut off, so later entries stay readable', async () => {
    const dir = dataDir();
    const wallet = randomWallet();
    const first = await open(dir);
    await first.recordReceipt(body(wallet, 't-1'));
    await first.close();
    appendFileSync(journalFile(dir), '{"entryId":"half-writ');
    logs.length = 0;

    const second = await open(dir);
    assert.equal(second.pending, 1);
    assert.ok(logs.some((l) => l.level === 40 && l.msg.includes('torn last line')));
    await second.recordTrackingStatus({ wallet, receiptId: 't-1', status: 'buyer_logged_in' });
    await second.close();

    const third = await open(dir);
    assert.equal(third.pending, 2);
    assert.deepEqual(await third.replayNow(), { applied: 2, skipped: 0, rejected: 0, remaining: 0 });
    assert.deepEqual(await historyOf(wallet, 't-1'), ['pending@api', 'buyer_logged_in@tracking']);
    await third.close();
  });

  test('replay after a partial apply (crash before compaction) applies nothing twice', async () => {
    const dir = dataDir();
    const wallet = randomWallet();
    const j = await open(dir);
    await j.recordReceipt(body(wallet, 'p-1'));
    await j.recordTrackingStatus({ wallet, receiptId: 'p-1', status: 'checkout_initialized' });
    await j.recordReceipt(body(wallet, 'p-2'));
    await j.close();

    // The first entry reached the database, then the process died before compacting the file.
    const [firstLine] = linesOf(journalFile(dir));
    const firstEntry = parseEntry(firstLine!);
    await applyEntry(database.db, { receipts: store, claims: new WriteClaims() }, firstEntry, Date.now());
    const claimed = await database.db.select().from(writeIds).where(eq(writeIds.writeId, firstEntry.entryId));
    assert.equal(claimed.length, 1);

    const restarted = await open(dir);
    assert.equal(restarted.pending, 3);
    assert.deepEqual(await restarted.replayNow(), { applied: 2, skipped: 1, rejected: 0, remaining: 0 });
    assert.equal((await receiptRows(wallet, 'p-1')).length, 1);
    assert.equal((await receiptRows(wallet, 'p-2')).length, 1);
    assert.deepEqual(await historyOf(wallet, 'p-1'), ['pending@api', 'checkout_initialized@tracking']);
    await restarted.close();
  });

  test('an entry that can never apply is shown to its merchant, goes to rejected.jsonl and does not block the queue', async () => {
    const dir = dataDir();
    const wallet = randomWallet();
    // Created meanwhile through another instance, with another body.
    await createReceipt(store, 'http://pay.test', body(wallet, 'c-1', 9));
    // No wait for a receipt that might still be in another instance's journal.
    const j = await Journal.open(dir, { database, receipts: store, logger, siteUrl: 'http://pay.test', brandName: 'Shop', dependencyWaitMs: 0 });
    await j.recordReceipt(body(wallet, 'c-1'));
    await j.recordTrackingStatus({ wallet, receiptId: 'nowhere', status: 'link_opened' });
    const ok = await j.recordReceipt(body(wallet, 'c-2'));
    await j.recordTrackingStatus({ wallet, receiptId: 'c-2', status: 'link_opened' });
    logs.length = 0;

    assert.deepEqual(await j.replayNow(), { applied: 2, skipped: 0, rejected: 2, remaining: 0 });
    const rejected = linesOf(path.join(dir, 'journal', 'rejected.jsonl')).map((l) => JSON.parse(l) as Record<string, unknown>);
    assert.deepEqual(
      rejected.map((r) => [r.kind, String(r.reason).split(':')[0]]),
      [
        ['receipt.create', 'conflict'],
        ['receipt.status', 'receipt_not_found'],
      ],
    );
    // Never dropped silently: the merchant sees both, and hears of them as write.rejected.
    const shown = await database.db.select().from(rejectedWrites).where(eq(rejectedWrites.wallet, wallet)).orderBy(rejectedWrites.rejectedAt);
    assert.deepEqual(
      shown.map((r) => [r.kind, r.receiptId, r.reason.split(':')[0]]).sort(),
      [
        ['receipt.create', 'c-1', 'conflict'],
        ['receipt.status', 'nowhere', 'receipt_not_found'],
      ],
    );
    const events = await database.db.select().from(webhookEvents).where(and(eq(webhookEvents.wallet, wallet), eq(webhookEvents.type, 'write.rejected')));
    assert.equal(events.length, 2);
    assert.equal(logs.filter((l) => l.level === 50 && l.msg.includes('rejected.jsonl')).length, 2);
    assert.equal((await receiptRows(wallet, 'c-1'))[0]?.totalCents, 1800n, 'the other instance’s receipt is untouched');
    const detail = JSON.parse(await store.detailJson(wallet, 'c-2', 'Shop')) as { status: string };
    assert.equal(detail.status, 'link_opened');
    assert.equal(ok.paymentUrl, `http://pay.test/pay/c-2?t=${(await receiptRows(wallet, 'c-2'))[0]?.payToken}`);
    await j.close();
  });

  test("a status whose receipt is still in another instance's journal waits for it, holding back only its own receipt", async () => {
    const wallet = randomWallet();
    const a = await open(dataDir());
    const bDir = dataDir();
    const b = await open(bDir);
    // Instance A acknowledged the receipt; B acknowledged two statuses for it, and one for a receipt already stored.
    await createReceipt(store, 'http://pay.test', body(wallet, 'w-2'));
    await a.recordReceipt(body(wallet, 'w-1'));
    await b.recordTrackingStatus({ wallet, receiptId: 'w-1', status: 'link_opened' });
    await b.recordTrackingStatus({ wallet, receiptId: 'w-1', status: 'checkout_initialized' });
    await b.recordTrackingStatus({ wallet, receiptId: 'w-2', status: 'buyer_logged_in' });

    // B replays first: w-1's statuses wait; w-2's applies.
    assert.deepEqual(await b.replayNow(), { applied: 1, skipped: 0, rejected: 0, remaining: 2 });
    assert.equal(b.holds(wallet, 'w-1'), true);
    assert.deepEqual(await a.replayNow(), { applied: 1, skipped: 0, rejected: 0, remaining: 0 });
    // B's next passes (after its back-off) apply both, in their order.
    await until(async () => (await b.replayNow()).remaining === 0, 10_000, "B's statuses to apply", 200);
    assert.deepEqual(await historyOf(wallet, 'w-1'), ['pending@api', 'link_opened@tracking', 'checkout_initialized@tracking']);
    assert.deepEqual(await historyOf(wallet, 'w-2'), ['pending@api', 'buyer_logged_in@tracking']);
    assert.equal(existsSync(path.join(bDir, 'journal', 'rejected.jsonl')), false);
    await a.close();
    await b.close();
  });

  test('a write stored by the database path is not stored again by its journal copy (same write id)', async () => {
    const wallet = randomWallet();
    await createReceipt(store, 'http://pay.test', body(wallet, 'd-1'));
    const write = { id: `test-${wallet}`, hash: 'h' };
    // The database path committed, but its answer was lost (a read timeout): the route journaled it too.
    await recordTrackingStatus(database.db, { wallet, receiptId: 'd-1', status: 'link_opened' }, write);
    const j = await open(dataDir());
    await j.recordTrackingStatus({ wallet, receiptId: 'd-1', status: 'link_opened' }, write);
    await j.recordTrackingStatus({ wallet, receiptId: 'd-1', status: 'link_opened' }, write);
    assert.equal(j.pending, 1, 'a retry of a held write is acknowledged once');
    assert.deepEqual(await j.replayNow(), { applied: 0, skipped: 1, rejected: 0, remaining: 0 });
    const [entry] = await database.db
      .select()
      .from(receiptStatusHistory)
      .where(and(eq(receiptStatusHistory.wallet, wallet), eq(receiptStatusHistory.status, 'link_opened')));
    assert.equal(entry?.count, 1);
    await j.close();
  });

  test('an entry already in rejected.jsonl is not queued again after a crash before compaction', async () => {
    const dir = dataDir();
    const wallet = randomWallet();
    const j = await open(dir);
    await j.recordTrackingStatus({ wallet, receiptId: 'gone', status: 'link_opened' });
    await j.recordReceipt(body(wallet, 'r-1'));
    await j.close();
    const [line] = linesOf(journalFile(dir));
    mkdirSync(path.join(dir, 'journal'), { recursive: true });
    writeFileSync(path.join(dir, 'journal', 'rejected.jsonl'), `${JSON.stringify({ ...JSON.parse(line!), reason: 'not_found' })}\n`);
    const restarted = await open(dir);
    assert.equal(restarted.pending, 1);
    await restarted.close();
  });

  test('during the outage: the same id and body answers the same URL, another body is 409, bad input is never journaled', async () => {
    const dir = dataDir();
    const wallet = randomWallet();
    const j = await open(dir);
    const [x, y] = await Promise.all([j.recordReceipt(body(wallet, 'i-1')), j.recordReceipt(body(wallet, 'i-1'))]);
    assert.deepEqual(x, y);
    await assert.rejects(j.recordReceipt(body(wallet, 'i-1', 3)), Conflict);
    await assert.rejects(j.recordReceipt({ wallet, id: 'i-2', lineItems: [{ label: 'A', priceUsd: 1 }], totalUsd: 2 }), InvalidInput);
    await assert.rejects(j.recordReceipt({ wallet, id: 'bad/id', lineItems: [{ label: 'A', priceUsd: 1 }], totalUsd: 1 }), InvalidInput);
    assert.equal(j.pending, 1);
    assert.equal(linesOf(journalFile(dir)).length, 1);
    await j.close();
    await assert.rejects(j.recordTrackingStatus({ wallet, receiptId: 'i-1', status: 'link_opened' }), /closed/);
  });

  test('whenDrained resolves once the replay loop has applied everything', async () => {
    const dir = dataDir();
    const wallet = randomWallet();
    const j = await Journal.open(dir, { database, receipts: store, logger, siteUrl: 'http://pay.test', replayIntervalMs: 20 });
    await j.recordReceipt(body(wallet, 'd-1'));
    j.start();
    await j.whenDrained();
    assert.equal(j.pending, 0);
    assert.equal((await receiptRows(wallet, 'd-1')).length, 1);
    await j.close();
  });
});
