/**
 * The Splitline client: the typed openapi-fetch client of every operation (`api`), and, over it,
 * the calls a shop makes most, each returning the answer's body or throwing a SplitlineError.
 */
import createClient, { type Client } from 'openapi-fetch';
import { errorFrom, SplitlineError } from './errors.ts';
import type { components, operations, paths } from './openapi.ts';
import { IDEMPOTENCY_HEADER, newIdempotencyKey, retryingFetch, type RetryOptions } from './retry.ts';
import { verify, type Event, type WebhookHeaders } from './webhooks.ts';

type JsonOf<R> = R extends { content: { 'application/json': infer B } } ? B : never;
type BodyOf<Op extends keyof operations> = operations[Op] extends { requestBody?: infer B } ? JsonOf<NonNullable<B>> : never;
type QueryOf<Op extends keyof operations> = NonNullable<operations[Op]['parameters']['query']>;

export type Receipt = components['schemas']['Receipt'];
export type CreateReceiptParams = BodyOf<'createReceipt'>;
export type ReceiptCreated = JsonOf<operations['createReceipt']['responses'][201]>;
export type ReceiptDetail = JsonOf<operations['getReceipt']['responses'][200]>;
export type ReceiptStatus = JsonOf<operations['getReceiptStatus']['responses'][200]>;
/** The list's filters; its CSV export (format=csv) is a download, not a page, and is not offered here. */
export type ListReceiptsParams = Omit<QueryOf<'listReceipts'>, 'format'>;
export type ReceiptPage = JsonOf<operations['listReceipts']['responses'][200]>;
export type CreateOrderParams = BodyOf<'createOrder'>;
export type OrderCreated = JsonOf<operations['createOrder']['responses'][200]>;
export type ListEventsParams = QueryOf<'listEvents'>;

/** The subscription key header of the service's gateway. */
export const KEY_HEADER = 'Ocp-Apim-Subscription-Key';

export interface SplitlineOptions {
  /** Where the service answers, e.g. `https://pay.example.com` (no trailing /api). */
  baseUrl: string;
  /** A subscription key (the admin app's Keys page, or `npm run cli -- keys create`). */
  apiKey: string;
  retry?: RetryOptions;
  /** The fetch the retries go through (a proxy agent, a test's recorder); the global fetch by default. */
  fetch?: (request: Request) => Promise<Response>;
}

export interface WriteOptions {
  /**
   * The write's Idempotency-Key. By default one is made per call and sent with each of its
   * attempts; pass your own (e.g. derived from your order number) to make the write safe to repeat
   * across restarts of your process too. 1 to 255 printable ASCII characters.
   */
  idempotencyKey?: string;
  signal?: AbortSignal;
}

/** A page of a list: the service's answer. `degraded` pages are refused by the iterators (see below). */
interface Page<T> {
  items: T[];
  hasMore: boolean;
  degraded: boolean;
}

/**
 * Walks a cursor list (`starting_after` = the last id of the previous page) until `has_more` is
 * false. A degraded page (the service's database is away; it answers an empty list) throws, since
 * "no more items" would be false: the caller tries again later from the last id it handled.
 */
async function* paginate<T>(first: string | undefined, fetchPage: (startingAfter: string | undefined) => Promise<Page<T>>, idOf: (item: T) => string): AsyncGenerator<T, void, undefined> {
  let after = first;
  for (;;) {
    const page = await fetchPage(after);
    if (page.degraded) {
      throw new SplitlineError(503, {
        error: 'database_unavailable',
        message: 'The service answered a degraded (empty) page while its database is unreachable: the list is incomplete; try again later',
      });
    }
    for (const item of page.items) yield item;
    const last = page.items.at(-1);
    if (!page.hasMore || last === undefined) return;
    after = idOf(last);
  }
}

export class Splitline {
  /**
   * The typed client of every operation of the OpenAPI document (openapi-fetch): `api.GET(path,
   * {params})`, `api.POST(path, {body})`; answers `{data, error, response}` and never throws for a
   * status. Retries and Idempotency-Key apply to it as to the methods below.
   */
  readonly api: Client<paths>;

  constructor(options: SplitlineOptions) {
    this.api = createClient<paths>({
      baseUrl: options.baseUrl.replace(/\/+$/, ''),
      headers: { [KEY_HEADER]: options.apiKey },
      fetch: retryingFetch(options.retry, options.fetch),
    });
  }

  /** The body of a 2xx answer; a SplitlineError for any other. */
  private static async body<T>(call: Promise<{ data?: T; error?: unknown; response: Response }>, idempotencyKey?: string): Promise<T> {
    const { data, error, response } = await call;
    if (!response.ok) throw errorFrom(response, error, idempotencyKey);
    return data as T;
  }

  readonly receipts = {
    /** POST /api/receipts: a receipt and its payment URL. Retried safely with one Idempotency-Key. */
    create: async (body: CreateReceiptParams, opts: WriteOptions = {}): Promise<ReceiptCreated> => {
      // One key for every attempt of this call, made here so a failure can name it.
      const key = opts.idempotencyKey ?? newIdempotencyKey();
      const call = this.api.POST('/api/receipts', { body, headers: { [IDEMPOTENCY_HEADER]: key }, signal: opts.signal });
      return Splitline.body(call, key);
    },

    /** GET /api/receipts/{id}: the receipt with its history and refunds. */
    retrieve: async (id: string, opts: { signal?: AbortSignal } = {}): Promise<ReceiptDetail> =>
      Splitline.body(this.api.GET('/api/receipts/{id}', { params: { path: { id } }, signal: opts.signal })),

    /** GET /api/receipts/status: where the payment stands. */
    status: async (receiptId: string, opts: { signal?: AbortSignal } = {}): Promise<ReceiptStatus> =>
      Splitline.body(this.api.GET('/api/receipts/status', { params: { query: { receiptId } }, signal: opts.signal })),

    /** One page of GET /api/receipts, newest first. */
    page: async (query: ListReceiptsParams = {}, opts: { signal?: AbortSignal } = {}): Promise<ReceiptPage> =>
      Splitline.body(this.api.GET('/api/receipts', { params: { query }, signal: opts.signal })) as Promise<ReceiptPage>,

    /**
     * Every receipt matching `query`, newest first, fetched a page (`limit`) at a time:
     * `for await (const r of splitline.receipts.list({status: 'completed'}))`.
     */
    list: (query: ListReceiptsParams = {}, opts: { signal?: AbortSignal } = {}): AsyncGenerator<Receipt, void, undefined> => {
      const { starting_after, ...rest } = query;
      return paginate(
        starting_after,
        async (after) => {
          const page = await this.receipts.page({ ...rest, ...(after === undefined ? {} : { starting_after: after }) }, opts);
          return { items: page.receipts, hasMore: page.has_more, degraded: page.degraded === true };
        },
        (r) => r.receiptId,
      );
    },
  };

  readonly orders = {
    /** POST /api/orders: a receipt priced from the inventory, with tax and fees. */
    create: async (body: CreateOrderParams, opts: WriteOptions = {}): Promise<OrderCreated> => {
      // One key for every attempt of this call, made here so a failure can name it.
      const key = opts.idempotencyKey ?? newIdempotencyKey();
      const call = this.api.POST('/api/orders', { body, headers: { [IDEMPOTENCY_HEADER]: key }, signal: opts.signal });
      return Splitline.body(call, key);
    },
  };

  readonly events = {
    /** GET /api/events/{id}. */
    retrieve: async (id: string, opts: { signal?: AbortSignal } = {}): Promise<Event> =>
      Splitline.body(this.api.GET('/api/events/{id}', { params: { path: { id } }, signal: opts.signal })),

    /** One page of GET /api/events, newest first. */
    page: async (query: ListEventsParams = {}, opts: { signal?: AbortSignal } = {}) =>
      Splitline.body(this.api.GET('/api/events', { params: { query }, signal: opts.signal })),

    /**
     * Every event of the last 30 days matching `query`, newest first, a page at a time. To catch
     * up after downtime, stop at the first id already handled.
     */
    list: (query: ListEventsParams = {}, opts: { signal?: AbortSignal } = {}): AsyncGenerator<Event, void, undefined> => {
      const { starting_after, ...rest } = query;
      return paginate(
        starting_after,
        async (after) => {
          const page = await this.events.page({ ...rest, ...(after === undefined ? {} : { starting_after: after }) }, opts);
          return { items: page.events, hasMore: page.has_more, degraded: page.degraded === true };
        },
        (e) => e.id,
      );
    },
  };

  /** Standard Webhooks verification; needs no key, so it is also `webhooks.verify` of the package. */
  readonly webhooks = {
    verify: (payload: string | Buffer, headers: WebhookHeaders, secret: string): Event => verify(payload, headers, secret),
  };
}
