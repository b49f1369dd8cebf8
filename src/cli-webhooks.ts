/**
 * The CLI's webhook commands (DESIGN.md "Integrator API", CLI), through a running server's HTTP
 * API with a subscription key:
 *
 *   listen   follows GET /api/events and forwards each new event to a local URL, oldest first,
 *            signed as a real delivery is (src/webhooks/sign.ts, the same signer; the same body and
 *            headers, posted by the same sender), so the shop's verify code runs unchanged
 *   trigger  makes a real event happen on the dev chain: a receipt created with the key and paid
 *            in test USDC from a test account, then waits for the event in GET /api/events
 *
 * listen never drops an event it has seen: an unreachable or 503 service is polled again with
 * backoff, and an event whose forward found the target down (or answering 5xx, 408 or 429) is
 * retried with backoff before the next one, so the order holds. Any other answer, 4xx included,
 * is the target's verdict: printed, and the event is done.
 */
import { randomBytes, randomUUID } from 'node:crypto';
import { WEBHOOK_EVENT_TYPES, type WebhookEventType } from './contract/webhooks.ts';
import { postWebhook } from './webhooks/send.ts';
import { webhookHeaders } from './webhooks/sign.ts';
import { DEV_CHAIN_ID } from './chain/dev-chain.ts';
import { DevCommandError, devPay } from './cli-dev.ts';
import type { HDAccount } from 'viem/accounts';

interface EventJson {
  id: string;
  type: string;
  createdAt: number;
  data: Record<string, unknown>;
}

/** The service could not answer now (unreachable, 5xx, 429): asked again after a pause. */
class Transient extends Error {}

const REQUEST_TIMEOUT_MS = 15_000;
const FORWARD_TIMEOUT_MS = 10_000;
const MAX_BACKOFF_MS = 30_000;
/**
 * Events are listed by their creation time, and one written in a transaction that commits later
 * can appear behind a newer one: each poll reads back this far behind the newest event seen.
 */
const LOOKBACK_MS = 60_000;
const PAGE = 100;

/** A fresh Standard Webhooks secret: whsec_ and 24 random bytes in base64. */
export function newWebhookSecret(): string {
  return `whsec_${randomBytes(24).toString('base64')}`;
}

/** The events listen forwards: every type, or the listed ones (each a webhook event type). */
export function parseEventTypes(value: string | undefined): WebhookEventType[] | undefined {
  if (value === undefined) return undefined;
  const types = value.split(',').map((s) => s.trim()).filter((s) => s !== '');
  const unknown = types.filter((s) => !(WEBHOOK_EVENT_TYPES as readonly string[]).includes(s));
  if (types.length === 0 || unknown.length > 0) {
    throw new DevCommandError(`--events: unknown event type ${unknown.join(', ') || '(none given)'}; event types: ${WEBHOOK_EVENT_TYPES.join(', ')}`);
  }
  return types as WebhookEventType[];
}

/** The --forward-to URL: http or https with a host. */
export function parseForwardTo(value: string | undefined): string {
  if (value === undefined) throw new DevCommandError('--forward-to is required: the URL your webhook handler listens on, such as http://localhost:3000/webhooks');
  if (!URL.canParse(value) || !['http:', 'https:'].includes(new URL(value).protocol) || new URL(value).hostname === '') {
    throw new DevCommandError(`--forward-to must be an http or https URL, such as http://localhost:3000/webhooks (got "${value}")`);
  }
  return value;
}

export function parseSecret(value: string | undefined): string {
  if (value === undefined) return newWebhookSecret();
  if (!/^whsec_[A-Za-z0-9+/]+={0,2}$/.test(value) || Buffer.from(value.slice(6), 'base64').length < 16) {
    throw new DevCommandError('--secret must be a Standard Webhooks secret: whsec_ and at least 16 bytes in base64');
  }
  return value;
}

export function requireKey(value: string | undefined, command: string): string {
  if (value === undefined || value.trim() === '') {
    throw new DevCommandError(`${command} needs a subscription key: --api-key <key>, or SPLITLINE_API_KEY in the environment (npm run -s cli -- dev merchant prints one on the dev chain)`);
  }
  return value.trim();
}

const sleep = (ms: number, signal: AbortSignal) =>
  new Promise<void>((resolve) => {
    if (signal.aborted) return resolve();
    const timer = setTimeout(done, ms);
    function done() {
      clearTimeout(timer);
      signal.removeEventListener('abort', done);
      resolve();
    }
    signal.addEventListener('abort', done, { once: true });
  });

/** One GET with the key: the JSON body of a 200; Transient when the service cannot answer now; DevCommandError otherwise. */
async function getJson(base: string, path: string, key: string, signal?: AbortSignal): Promise<Record<string, unknown>> {
  let res: Response;
  try {
    res = await fetch(base + path, {
      headers: { 'ocp-apim-subscription-key': key },
      signal: signal === undefined ? AbortSignal.timeout(REQUEST_TIMEOUT_MS) : AbortSignal.any([signal, AbortSignal.timeout(REQUEST_TIMEOUT_MS)]),
    });
  } catch (err) {
    const cause = err instanceof Error && err.cause instanceof Error ? err.cause.message : err instanceof Error ? err.message : String(err);
    throw new Transient(`no answer from ${base} (${cause})`);
  }
  const text = await res.text();
  let body: Record<string, unknown> = {};
  try {
    const parsed: unknown = JSON.parse(text);
    if (typeof parsed === 'object' && parsed !== null && !Array.isArray(parsed)) body = parsed as Record<string, unknown>;
  } catch {
    if (res.ok) throw new DevCommandError(`GET ${base}${path} answered ${res.status} with something other than JSON: is a Splitline server there?`);
  }
  if (res.ok) return body;
  const why = `${res.status}${typeof body.error === 'string' ? ` ${body.error}` : ''}${typeof body.message === 'string' ? `: ${body.message}` : ''}`;
  if (res.status >= 500 || res.status === 429) throw new Transient(`GET ${path} answered ${why}`);
  throw new DevCommandError(`GET ${path} answered ${why}`);
}

function eventsOf(body: Record<string, unknown>): { events: EventJson[]; hasMore: boolean } {
  const events = Array.isArray(body.events) ? (body.events as EventJson[]) : [];
  return { events, hasMore: body.has_more === true };
}

export interface ListenOptions {
  base: string;
  key: string;
  forwardTo: string;
  secret: string;
  types: WebhookEventType[] | undefined;
  /** An event id: forward the events after it (newer). Without it, only events created after the start. */
  since: string | undefined;
  intervalMs: number;
  signal: AbortSignal;
  /** One line per forwarded event (stdout). */
  out: (line: string, data: Record<string, unknown>) => void;
  /** Progress and trouble (stderr). */
  log: (line: string) => void;
}

/**
 * Reads the newest events back to `LOOKBACK_MS` behind the newest one seen (or to `stopAt`), newest
 * first, page after page. Returns them oldest first.
 */
async function readBack(o: ListenOptions, stop: { before: number } | { at: string }): Promise<EventJson[]> {
  const seen: EventJson[] = [];
  // Back to LOOKBACK_MS behind the newest event known, or the newest listed now if that is newer.
  let horizon: number | undefined;
  for (let after: string | undefined; ; ) {
    const body = await getJson(o.base, `/api/events?limit=${PAGE}${after === undefined ? '' : `&starting_after=${encodeURIComponent(after)}`}`, o.key, o.signal);
    const { events, hasMore } = eventsOf(body);
    for (const e of events) {
      if ('at' in stop ? e.id === stop.at : e.createdAt < (horizon ??= Math.max(stop.before, e.createdAt) - LOOKBACK_MS)) return seen.reverse();
      seen.push(e);
    }
    if (!hasMore || events.length === 0) return seen.reverse();
    after = events[events.length - 1]!.id;
  }
}

/** Follows the events API until the signal aborts; forwards each new event once, oldest first. */
export async function listen(o: ListenOptions): Promise<{ forwarded: number }> {
  const handled = new Set<string>();
  let newest = 0;
  const mark = (e: EventJson) => {
    handled.add(e.id);
    newest = Math.max(newest, e.createdAt);
  };
  const queue: EventJson[] = [];
  let pollBackoff = 0;

  // Where it starts: everything listed now is history (marked handled), unless --since names the
  // last event already handled, whose successors are forwarded first.
  for (;;) {
    try {
      if (o.since === undefined) {
        const history = await readBack(o, { before: 0 });
        history.forEach(mark);
      } else {
        const since = o.since;
        // The event itself must exist: GET /api/events/{id} is 404 otherwise.
        await getJson(o.base, `/api/events/${encodeURIComponent(since)}`, o.key, o.signal).catch((err: unknown) => {
          throw err instanceof Transient ? err : new DevCommandError(`--since: no event ${since} of this merchant in the last 30 days (GET /api/events lists them)`);
        });
        const pending = await readBack(o, { at: since });
        newest = Math.max(...pending.map((e) => e.createdAt), 0);
        queue.push(...pending.filter((e) => wanted(o, e)));
        pending.forEach((e) => handled.add(e.id));
        handled.add(since);
      }
      break;
    } catch (err) {
      if (!(err instanceof Transient)) throw err;
      pollBackoff = backoff(pollBackoff);
      o.log(`${err.message}; trying again in ${pollBackoff / 1000} s`);
      await sleep(pollBackoff, o.signal);
      if (o.signal.aborted) return { forwarded: 0 };
    }
  }
  o.log(`Ready: forwarding ${o.types?.join(', ') ?? 'every event'} from ${o.base} to ${o.forwardTo}${o.since === undefined ? ' (events from now on)' : ` (events after ${o.since})`}. Ctrl-C to stop.`);

  let forwarded = 0;
  let forwardBackoff = 0;
  while (!o.signal.aborted) {
    // Poll: new events join the queue behind those still waiting, oldest first.
    try {
      const fresh = await readBack(o, { before: newest });
      for (const e of fresh) {
        if (handled.has(e.id)) continue;
        mark(e);
        if (wanted(o, e)) queue.push(e);
      }
      pollBackoff = 0;
    } catch (err) {
      if (!(err instanceof Transient)) throw err;
      pollBackoff = backoff(pollBackoff);
      o.log(`${err.message}; polling again in ${pollBackoff / 1000} s`);
    }
    // Forward what waits, in order; a target that cannot take one now holds the rest behind it.
    while (queue.length > 0 && !o.signal.aborted) {
      const e = queue[0]!;
      const body = JSON.stringify(e);
      const headers = webhookHeaders(o.secret, e.id, Math.floor(Date.now() / 1000), body);
      const result = await postWebhook(o.forwardTo, headers, body, { allowPrivate: true, allowLoopback: true, timeoutMs: FORWARD_TIMEOUT_MS });
      const status = result.statusCode === null ? `no answer (${result.error ?? 'unknown'})` : String(result.statusCode);
      const retry = result.statusCode === null || result.statusCode >= 500 || result.statusCode === 408 || result.statusCode === 429;
      if (!retry) {
        queue.shift();
        forwarded += 1;
        forwardBackoff = 0;
        o.out(`${new Date(e.createdAt).toISOString()}  ${e.type}  ${e.id}  -> ${o.forwardTo}  ${status}`, {
          id: e.id,
          type: e.type,
          createdAt: e.createdAt,
          status: result.statusCode,
          durationMs: result.durationMs,
        });
        continue;
      }
      forwardBackoff = backoff(forwardBackoff);
      o.log(`${e.type} ${e.id} -> ${o.forwardTo}: ${status}; retrying in ${forwardBackoff / 1000} s`);
      await sleep(forwardBackoff, o.signal);
    }
    await sleep(pollBackoff > 0 ? pollBackoff : o.intervalMs, o.signal);
  }
  return { forwarded };
}

function wanted(o: Pick<ListenOptions, 'types'>, e: EventJson): boolean {
  return o.types === undefined || (o.types as string[]).includes(e.type);
}

const backoff = (previous: number) => Math.min(previous === 0 ? 500 : previous * 2, MAX_BACKOFF_MS);

/**
 * The events trigger can make happen for real, and how: a receipt paid in full on the dev chain
 * emits receipt.payment_received when the payment arrives and receipt.completed when it settles.
 */
export const TRIGGERABLE: readonly WebhookEventType[] = ['receipt.payment_received', 'receipt.completed'];

export function parseTriggerEvent(value: string | undefined): WebhookEventType {
  const supported = `supported: ${TRIGGERABLE.join(', ')}`;
  if (value === undefined) throw new DevCommandError(`trigger needs an event (${supported})`);
  if (!(WEBHOOK_EVENT_TYPES as readonly string[]).includes(value)) {
    throw new DevCommandError(`unknown event "${value}"; ${supported} (webhook event types: ${WEBHOOK_EVENT_TYPES.join(', ')})`);
  }
  if (!(TRIGGERABLE as readonly string[]).includes(value)) throw new DevCommandError(`trigger cannot make ${value} happen; ${supported}`);
  return value as WebhookEventType;
}

export interface TriggerResult {
  event: EventJson;
  receiptId: string;
  transferHash: string | null;
}

const EVENT_WAIT_MS = 60_000;

/**
 * Makes `type` happen on the dev chain through the server at `base`: refuses any other chain
 * before creating anything; creates a 1 USD receipt with the key, pays it in full from the test
 * account, and waits until the event is listed in GET /api/events.
 */
export async function trigger(p: { base: string; key: string; type: WebhookEventType; index: number; account: HDAccount; log: (line: string) => void }): Promise<TriggerResult> {
  const { base, key, log } = p;
  let chain: Record<string, unknown>;
  try {
    chain = await getJson(base, '/dev/chain', key);
  } catch (err) {
    if (err instanceof Transient) throw new DevCommandError(`${err.message}: start the server with npm start, or pass --url`);
    throw new DevCommandError(`trigger makes real events on the dev chain only (CHAIN=dev), and the server at ${base} runs none (${(err as Error).message})`);
  }
  if (chain.chainId !== DEV_CHAIN_ID) {
    throw new DevCommandError(`trigger makes real events on the dev chain only (chain id ${DEV_CHAIN_ID}); the server at ${base} runs chain ${String(chain.chainId)}`);
  }
  const id = `trigger-${randomUUID()}`;
  const res = await fetch(`${base}/api/receipts`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', 'ocp-apim-subscription-key': key, 'idempotency-key': id },
    body: JSON.stringify({ id, lineItems: [{ label: `Test payment (cli trigger ${p.type})`, priceUsd: 1 }], totalUsd: 1, metadata: { source: 'cli trigger' } }),
    signal: AbortSignal.timeout(REQUEST_TIMEOUT_MS),
  });
  if (res.status !== 201) {
    const text = await res.text();
    throw new DevCommandError(`creating receipt ${id} failed (${res.status} ${text.slice(0, 300)})`);
  }
  log(`Created receipt ${id} (1 USD).`);
  const paid = await devPay({ base, target: id, key, index: p.index, account: p.account, log });
  if (paid.status !== 'completed') throw new DevCommandError(`receipt ${id} ended ${paid.status}${paid.exception === null ? '' : ` (${paid.exception})`}, not completed`);
  const deadline = Date.now() + EVENT_WAIT_MS;
  for (;;) {
    try {
      const { events } = eventsOf(await getJson(base, `/api/events?type=${p.type}&limit=${PAGE}`, key));
      const event = events.find((e) => e.data.receiptId === id);
      if (event !== undefined) return { event, receiptId: id, transferHash: paid.transferHash };
    } catch (err) {
      if (!(err instanceof Transient)) throw err;
    }
    if (Date.now() > deadline) throw new DevCommandError(`receipt ${id} is completed, but no ${p.type} event for it is listed after ${EVENT_WAIT_MS / 1000} s`);
    await new Promise((r) => setTimeout(r, 500));
  }
}
