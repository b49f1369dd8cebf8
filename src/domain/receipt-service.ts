/**
 * Receipts as the developer API serves them, with the one policy every receipt operation shares:
 * the database, else the journal (DESIGN.md "Degraded mode").
 *
 * - A write goes to the database. When the database is unreachable, or a commit's outcome is
 *   unknown, it goes to the journal under the same write id (src/journal/journal.ts), and the
 *   answer says `degraded: true`: the replay, or a retry, stores it exactly once.
 * - While the journal still holds writes for a receipt, later writes for it join the journal
 *   behind them, so their order is kept.
 * - A read comes from the database; while it is unreachable, a receipt the journal holds is
 *   answered from there (also in the moment between the database's return and the replay), and
 *   a list answers empty and flagged (`orDegraded`).
 *
 * Built once per app (src/deps.ts) with its clock, so each route handler is one call.
 */
import type { Db } from '../db/client.ts';
import { isDbDown } from '../lib/db-errors.ts';
import type { Journal } from '../journal/journal.ts';
import { AppError, CommitOutcomeUnknown, DatabaseUnavailable, Forbidden, InvalidInput, NotFound } from '../lib/errors.ts';
import {
  checkStatusBody,
  createReceipt,
  isSensitiveStatus,
  isTrackingStatus,
  findReceipt,
  getReceiptStatus,
  NO_REFUNDS,
  payTokenFor,
  paymentUrl,
  recordTrackingStatus,
  TrackedNothing,
  TRACKING_STATUSES,
  type CreateReceiptParams,
  type TrackingStatus,
} from './receipts.ts';
import { DEGRADED, orDegraded, type Degraded } from './degraded.ts';
import type { Write } from './writes.ts';
import type { ReceiptPage, ReceiptStore } from '../db/receipt-store.ts';
import type { WriteClaims } from '../db/write-claims.ts';
import { assertReturnOriginAllowed, parseReturnUrl, type ReturnUrlPolicy } from './return-url.ts';
import { setSensitiveStatus } from './sensitive-status.ts';
import { getShopSettings } from './shop.ts';
import type { CreatedReceipt, Receipt, ReceiptStatusView } from '../contract/receipts.ts';

/** How many receipts an export reads at a time: the list's largest page. */
const EXPORT_PAGE = 200;

/** An answer the database built as JSON text, sent as it is (src/http/json-text.ts). */
export class JsonText {
  constructor(readonly text: string) {}
}

export interface ReceiptServiceOptions {
  db: Db;
  /** The app's receipts store (src/db/receipt-store.ts). */
  store: ReceiptStore;
  /** The app's write-id claims (src/db/write-claims.ts), for sensitive and tracking statuses; deps passes stores.claims. */
  claims?: WriteClaims;
  journal: Journal;
  siteUrl: string;
  /** The brand of merchants who have not named their shop. */
  brandName: string;
  receiptTtlMinutes: number;
  /** Derives each receipt's pay token, so its payment URL is the same on any instance and attempt. */
  payTokenSecret: Uint8Array;
  /** The token receipts are paid in, when a chain is configured. */
  usdcAddress?: string;
  /** Whether a returnUrl may use http on localhost (the dev chain): src/domain/return-url.ts. */
  returnUrlPolicy?: ReturnUrlPolicy;
  now?: () => number;
}

export type CreateReceiptInput = Omit<CreateReceiptParams, 'wallet'>;

/** POST /api/receipts/status as sent. */
export interface RecordStatusParams {
  /** The body, unchecked: recordStatus checks it in the specification's order (checkStatusBody). */
  body: unknown;
  /** The admin session's wallet, asked for only when the status is sensitive; a missing session answers 403. */
  session(): Promise<{ wallet: string }>;
  write: Write;
}

export class ReceiptService {
  private readonly now: () => number;
  /** Each merchant's allowed origins as last read: a create's returnUrl is checked against them while the database is away. */
  readonly #origins = new LastRead<readonly string[]>(MAX_REMEMBERED_SHOPS);

  constructor(private readonly o: ReceiptServiceOptions) {
    this.now = o.now ?? Date.now;
  }

  /** POST /api/receipts: stored, or journaled while the database is away; the same URL either way. */
  async create(wallet: string, input: CreateReceiptInput, write: Write): Promise<CreatedReceipt | (CreatedReceipt & Degraded)> {
    const { journal } = this.o;
    const params = { wallet, ...input, returnUrl: await this.#checkedReturnUrl(wallet, input.id, input.returnUrl) };
    // One token and write id for both paths: a create whose commit landed but whose answer was
    // lost (or that timed out) replays as itself.
    const attempt = { payToken: payTokenFor(this.o.payTokenSecret, wallet, params.id), createdAt: this.now(), ttlMinutes: this.o.receiptTtlMinutes };
    // While the journal still holds this receipt, it answers (same paymentUrl, or 409).
    if (!journal.holds(wallet, params.id)) {
      try {
        return await createReceipt(this.o.store, this.o.siteUrl, params, { ...attempt, writeId: write.id });
      } catch (err) {
        if (!isDbDown(err)) throw err;
      }
    }
    return { ...(await journal.recordReceipt(params, attempt, write)), ...DEGRADED };
  }

  /**
   * A create's returnUrl, checked against the deployment's rules and the shop's allowed origins
   * (src/domain/return-url.ts). Only a create that sends one reads the shop's settings, and each
   * read is remembered (`#origins`). With the database away, the origins last read stand in: a
   * URL of another origin is refused as it would be with the database up. A merchant this app
   * has not read since it started is accepted unchecked and journaled: the write is acknowledged
   * and never lost, and the payment page links to a returnUrl only while its origin is among the
   * shop's allowed origins, which it checks at every display (returnUrlShown), so an origin the
   * shop does not allow is never linked to (docs/decisions.md "returnUrl while the database is
   * away"). A retry of a create that already stored this receipt with this returnUrl passes even
   * if the shop has since withdrawn the origin: it answers as the first did (while the database
   * is away, only one the journal still holds can be told apart: any other is refused).
   */
  async #checkedReturnUrl(wallet: string, id: string, value: unknown): Promise<string | null> {
    const url = parseReturnUrl(value, this.o.returnUrlPolicy ?? { allowLoopbackHttp: false });
    if (url === null) return null;
    let origins: readonly string[];
    try {
      origins = (await getShopSettings(this.o.db, wallet)).allowedEmbedOrigins;
      this.#origins.remember(wallet, origins);
    } catch (err) {
      if (!isDbDown(err)) throw err;
      const known = this.#origins.get(wallet);
      // Unknown here: accepted, journaled by create (its store is as unreachable as this read).
      if (known === undefined) return url;
      origins = known;
    }
    try {
      assertReturnOriginAllowed(url, origins);
    } catch (refused) {
      // With the database away, only the journal's copy can show a retry; else the refusal stands.
      const stored = await this.o.store.find(this.o.db, wallet, id).catch((err: unknown) => {
        if (err instanceof NotFound || isDbDown(err)) return this.o.journal.findReceipt(wallet, id);
        throw err;
      });
      if (stored?.returnUrl !== url) throw refused;
    }
    return url;
  }

  /**
   * GET /api/receipts: one page of the merchant's receipts, newest first, as JSON text with
   * `has_more`; empty and flagged while the database is away. A `startingAfter` that names no
   * receipt of this merchant (another merchant's included) is invalid input.
   */
  list(wallet: string, page: ReceiptPage): Promise<JsonText | ({ receipts: never[]; has_more: false } & Degraded)> {
    return orDegraded(
      async () => {
        const found = await this.o.store.pageJson(wallet, page, this.o.brandName, this.o.usdcAddress);
        if (found === 'unknown_cursor') throw new InvalidInput(`starting_after: no receipt ${JSON.stringify(page.startingAfter)}`);
        return new JsonText(`{"receipts":${found.json},"has_more":${found.hasMore}}`);
      },
      { receipts: [] as never[], has_more: false as const },
    );
  }

  /**
   * GET /api/receipts?format=csv: every receipt the filters match, newest first, as pages read the
   * way the list reads them (EXPORT_PAGE at a time, each continuing after the last). The first page
   * is read before this returns, so an unknown starting_after is 400 and an unreachable database
   * 503 before anything is sent; a failure on a later page ends the stream early.
   */
  async exportPages(wallet: string, filters: Omit<ReceiptPage, 'limit'>): Promise<AsyncGenerator<Receipt[]>> {
    const read = async (startingAfter: string | undefined) => {
      let found;
      try {
        found = await this.o.store.pageJson(wallet, { ...filters, limit: EXPORT_PAGE, startingAfter }, this.o.brandName);
      } catch (err) {
        throw isDbDown(err) && !(err instanceof DatabaseUnavailable) ? new DatabaseUnavailable(err) : err;
      }
      if (found === 'unknown_cursor') throw new InvalidInput(`starting_after: no receipt ${JSON.stringify(startingAfter)}`);
      // The database wrote this JSON from the list's own view (src/db/receipt-views.ts).
      return { receipts: JSON.parse(found.json) as Receipt[], hasMore: found.hasMore };
    };
    const first = await read(filters.startingAfter);
    return (async function* () {
      let page = first;
      yield page.receipts;
      while (page.hasMore && page.receipts.length > 0) {
        page = await read(page.receipts[page.receipts.length - 1]!.receiptId);
        yield page.receipts;
      }
    })();
  }

  /**
   * GET /api/receipts/:id with its history, as JSON text. `withPaymentUrl`: the admin app's view,
   * which shows the payment link again. A receipt the journal holds answers from there.
   */
  async detail(wallet: string, id: string, opts: { withPaymentUrl: boolean }): Promise<JsonText | object> {
    const { db } = this.o;
    try {
      const json = await this.o.store.detailJson(wallet, id, this.o.brandName, this.o.usdcAddress);
      if (!opts.withPaymentUrl) return new JsonText(json);
      const row = await findReceipt(db, wallet, id);
      return new JsonText(withField(json, 'paymentUrl', paymentUrl(this.o.siteUrl, row.id, row.payToken)));
    } catch (err) {
      const pending = this.o.journal.findReceipt(wallet, id);
      if (pending !== undefined && (isDbDown(err) || err instanceof NotFound)) return { ...pending, ...NO_REFUNDS, token: this.o.usdcAddress ?? null, ...DEGRADED };
      if (isDbDown(err)) throw new DatabaseUnavailable(err);
      throw err;
    }
  }

  /** GET /api/receipts/status. */
  status(wallet: string, id: string): Promise<ReceiptStatusView> {
    return getReceiptStatus(this.o.db, wallet, id, this.o.usdcAddress ?? null);
  }

  /**
   * POST /api/receipts/status: a tracking status, with no credential (#track), or a sensitive one
   * that the receipt's merchant sets from the admin app with its session.
   */
  async recordStatus(p: RecordStatusParams): Promise<{ ok: true } | ({ ok: true } & Degraded)> {
    const { receiptId, wallet, status } = checkStatusBody(p.body);
    if (isSensitiveStatus(status)) {
      const session = await p.session().catch((err: unknown) => {
        // The spec answers 403 here, whether the session is missing or the CSRF token is wrong.
        if (err instanceof AppError && err.status === 401) throw new Forbidden(`${status} can only be set from the admin app with a signed-in session`);
        throw err;
      });
      await setSensitiveStatus(this.o.db, { wallet, receiptId, status, by: session.wallet }, this.now(), p.write, this.o.claims);
      return { ok: true };
    }
    if (!isTrackingStatus(status)) throw new InvalidInput(`status must be one of ${TRACKING_STATUSES.join(', ')}`);
    return this.#track(wallet, receiptId, status, p.write);
  }

  /**
   * A tracking status (POST /api/receipts/status, no credential). Answers the same whether or
   * not the receipt exists, so the route tells nobody which receipts there are.
   *
   * While the database is away, only a status for a receipt the journal holds is journaled: for
   * any other the service cannot tell a real receipt from a made-up id, and journaling it would
   * let a stranger plant "rejected writes" (and write.rejected webhooks) in any merchant's
   * account. Those answer 503 with Retry-After: nothing was written, retry later.
   */
  async #track(merchant: string, receiptId: string, status: TrackingStatus, write: Write): Promise<{ ok: true } | ({ ok: true } & Degraded)> {
    const { db, journal } = this.o;
    // Statuses for a receipt with writes still in the journal queue behind them, keeping their order.
    if (!journal.holds(merchant, receiptId)) {
      try {
        await recordTrackingStatus(db, { wallet: merchant, receiptId, status }, write, this.o.claims);
        return { ok: true };
      } catch (err) {
        // An unknown receipt whose COMMIT went unanswered answers as a known one does then, but
        // nothing is journaled for it: nobody plants writes in a merchant's journal.
        if (err instanceof TrackedNothing && err.commitUnanswered) return { ok: true, ...DEGRADED };
        if (err instanceof NotFound) return { ok: true };
        // A commit whose outcome is unknown found the receipt first (it exists): the journal's
        // copy carries the same write id, so it changes nothing at replay if the first one landed.
        if (!(err instanceof CommitOutcomeUnknown)) {
          if (isDbDown(err)) throw err instanceof DatabaseUnavailable ? err : new DatabaseUnavailable(err);
          throw err;
        }
      }
    }
    await journal.recordTrackingStatus({ wallet: merchant, receiptId, status }, write);
    return { ok: true, ...DEGRADED };
  }
}

/** How many merchants' allowed origins one app remembers; the least recently read go first. */
const MAX_REMEMBERED_SHOPS = 10_000;

/** A bounded map of values as last read, the least recently read dropped first. */
class LastRead<T> {
  readonly #values = new Map<string, T>();
  constructor(private readonly max: number) {}

  remember(key: string, value: T): void {
    this.#values.delete(key);
    this.#values.set(key, value);
    if (this.#values.size > this.max) this.#values.delete(this.#values.keys().next().value!);
  }

  get(key: string): T | undefined {
    return this.#values.get(key);
  }
}

/** `json` (one JSON object as text) with `field` added as its last member. */
function withField(json: string, field: string, value: string): string {
  return `${json.slice(0, json.lastIndexOf('}'))},${JSON.stringify(field)}:${JSON.stringify(value)}}`;
}
