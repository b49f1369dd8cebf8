/**
 * The fetch every request of the client goes through: it gives each write one Idempotency-Key for
 * all its attempts, and tries a request again when the network failed or the service said to
 * (408, 429, 500, 502, 503, 504), waiting as Retry-After says or backing off with jitter.
 *
 * Why every one of those is safe to repeat (the service's DESIGN.md, "Writes, retries and
 * instances"): a read changes nothing; a POST carries its key, so a repeat of a write that did
 * land answers as the first call did (`Idempotent-Replayed: true`) and writes nothing twice. A
 * 503 with Retry-After promises the write did not happen; a 500 `failed` means the service does
 * not know whether its commit landed, and the repeat with the same key is how to find out.
 */
import { randomUUID } from 'node:crypto';

export interface RetryOptions {
  /** Attempts after the first one. Default 3; 0 turns retrying off. */
  maxRetries?: number;
  /** The first backoff; each next one doubles, up to maxDelayMs, with full jitter. Default 500 ms. */
  baseDelayMs?: number;
  /** The longest wait between two attempts, a Retry-After included. Default 30 s. */
  maxDelayMs?: number;
  /** How long one attempt may take before it counts as a network failure. Default 60 s. */
  timeoutMs?: number;
}

export const IDEMPOTENCY_HEADER = 'Idempotency-Key';

/** Statuses after which the same request (with its same key) may well succeed. */
const RETRYABLE_STATUSES = new Set([408, 429, 500, 502, 503, 504]);

/** A key for one logical write, sent with every attempt of it. */
export function newIdempotencyKey(): string {
  return `sdk_${randomUUID()}`;
}

/** The request's fetch failed on every attempt: nothing is known of what the service did. */
export class SplitlineConnectionError extends Error {
  override readonly name = 'SplitlineConnectionError';
  /** The write's Idempotency-Key: send it again later to finish the same write exactly once. */
  readonly idempotencyKey: string | undefined;
  readonly attempts: number;

  constructor(message: string, opts: { cause: unknown; idempotencyKey: string | undefined; attempts: number }) {
    super(message, { cause: opts.cause });
    this.idempotencyKey = opts.idempotencyKey;
    this.attempts = opts.attempts;
  }
}

/** Milliseconds a Retry-After header asks for (seconds or an HTTP date), or undefined. */
export function retryAfterMs(header: string | null, now = Date.now()): number | undefined {
  if (header === null || header.trim() === '') return undefined;
  const seconds = Number(header);
  if (Number.isFinite(seconds)) return Math.max(0, seconds * 1000);
  const at = Date.parse(header);
  return Number.isNaN(at) ? undefined : Math.max(0, at - now);
}

function backoffMs(attempt: number, opts: Required<RetryOptions>): number {
  const ceiling = Math.min(opts.maxDelayMs, opts.baseDelayMs * 2 ** attempt);
  return Math.random() * ceiling;
}

function sleep(ms: number, signal: AbortSignal): Promise<void> {
  return new Promise((resolve, reject) => {
    if (signal.aborted) return reject(signal.reason as Error);
    const timer = setTimeout(() => {
      signal.removeEventListener('abort', onAbort);
      resolve();
    }, ms);
    const onAbort = () => {
      clearTimeout(timer);
      reject(signal.reason as Error);
    };
    signal.addEventListener('abort', onAbort, { once: true });
  });
}

export const DEFAULT_RETRY: Required<RetryOptions> = { maxRetries: 3, baseDelayMs: 500, maxDelayMs: 30_000, timeoutMs: 60_000 };

/**
 * A fetch for openapi-fetch that adds the Idempotency-Key (unless the caller set one) and retries.
 * `onAttempt` sees each attempt's request (the SDK's tests count them).
 */
export function retryingFetch(
  options: RetryOptions = {},
  base: (request: Request) => Promise<Response> = (request) => fetch(request),
): (request: Request) => Promise<Response> {
  const opts = { ...DEFAULT_RETRY, ...options };
  return async (request) => {
    if (request.method === 'POST' && !request.headers.has(IDEMPOTENCY_HEADER)) {
      request.headers.set(IDEMPOTENCY_HEADER, newIdempotencyKey());
    }
    const key = request.headers.get(IDEMPOTENCY_HEADER) ?? undefined;
    for (let attempt = 0; ; attempt++) {
      const last = attempt >= opts.maxRetries;
      // Each attempt sends a copy, so the body can be sent again; the caller's signal still ends it.
      const signal = AbortSignal.any([request.signal, AbortSignal.timeout(opts.timeoutMs)]);
      let response: Response;
      try {
        response = await base(new Request(request.clone(), { signal }));
      } catch (err) {
        // The caller gave up: not a failure to retry.
        if (request.signal.aborted) throw err;
        if (last) {
          throw new SplitlineConnectionError(`${request.method} ${new URL(request.url).pathname} failed after ${attempt + 1} attempt(s): ${String(err)}`, {
            cause: err,
            idempotencyKey: key,
            attempts: attempt + 1,
          });
        }
        await sleep(backoffMs(attempt, opts), request.signal);
        continue;
      }
      if (last || !RETRYABLE_STATUSES.has(response.status)) return response;
      const asked = retryAfterMs(response.headers.get('retry-after'));
      // A wait longer than we would ever make is the service's answer, not a hiccup: hand it back.
      if (asked !== undefined && asked > opts.maxDelayMs) return response;
      // The answer is dropped for the next attempt: read it out so its connection is freed.
      await response.body?.cancel();
      await sleep(asked ?? backoffMs(attempt, opts), request.signal);
    }
  };
}
