/**
 * Durable local journal for writes acknowledged while the database is unreachable.
 *
 * Each write is appended to `<dataDir>/journal/journal.jsonl` and fsync'd before it is
 * acknowledged. A replay loop applies the entries in order once the database answers again, each
 * exactly once: an entry's id is its write's id (src/domain/writes.ts), so an entry whose write
 * already reached the database (a commit whose answer was lost, a retry on another instance)
 * changes nothing. A status whose receipt is not in the database yet (still in another instance's
 * journal) waits and is retried, holding back only the later statuses of its receipt. An entry
 * that can never apply is recorded for the merchant (rejected_writes, the write.rejected event)
 * and in `rejected.jsonl`, so it cannot block the ones behind it and is never dropped silently.
 */
import { randomUUID } from 'node:crypto';
import { mkdir, readFile } from 'node:fs/promises';
import path from 'node:path';
import type { Logger } from 'pino';
import type { Database } from '../db/client.ts';
import type { ReceiptStore } from '../db/receipt-store.ts';
import { WriteClaims } from '../db/write-claims.ts';
import { isDbDown } from '../lib/db-errors.ts';
import { AppError, Conflict, InvalidInput, JournalUnavailable, NotFound } from '../lib/errors.ts';
import type { Write } from '../domain/writes.ts';
import { centsToUsd } from '../lib/money.ts';
import {
  isTrackingStatus,
  lineItemViews,
  newPayToken,
  paymentUrl,
  prepareReceipt,
  paymentState,
  expiryOf,
  DEFAULT_TTL_MINUTES,
  type CreateReceiptParams,
} from '../domain/receipts.ts';
import type { CreatedReceipt, ReceiptDetail, StatusHistoryEntry, TrackingStatus } from '../contract/receipts.ts';
import { AppendLog, appendDurably } from './append-log.ts';
import { applyEntry, parseEntry, receiptIdOf, receiptKey, recordRejection, type JournalEntry, type ReceiptCreatePayload } from './entries.ts';
import { SlotQueue, type Slot } from './queue.ts';

/**
 * A receipt still in the journal, as GET /api/receipts/:id shows it: no refunds or transfers yet
 * (the route adds NO_REFUNDS and the degraded flag).
 */
export type JournaledReceipt = Omit<ReceiptDetail, 'refundedUsd' | 'payer' | 'token' | 'refunds' | 'paymentUrl' | 'degraded' | 'reason'>; // token: the app's, added by ReceiptService
/** What POST /api/receipts answers for a journaled receipt (the route adds the degraded flag). */
export type JournaledCreation = Omit<CreatedReceipt, 'degraded' | 'reason'>;

export interface JournalOptions {
  database: Database;
  /** The app's receipts store, which stores the journaled creations. */
  receipts: ReceiptStore;
  /** The app's write-id claims (stores.claims), which the replay claims each entry's id with; its own when absent (tests). */
  claims?: WriteClaims;
  logger: Logger;
  siteUrl: string;
  /** Brand shown on receipts answered from the journal. */
  brandName?: string;
  /** How often the replay loop looks for the database while entries wait. */
  replayIntervalMs?: number;
  /** Passes an entry may fail with an unexpected error before it is rejected. */
  maxAttempts?: number;
  /**
   * How long a status may wait for its receipt to reach the database (from another instance's
   * journal) before it counts as never applicable: JOURNAL_WAIT_MINUTES, a day by default.
   */
  dependencyWaitMs?: number;
}

export interface ReplayResult {
  applied: number;
  skipped: number;
  rejected: number;
  /** Entries still waiting after the pass. */
  remaining: number;
}

/** Entries for one receipt that are written or being written and not yet applied. */
interface Held {
  create?: Slot & { entry: { payload: ReceiptCreatePayload } };
  slots: Slot[];
}

/** Compact this often during a long replay, so a crash mid-way re-reads less. */
const COMPACT_EVERY = 10_000;

export class Journal {
  /** Unapplied entries in the order they were written. */
  private readonly slots = new SlotQueue();
  private readonly held = new Map<string, Held>();
  private readonly attempts = new Map<string, number>();
  /** Statuses waiting for their receipt: entry id → when to try again. */
  private readonly deferred = new Map<string, { until: number; tries: number }>();
  private readonly drainWaiters: (() => void)[] = [];
  private timer: NodeJS.Timeout | undefined;
  private replaying: Promise<ReplayResult> | undefined;
  private started = false;
  private closed = false;

  /** What the replay stores entries with: the app's receipts store and write-id claims. */
  private readonly stores: { receipts: ReceiptStore; claims: WriteClaims };

  private constructor(
    private readonly opts: JournalOptions,
    private readonly log: AppendLog,
    private readonly rejectedPath: string,
  ) {
    this.stores = { receipts: opts.receipts, claims: opts.claims ?? new WriteClaims() };
  }

  static async open(dataDir: string, opts: JournalOptions): Promise<Journal> {
    const dir = path.join(dataDir, 'journal');
    await mkdir(dir, { recursive: true, mode: 0o700 });
    const rejectedPath = path.join(dir, 'rejected.jsonl');
    const rejected = await readRejectedIds(rejectedPath, opts.logger);
    const { log, lines, tornTail } = await AppendLog.open(path.join(dir, 'journal.jsonl'));
    if (tornTail > 0) {
      opts.logger.warn({ bytes: tornTail }, 'journal: ignored a torn last line (a write cut short by a crash, never acknowledged)');
    }
    const journal = new Journal(opts, log, rejectedPath);
    const seen = new Set<string>();
    lines.forEach((line, i) => {
      let entry: JournalEntry;
      try {
        entry = parseEntry(line);
      } catch (err) {
        opts.logger.error({ line: i + 1, err }, 'journal: skipped an unreadable entry');
        return;
      }
      if (seen.has(entry.entryId) || rejected.has(entry.entryId)) return;
      seen.add(entry.entryId);
      journal.track({ entry, state: 'durable', written: Promise.resolve() });
    });
    if (journal.pending > 0) {
      opts.logger.warn({ pending: journal.pending }, 'journal: recovered writes waiting for the database');
    }
    return journal;
  }

  /** Writes waiting for the database. */
  get pending(): number {
    return this.slots.durable;
  }

  /** True while a write for this receipt waits in the journal: later writes for it must queue behind. */
  holds(wallet: string, receiptId: string): boolean {
    return this.held.has(receiptKey(wallet, receiptId));
  }

  /**
   * Journals a receipt creation. Input is checked as the database path checks it (a 400 is never
   * journaled); the same id and body answers the same paymentUrl, a different body is a conflict.
   * `attempt` carries the token and time already tried against the database, so a create whose
   * commit reached the database but whose answer was lost replays as the same receipt.
   */
  async recordReceipt(
    params: CreateReceiptParams,
    attempt: { payToken?: string; createdAt?: number; ttlMinutes?: number } = {},
    write?: Write,
  ): Promise<JournaledCreation> {
    const prepared = prepareReceipt(params);
    const existing = this.held.get(receiptKey(params.wallet, params.id))?.create;
    if (existing !== undefined) {
      if (existing.entry.payload.requestHash !== prepared.requestHash) {
        throw new Conflict(`Receipt ${params.id} already exists with a different body`);
      }
      await existing.written;
      return this.created(existing.entry.payload);
    }
    const createdAt = attempt.createdAt ?? Date.now();
    const payload: ReceiptCreatePayload = {
      id: params.id,
      lineItems: prepared.stored,
      totalCents: prepared.totalCents.toString(),
      requestHash: prepared.requestHash,
      payToken: attempt.payToken ?? newPayToken(),
      createdAt,
      expiresAt: expiryOf(createdAt, params.expiresInMinutes, attempt.ttlMinutes ?? DEFAULT_TTL_MINUTES),
      ...(Object.keys(prepared.metadata).length === 0 ? {} : { metadata: prepared.metadata }),
      ...(prepared.returnUrl === null ? {} : { returnUrl: prepared.returnUrl }),
    };
    await this.write({ entryId: write?.id ?? randomUUID(), at: Date.now(), kind: 'receipt.create', wallet: params.wallet, payload });
    return this.created(payload);
  }

  async recordTrackingStatus(p: { wallet: string; receiptId: string; status: TrackingStatus; at?: number }, write?: Write): Promise<void> {
    if (!isTrackingStatus(p.status)) throw new InvalidInput(`${String(p.status)} is not a tracking status`);
    if (p.receiptId === '') throw new InvalidInput('receiptId is required', 'missing_receipt_id');
    // The same write again (a retry with its Idempotency-Key) is already held: acknowledged once.
    const same = write && this.held.get(receiptKey(p.wallet, p.receiptId))?.slots.find((s) => s.entry.entryId === write.id);
    if (same) return same.written;
    const at = p.at ?? Date.now();
    await this.write({
      entryId: write?.id ?? randomUUID(),
      at,
      kind: 'receipt.status',
      wallet: p.wallet,
      payload: { receiptId: p.receiptId, status: p.status, at },
    });
  }

  /** A receipt still waiting in the journal, shaped as getReceipt answers it. */
  findReceipt(wallet: string, id: string): JournaledReceipt | undefined {
    const held = this.held.get(receiptKey(wallet, id));
    const create = held?.create;
    if (held === undefined || create === undefined || create.state !== 'durable') return undefined;
    const p = create.entry.payload;
    const history: StatusHistoryEntry[] = [{ status: 'pending', at: p.createdAt, source: 'api' }];
    for (const s of held.slots) {
      if (s.state === 'durable' && s.entry.kind === 'receipt.status') {
        history.push({ status: s.entry.payload.status, at: s.entry.payload.at, source: 'tracking' });
      }
    }
    return {
      receiptId: p.id,
      totalUsd: centsToUsd(BigInt(p.totalCents)),
      currency: 'USD',
      lineItems: lineItemViews(p.lineItems),
      createdAt: p.createdAt,
      metadata: p.metadata ?? {},
      returnUrl: p.returnUrl ?? null,
      brandName: this.opts.brandName ?? 'Splitline',
      status: history[history.length - 1]!.status,
      ...paymentState({ exception: null, expiresAt: p.expiresAt ?? expiryOf(p.createdAt, undefined, DEFAULT_TTL_MINUTES), paidUnits: '0', totalCents: BigInt(p.totalCents) }),
      payTo: null,
      jurisdictionCode: null,
      taxRate: 0,
      taxComponents: [],
      statusHistory: history,
    };
  }

  /** Starts the replay loop: while entries wait, it tries the database every interval. */
  start(): void {
    if (this.started || this.closed) return;
    this.started = true;
    this.schedule();
  }

  /** One replay pass now (joins a pass already running). */
  replayNow(): Promise<ReplayResult> {
    this.replaying ??= this.replayPass().finally(() => {
      this.replaying = undefined;
    });
    return this.replaying;
  }

  /** Resolves once no entry waits and the file is compacted (at once when the journal is empty). */
  whenDrained(): Promise<void> {
    if (this.slots.size === 0) return Promise.resolve();
    return new Promise((resolve) => this.drainWaiters.push(resolve));
  }

  async close(): Promise<void> {
    this.closed = true;
    clearTimeout(this.timer);
    if (this.replaying !== undefined) await this.replaying;
    await this.log.close();
  }

  private schedule(): void {
    if (this.closed) return;
    this.timer = setTimeout(() => {
      const pass = this.pending > 0 ? this.replayNow() : Promise.resolve();
      pass
        .catch((err: unknown) => this.opts.logger.error({ err }, 'journal: replay pass failed'))
        .finally(() => this.schedule());
    }, this.opts.replayIntervalMs ?? 1000);
    this.timer.unref();
  }

  private created(p: ReceiptCreatePayload): JournaledCreation {
    return { id: p.id, paymentUrl: paymentUrl(this.opts.siteUrl, p.id, p.payToken), status: 'pending' };
  }

  /** Appends an entry and resolves once it is on disk; until then it already holds its receipt. */
  private async write(entry: JournalEntry): Promise<void> {
    if (this.closed) throw new Error('The journal is closed');
    let slot!: Slot;
    const written = this.log.append(JSON.stringify(entry), () => this.slots.markDurable(slot));
    slot = { entry, state: 'writing', written };
    this.track(slot);
    try {
      await written;
    } catch (err) {
      this.opts.logger.error({ err, entryId: entry.entryId }, 'journal: write failed; the request is not acknowledged');
      this.untrack(slot);
      this.notifyIfDrained();
      throw new JournalUnavailable(err);
    }
  }

  private track(slot: Slot): void {
    this.slots.push(slot);
    const key = receiptKey(slot.entry.wallet, receiptIdOf(slot.entry));
    let held = this.held.get(key);
    if (held === undefined) {
      held = { slots: [] };
      this.held.set(key, held);
    }
    held.slots.push(slot);
    if (slot.entry.kind === 'receipt.create' && held.create === undefined) held.create = slot as Held['create'];
  }

  private untrack(slot: Slot): void {
    this.slots.remove(slot);
    this.attempts.delete(slot.entry.entryId);
    this.deferred.delete(slot.entry.entryId);
    const key = receiptKey(slot.entry.wallet, receiptIdOf(slot.entry));
    const held = this.held.get(key);
    if (held !== undefined) {
      if (held.create === slot) delete held.create;
      const i = held.slots.indexOf(slot);
      if (i >= 0) held.slots.splice(i, 1);
      if (held.slots.length === 0) this.held.delete(key);
    }
  }

  private notifyIfDrained(): void {
    if (this.slots.size === 0) this.drainWaiters.splice(0).forEach((resolve) => resolve());
  }

  private async replayPass(): Promise<ReplayResult> {
    const result: ReplayResult = { applied: 0, skipped: 0, rejected: 0, remaining: this.pending };
    if (result.remaining === 0) return result;
    const { database, logger } = this.opts;
    try {
      await database.ping();
    } catch (err) {
      if (!isDbDown(err)) logger.error({ err }, 'journal: database check failed');
      return result;
    }
    logger.info({ pending: result.remaining }, 'journal: database is back; replay starting');
    // Receipts with a status waiting in this pass: their later statuses wait behind it (a create
    // does not depend on a status, so it goes ahead).
    const waiting = new Set<string>();
    const now = Date.now();
    let stopped = false;
    for (const slot of [...this.slots.durableSlots()]) {
      if (this.closed) break;
      const { entry } = slot;
      const key = receiptKey(entry.wallet, receiptIdOf(entry));
      if (entry.kind === 'receipt.status' && (waiting.has(key) || (this.deferred.get(entry.entryId)?.until ?? 0) > now)) {
        waiting.add(key);
        continue;
      }
      const step = await this.replayOne(slot, result);
      if (step === 'stop') {
        stopped = true;
        break;
      }
      if (step === 'wait') {
        waiting.add(key);
        continue;
      }
      const done = result.applied + result.skipped + result.rejected;
      if (done % 1000 === 0) logger.info({ done, pending: this.pending }, 'journal: replay progress');
      if (done % COMPACT_EVERY === 0) await this.compact();
    }
    if (result.applied + result.skipped + result.rejected > 0) await this.compact();
    result.remaining = this.pending;
    if (!stopped && this.deferred.size > 0) {
      logger.info({ waiting: this.deferred.size }, 'journal: statuses wait for receipts not yet in the database (another instance may still hold them)');
    }
    logger.info(result, 'journal: replay finished');
    this.notifyIfDrained();
    return result;
  }

  private async replayOne(slot: Slot, result: ReplayResult): Promise<'next' | 'stop' | 'wait'> {
    const { entry } = slot;
    const { logger } = this.opts;
    try {
      const applied = await applyEntry(this.opts.database.db, this.stores, entry, Date.now());
      result[applied.outcome]++;
      if (applied.tokenMismatch) {
        logger.warn(
          { entryId: entry.entryId, wallet: entry.wallet, receiptId: receiptIdOf(entry) },
          'journal: receipt already existed with the same body; the payment URL handed out during the outage carries another token',
        );
      }
      this.untrack(slot);
      return 'next';
    } catch (err) {
      if (isDbDown(err)) {
        logger.warn({ err, pending: this.pending }, 'journal: database went away during replay; will retry');
        return 'stop';
      }
      let reason: string;
      if (err instanceof NotFound && entry.kind === 'receipt.status') {
        // Its receipt may still be in another instance's journal: wait for it, up to a limit.
        if (Date.now() - entry.at < (this.opts.dependencyWaitMs ?? 24 * 3600_000)) {
          const tries = (this.deferred.get(entry.entryId)?.tries ?? 0) + 1;
          this.deferred.set(entry.entryId, { until: Date.now() + Math.min(500 * 2 ** Math.min(tries, 10), 60_000), tries });
          return 'wait';
        }
        reason = `receipt_not_found: no receipt ${entry.payload.receiptId} reached the database within the wait for it`;
      } else if (err instanceof AppError && err.status < 500) {
        reason = `${err.code}: ${err.message}`;
      } else {
        const attempts = (this.attempts.get(entry.entryId) ?? 0) + 1;
        this.attempts.set(entry.entryId, attempts);
        if (attempts < (this.opts.maxAttempts ?? 5)) {
          logger.error({ err, entryId: entry.entryId, attempts }, 'journal: entry failed to apply; will retry');
          return 'stop';
        }
        reason = `failed ${attempts} times: ${err instanceof Error ? err.message : String(err)}`;
      }
      if (!(await this.reject(slot, reason))) return 'stop';
      result.rejected++;
      return 'next';
    }
  }

  /**
   * Records an entry that can never apply for its merchant (rejected_writes and a write.rejected
   * event) and moves it to rejected.jsonl; false when either cannot be written, and it stays queued.
   */
  private async reject(slot: Slot, reason: string): Promise<boolean> {
    const { entry } = slot;
    const { logger } = this.opts;
    try {
      await recordRejection(this.opts.database.db, entry, reason, Date.now());
    } catch (err) {
      logger.error({ err, entryId: entry.entryId }, 'journal: could not record a rejected entry for its merchant; it stays queued');
      return false;
    }
    try {
      await appendDurably(this.rejectedPath, [JSON.stringify({ ...entry, rejectedAt: Date.now(), reason })]);
    } catch (err) {
      logger.error({ err, entryId: entry.entryId }, 'journal: could not write rejected.jsonl; the entry stays queued');
      return false;
    }
    logger.error(
      { entryId: entry.entryId, kind: entry.kind, wallet: entry.wallet, receiptId: receiptIdOf(entry), reason, file: this.rejectedPath },
      'journal: entry can never apply; moved to rejected.jsonl',
    );
    this.untrack(slot);
    return true;
  }

  /** Rewrites the file with the entries still waiting. A failure leaves the old file, which is safe to replay. */
  private async compact(): Promise<void> {
    try {
      await this.log.rewrite(() => Array.from(this.slots.durableSlots(), (s) => JSON.stringify(s.entry)));
    } catch (err) {
      this.opts.logger.error({ err }, 'journal: compaction failed; applied entries will be skipped on the next replay');
    }
  }
}

/** Ids of entries already moved to rejected.jsonl, so a crash before compaction does not reject them twice. */
async function readRejectedIds(file: string, logger: Logger): Promise<Set<string>> {
  const ids = new Set<string>();
  let text: string;
  try {
    text = await readFile(file, 'utf8');
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return ids;
    throw err;
  }
  for (const line of text.split('\n')) {
    if (line.trim() === '') continue;
    try {
      const raw: unknown = JSON.parse(line);
      const id = typeof raw === 'object' && raw !== null ? (raw as { entryId?: unknown }).entryId : undefined;
      if (typeof id === 'string') ids.add(id);
    } catch (err) {
      logger.warn({ err, file }, 'journal: skipped an unreadable line in rejected.jsonl');
    }
  }
  return ids;
}
