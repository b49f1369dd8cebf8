/**
 * One rate budget for the provider, in which the chain's own work comes first (issue 23).
 *
 * A hosted provider allows so many calls a second (RPC_RATE_LIMIT) and answers the rest HTTP 429.
 * Most calls are the chain worker's own: reading new blocks, settling, sweeping, and the API's
 * reads for a buyer. Some are spare work that may wait a pass: the looks for money that reached
 * newly stored payment addresses early (src/payments/early-money.ts), hundreds of them after a
 * stranger's dust, and the reads of other balances that payment pages asked for
 * (src/payments/other-money.ts), one per open page. Sharing the limit first come, first served,
 * such work spent the calls that the next block's reading and a payment's sweep needed: the
 * reading met a 429, ended its pass, and the payment waited a block time or two.
 *
 * So work run through `spare()` yields:
 *   - with RPC_RATE_LIMIT set, a spare call is made only while the budget (a bucket of that many
 *     calls that refills continuously) holds more than half of it; the other calls take from the
 *     bucket as they go and, once it is empty, wait for it to refill rather than meet a 429;
 *   - with or without it, for HOLD_MS after any answer HTTP 429, no spare call is made.
 * A spare call that may not go fails at once with SpareHeldBack, which reads as a rate limit
 * (isRateLimited), and goes without the transport's retries, so that a limit ends the spare work
 * of a pass instead of waiting in backoff. The rest keep viem's retries.
 *
 * `transport()` wraps the HTTP transport: its hooks see every request, retries included.
 */
import { AsyncLocalStorage } from 'node:async_hooks';
import { setTimeout as pause } from 'node:timers/promises';
import { http, webSocket, type Transport } from 'viem';
import { causes } from './lagging-nodes.ts';

/** How long spare work stays held after the provider answered 429. */
export const HOLD_MS = 1_000;

/** A spare call the budget did not let go: read as a rate limit by its caller. */
export class SpareHeldBack extends Error {
  /** As a provider's rate limit says it (src/chain/lagging-nodes.ts isRateLimited). */
  readonly status = 429;
  constructor() {
    super('spare work held back: the rate budget keeps its room for the chain’s own reads');
    this.name = 'SpareHeldBack';
  }
}

/** Runs `work` as spare work of `budget` (RpcBudget.spare), or as it is when the chain has no budget. */
export function asSpare<T>(budget: RpcBudget | undefined, work: () => Promise<T>): Promise<T> {
  return budget === undefined ? work() : budget.spare(work);
}

/** Whether `err` (or one of its causes) is a spare call the budget held back. */
export function isHeldBack(err: unknown): boolean {
  for (const e of causes(err)) if (e instanceof SpareHeldBack) return true;
  return false;
}

export class RpcBudget {
  private readonly spareWork = new AsyncLocalStorage<true>();
  private tokens: number;
  private at: number;
  private heldUntil = 0;
  /** Spare calls held back and 429 answers seen, for the logs and the tests. */
  readonly counts = { heldBack: 0, limited: 0 };

  constructor(
    /** Calls a second the provider allows; null when not known (then only 429s hold spare work). */
    readonly perSecond: number | null,
    private readonly now: () => number = Date.now,
  ) {
    this.tokens = perSecond ?? 0;
    this.at = now();
  }

  /** Runs `work` as spare work: its calls yield to every other call (module comment). */
  spare<T>(work: () => Promise<T>): Promise<T> {
    return this.spareWork.run(true, work);
  }

  /** Whether the caller runs as spare work. */
  isSpare(): boolean {
    return this.spareWork.getStore() === true;
  }

  /** Takes the budget for one spare call, or throws SpareHeldBack. */
  takeSpare(): void {
    this.refill();
    const room = this.perSecond === null || this.tokens - 1 >= this.perSecond / 2;
    if (this.now() < this.heldUntil || !room) {
      this.counts.heldBack++;
      throw new SpareHeldBack();
    }
    if (this.perSecond !== null) this.tokens -= 1;
  }

  /** Before each HTTP request of other work: waits while the bucket is empty. */
  async beforeRequest(): Promise<void> {
    if (this.perSecond === null || this.isSpare()) return;
    for (this.refill(); this.tokens < 1; this.refill()) {
      await pause(Math.ceil(((1 - this.tokens) / this.perSecond) * 1000));
    }
    this.tokens -= 1;
  }

  /** After each HTTP answer: a 429 holds spare work and empties the bucket. */
  afterResponse(status: number): void {
    if (status !== 429) return;
    this.counts.limited++;
    this.heldUntil = this.now() + HOLD_MS;
    this.tokens = Math.min(this.tokens, 0);
  }

  /** The transport to `url` with this budget: spare calls checked first and made without retries. */
  transport(url: string, timeout: number): Transport {
    const inner = url.startsWith('ws')
      ? webSocket(url, { timeout })
      : http(url, { timeout, onFetchRequest: () => this.beforeRequest(), onFetchResponse: (r) => this.afterResponse(r.status) });
    return (params) => {
      const t = inner(params);
      const request = ((args, options) => {
        if (!this.isSpare()) return t.request(args, options);
        return this.spareCall(() => t.request(args, { ...options, retryCount: 0 }));
      }) as typeof t.request;
      return { ...t, request };
    };
  }

  /** A spare call: made if the budget lets it go (else rejected with SpareHeldBack). */
  private async spareCall<T>(call: () => Promise<T>): Promise<T> {
    this.takeSpare();
    return call();
  }

  private refill(): void {
    const now = this.now();
    if (this.perSecond !== null) this.tokens = Math.min(this.perSecond, this.tokens + ((now - this.at) / 1000) * this.perSecond);
    this.at = now;
  }
}
