/**
 * The OpenAPI document (/openapi.json) and the interactive reference (/docs).
 *
 * Routes declare their own request and response schemas, examples and the error codes peculiar
 * to them (`schema.errorCodes`); everything every operation of a kind shares is added here, from
 * what the server really does rather than from what a route remembered to declare:
 * - security, from the route's config (what the gateway and the session hook enforce), with the
 *   x-csrf-token header on every session-authenticated state-changing operation;
 * - a stable operationId (OPERATION_IDS, else one made from the method and path);
 * - the statuses the framework, the gateway and the error handler can answer on any operation of
 *   the kind (400, 401, 403, 408, 409, 413, 415, 429, 500, 503), each with its error codes, a
 *   description naming them and one example per code;
 * - the response headers: X-Correlation-Id on every answer, X-RateLimit-* where a limiter runs,
 *   Retry-After on 429 and 503, Idempotent-Replayed where a POST keeps its answers;
 * - an example for every response that has none, built from the schema (and its field examples);
 * - the keywords a handler enforces itself (HANDLER_CHECKS in src/http/schemas.ts).
 * test/openapi-lint.test.ts holds the result to Redocly's recommended rules.
 */
import swagger, { type FastifyDynamicSwaggerOptions, type SwaggerTransform, type SwaggerTransformObject } from '@fastify/swagger';
import swaggerUi from '@fastify/swagger-ui';
import type { FastifyContextConfig, FastifyInstance, FastifySchema } from 'fastify';
import { NotFound } from '../lib/errors.ts';
import { IDEMPOTENCY_HEADER } from './idempotency.ts';
import { sample, type Schema } from './openapi-examples.ts';
import { ERROR_CODES, HANDLER_CHECKS, type ErrorCode } from './schemas.ts';

/** Stable operation ids, by method and path as the document writes it. A route missing here gets one made from both. */
export const OPERATION_IDS: Record<string, string> = {
  'GET /healthz': 'getHealth',
  'GET /api/receipts': 'listReceipts',
  'POST /api/receipts': 'createReceipt',
  'GET /api/receipts/status': 'getReceiptStatus',
  'POST /api/receipts/status': 'recordReceiptStatus',
  'GET /api/receipts/{id}': 'getReceipt',
  'GET /api/events': 'listEvents',
  'GET /api/events/{id}': 'getEvent',
  'GET /api/users/search': 'searchUsers',
  'GET /api/users/live': 'listLiveUsers',
  'GET /api/split/deploy': 'getSplit',
  'POST /api/split/deploy': 'configureSplit',
  'GET /api/split/transactions': 'listSplitTransactions',
  'GET /api/split/balances': 'getRecipientBalances',
  'GET /api/split/settlements': 'getSettlement',
  'POST /api/split/withdraw': 'withdrawFromSplit',
  'GET /api/site/container': 'getSiteContainer',
  'GET /api/inventory': 'listInventory',
  'POST /api/inventory': 'upsertInventoryItem',
  'POST /api/orders': 'createOrder',
  'GET /api/shop/config': 'getShopConfig',
  'POST /api/shop/config': 'saveShopConfig',
  'POST /api/auth/challenge': 'createSignInChallenge',
  'POST /api/auth/login': 'signIn',
  'GET /api/auth/me': 'getSession',
  'POST /api/auth/logout': 'signOut',
  'POST /api/receipts/refund': 'refundReceipt',
  'GET /api/receipts/{id}/refunds': 'listReceiptRefunds',
  'POST /api/receipts/terminal': 'createTerminalReceipt',
  'GET /api/admin/subscriptions': 'listSubscriptions',
  'POST /api/admin/subscriptions': 'createSubscription',
  'POST /api/admin/subscriptions/{id}/rotate': 'rotateSubscriptionKey',
  'DELETE /api/admin/subscriptions/{id}': 'revokeSubscription',
  'GET /api/admin/roles': 'listRoles',
  'POST /api/admin/roles': 'grantRole',
  'DELETE /api/admin/roles/{wallet}/{role}': 'revokeRole',
  'POST /api/admin/users': 'importUsers',
  'GET /api/users/me': 'getMyProfile',
  'PUT /api/users/me': 'updateMyProfile',
  'POST /api/users/heartbeat': 'sendHeartbeat',
  'GET /api/admin/webhooks': 'listWebhooks',
  'POST /api/admin/webhooks': 'createWebhook',
  'DELETE /api/admin/webhooks/{id}': 'deleteWebhook',
  'POST /api/admin/webhooks/{id}/test': 'sendTestWebhook',
  'GET /api/admin/webhooks/deliveries': 'listWebhookDeliveries',
  'POST /api/admin/webhooks/deliveries/{id}/redeliver': 'redeliverWebhook',
  'GET /api/admin/platform': 'getPlatform',
  'GET /api/admin/receipts/{id}/sweep': 'getSweepTransaction',
  'GET /api/admin/split/balances': 'getSplitBalances',
  'GET /api/admin/split/payouts': 'getPayoutSettings',
  'PUT /api/admin/split/payouts': 'setPayoutSettings',
  'DELETE /api/admin/split/payouts': 'turnOffPayouts',
  'GET /api/admin/rejected-writes': 'listRejectedWrites',
  'GET /api/admin/apk': 'listApks',
  'GET /api/admin/apk/{app}': 'downloadApk',
  'PUT /api/admin/apk/{app}': 'uploadApk',
  'GET /api/pay/{id}': 'getPayment',
  'POST /api/pay/{id}/status': 'recordPaymentPageStatus',
  'POST /api/pay/{id}/transaction': 'hintPaymentTransaction',
  'GET /dev/chain': 'getDevChain',
  'POST /dev/rpc': 'callDevRpc',
};

const SESSION_COOKIE_HEADER = (description: string) => ({ 'Set-Cookie': { description, required: true, schema: { type: 'string' } } });

/**
 * What the document says of routes whose modules keep no documentation of their own for it:
 * error codes, a request example, response headers. Each applies only where the route declares
 * nothing itself.
 */
const SUPPLEMENTS: Record<
  string,
  { errorCodes?: Partial<Record<number, readonly ErrorCode[]>>; requestExample?: unknown; responseHeaders?: Record<number, Record<string, unknown>> }
> = {
  signIn: { responseHeaders: { 200: SESSION_COOKIE_HEADER('cb_auth_token=<JWT>; HttpOnly; SameSite=Lax; Path=/ (plus Secure over https)') } },
  signOut: { responseHeaders: { 200: SESSION_COOKIE_HEADER('Clears cb_auth_token') } },
  createOrder: {
    errorCodes: {
      400: ['items_required', 'inventory_item_not_found', 'platform_recipient_not_configured'],
      403: ['split_required'],
      409: ['out_of_stock'],
    },
    requestExample: { items: [{ sku: 'espresso', qty: 2 }] },
  },
  downloadApk: { errorCodes: { 404: ['apk_not_visible'] } },
  uploadApk: { errorCodes: { 404: ['apk_not_visible'] } },
};

const TAGS = [
  { name: 'receipts', description: 'Receipts: create one for a payment, follow its status, list and read them. Subscription key.' },
  { name: 'orders', description: 'Orders priced from the inventory, with tax and processing-fee lines; each yields a pending receipt. Subscription key.' },
  {
    name: 'events',
    description: 'Every event the webhooks send, kept 30 days: catch up after downtime, or follow them without an endpoint. Subscription key (events:read).',
  },
  { name: 'inventory', description: "The merchant's products, by sku. Subscription key." },
  { name: 'shop', description: 'Shop configuration: name, processing fee, tax table, embedding origins. Reads take a key; writes are admin.' },
  { name: 'split', description: 'The split contract that shares every payment among recipients, and its indexed transactions.' },
  { name: 'users', description: 'User search and presence. Subscription key.' },
  { name: 'site', description: 'Which container this deployment is. Any valid subscription key.' },
  { name: 'health', description: 'Liveness for load balancers and monitors. No credential.' },
  { name: 'payment page', description: "The hosted payment page's JSON API. Authorised by the payment URL's token; no credential." },
  { name: 'admin session', description: 'Wallet sign-in (EIP-712) for the admin app: the cb_auth_token cookie and its CSRF token.' },
  { name: 'admin', description: "The admin app's operations: session cookie and, for every state-changing call, x-csrf-token. Never a subscription key." },
  { name: 'dev', description: 'The embedded dev chain (CHAIN=dev only): test money, never real funds.' },
];

const INTRODUCTION = `Splitline takes stablecoin (USDC) payments for merchants, splits every payment on-chain among
recipients by basis points, and keeps itemised receipts.

## Authentication

- **Developer operations** need the header \`Ocp-Apim-Subscription-Key: <key>\`. A key belongs to one
  merchant wallet and one product (a set of scopes and a rate limit); the merchant is resolved from
  the key, so every call sees only that merchant's data, and wallet headers sent by clients are
  ignored. A missing or invalid key is 401 \`unauthorized\`; a key without the operation's scope is
  403 \`forbidden\`. Keys are issued in the admin app (or \`npm run cli\`), two per subscription so one
  can be rotated while the other keeps working.
- **Admin operations** use the session cookie \`cb_auth_token\` from a wallet sign-in:
  \`POST /api/auth/challenge\` gives EIP-712 typed data to sign, \`POST /api/auth/login\` sets the cookie
  and answers a \`csrfToken\`. Every state-changing request with the cookie must send that token as the
  \`x-csrf-token\` header (and, from a browser, an Origin of this site), or it is 403 \`forbidden\`.
  A subscription key never opens them. Developer operations also accept the session, so the admin app
  reads the signed-in merchant's own data through them.
- Operations marked with no security requirement (health, the payment page, sign-in, tracking
  statuses) need no credential and are rate-limited per client address.

## Rate limits

Every operation that takes a key, a session or a client address counts against a one-minute budget
(the product's limit per subscription, 600 per minute per signed-in wallet, a configured budget per
address). Answers carry \`X-RateLimit-Limit\`, \`X-RateLimit-Remaining\` and \`X-RateLimit-Reset\` (Unix
seconds). Past the budget the answer is 429 \`{error: "rate_limited", message, resetAt}\`, with
\`resetAt\` in Unix ms and \`Retry-After\` in seconds: wait until then.

## Retries and idempotency

Every POST takes an \`Idempotency-Key\` header (1 to 255 printable ASCII characters), scoped to the
caller. Send a new key for each new request and the same key when you retry it: for at least 24 hours
the same key with the same request answers as the first call did (with \`Idempotent-Replayed: true\`),
and with another request it is 409 \`conflict\`. A 503 with \`Retry-After\` promises that nothing was
written. A 500 \`failed\` saying the database did not confirm the commit means the outcome is unknown:
retry with the same key to find out, never with a new one. \`POST /api/receipts\` is also idempotent per
receipt id: the same id with the same body answers as the first call did, with another body 409.

## Degraded mode

When the database is unreachable, list reads answer 200 with an empty list and
\`degraded: true, reason: "database_unavailable"\`; receipt creations and tracking statuses are
acknowledged with \`degraded: true\`, kept in a durable local journal and applied, in order and exactly
once, when the database returns. Operations with no safe degraded answer (orders, refunds, admin
writes) answer 503 \`database_unavailable\` with \`Retry-After\`.

## Errors

Every error is \`{error, message}\`: \`error\` is a stable code (the Error schema lists them all; each
response below lists the codes it can carry), \`message\` is for people. Rate limits add \`resetAt\`;
some answers add \`reason\`. A query parameter that an operation does not list is refused with 400
\`invalid_input\` naming it, never ignored: a misspelt filter or cursor fails at once rather than
answering the unfiltered first page. Every answer carries \`X-Correlation-Id\` (send your own, 8 to
128 of \`A-Za-z0-9._:-\`, to have it echoed): quote it to support. A 500 never carries internals.
Requests the HTTP layer refuses before any operation is chosen (malformed HTTP, headers over 16 KiB,
a request not received within REQUEST_TIMEOUT_MS) answer 400, 431 or 408 with the same body.
`;

/** Which credential, and so which limiter, an operation has. */
type Kind = 'key' | 'session' | 'public' | 'open';

interface Meta {
  kind: Kind;
  /** A POST that keeps its answers per Idempotency-Key (src/http/idempotency.ts). */
  replays: boolean;
  errorCodes: Partial<Record<number, readonly ErrorCode[]>>;
}

const META = 'x-splitline-meta';
const ERROR_REF = '#/components/schemas/Error';
/** Methods whose requests may carry a body; as in src/http/limits.ts documentFrameworkErrors. */
const BODY_METHODS = new Set(['POST', 'PUT', 'PATCH', 'DELETE']);

/** The code each status carries on every operation that answers it. */
const STATUS_CODES: Record<number, readonly ErrorCode[]> = {
  400: ['invalid_input'],
  401: ['unauthorized'],
  403: ['forbidden'],
  404: ['not_found'],
  408: ['request_timeout'],
  409: ['conflict'],
  410: ['deprecated'],
  413: ['payload_too_large'],
  415: ['unsupported_media_type'],
  416: ['range_not_satisfiable'],
  429: ['rate_limited'],
  500: ['failed'],
  503: ['database_unavailable'],
};

const STATUS_TEXT: Record<number, string> = {
  200: 'OK',
  201: 'Created',
  202: 'Accepted',
  204: 'No content',
  206: 'Partial content',
  304: 'Not modified',
  400: 'Bad request',
  401: 'Unauthorized',
  403: 'Forbidden',
  404: 'Not found',
  408: 'Request timeout',
  409: 'Conflict',
  410: 'Gone',
  413: 'Payload too large',
  415: 'Unsupported media type',
  416: 'Range not satisfiable',
  429: 'Too many requests',
  500: 'Internal error',
  503: 'Service unavailable',
};

/** Why a status can come on any operation of a kind, beside its codes. */
const STATUS_WHY: Record<number, string> = {
  400: 'malformed URL, query, JSON or Idempotency-Key, a query parameter the operation does not declare, or a value the schema refuses',
  403: 'also when EDGE_SECRET is set and the request did not come through the edge proxy',
  408: 'the body did not arrive within REQUEST_TIMEOUT_MS',
  413: 'the body is larger than this operation accepts',
  415: 'the Content-Type is not one this operation reads',
  500: 'quote X-Correlation-Id to support',
};

function statusesOf(method: string, path: string, meta: Meta): number[] {
  // 400 on every operation: each refuses a query parameter it does not declare (src/http/strict-query.ts).
  const out = [400, 500];
  if (path !== '/healthz') out.push(403);
  if (meta.kind !== 'open') out.push(429, 503);
  if (meta.kind === 'key' || meta.kind === 'session') out.push(401);
  if (BODY_METHODS.has(method)) out.push(408, 413, 415);
  if (meta.replays) out.push(409);
  return out;
}

function securityOf(kind: Kind, method: string): Record<string, string[]>[] {
  const csrf: Record<string, string[]> = method === 'GET' ? {} : { csrfToken: [] };
  if (kind === 'key') return [{ subscriptionKey: [] }, { sessionCookie: [], ...csrf }];
  if (kind === 'session') return [{ sessionCookie: [], ...csrf }];
  return [];
}

function kindOf(config: FastifyContextConfig): Kind {
  if (config.auth === 'session') return 'session';
  if (config.scope !== undefined || config.auth === 'key') return 'key';
  return config.auth === 'public' ? 'public' : 'open';
}

/** /api/receipts/:id → /api/receipts/{id} */
const documentPath = (url: string) => url.replace(/:([A-Za-z0-9_]+)/g, '{$1}');

function madeUpId(method: string, path: string): string {
  const words = path.split(/[/{}._-]+/).filter((w) => w !== '');
  return method.toLowerCase() + words.map((w) => w[0]!.toUpperCase() + w.slice(1)).join('');
}

/** @fastify/swagger's per-route transform: operation id, security and what finishDocument needs. */
const describeRoute: SwaggerTransform = ({ schema, url, route }) => {
  if (schema === undefined || schema === null || schema.hide === true) return { schema, url };
  const method = (Array.isArray(route.method) ? route.method[0] : route.method) as string;
  const config = route.config ?? {};
  const kind = kindOf(config);
  const path = documentPath(url);
  const operationId = schema.operationId ?? OPERATION_IDS[`${method} ${path}`] ?? madeUpId(method, path);
  const headers = schema.headers as { properties?: Record<string, unknown> } | undefined;
  const meta: Meta = {
    kind,
    replays: method === 'POST' && headers?.properties?.[IDEMPOTENCY_HEADER] !== undefined,
    errorCodes: { ...SUPPLEMENTS[operationId]?.errorCodes, ...schema.errorCodes },
  };
  const described: FastifySchema & Record<string, unknown> = { ...schema, operationId, security: securityOf(kind, method), [META]: meta };
  delete described.errorCodes;
  return { schema: described, url };
};

/** The parts of the OpenAPI document that finishDocument completes; the rest passes through as it is. */
interface Media {
  schema?: Schema;
  example?: unknown;
  examples?: Record<string, unknown>;
}
interface Response {
  description?: string;
  content?: Record<string, Media>;
  headers?: Record<string, unknown>;
}
interface Operation {
  operationId?: string;
  parameters?: unknown[];
  requestBody?: { required?: boolean; description?: string; content?: Record<string, Media> };
  responses?: Record<string, Response>;
  [META]?: Meta;
}
interface Document {
  paths?: Record<string, Record<string, Operation>>;
}

/** Merges the HANDLER_CHECKS keywords into every schema of the document. */
function publishHandlerChecks(node: unknown): void {
  if (Array.isArray(node)) {
    for (const n of node) publishHandlerChecks(n);
    return;
  }
  if (node === null || typeof node !== 'object') return;
  const obj = node as Record<string, unknown>;
  if (obj[HANDLER_CHECKS] !== undefined) {
    Object.assign(obj, obj[HANDLER_CHECKS]);
    delete obj[HANDLER_CHECKS];
  }
  for (const v of Object.values(obj)) publishHandlerChecks(v);
}

const header = (name: string) => ({ $ref: `#/components/headers/${name}` });

function errorExample(code: ErrorCode): { summary: string; value: Record<string, unknown> } {
  const value: Record<string, unknown> = { error: code, message: ERROR_CODES[code][1] };
  if (code === 'rate_limited') value.resetAt = 1767225660000;
  if (code === 'deprecated') value.reason = 'use_connected_wallet';
  return { summary: ERROR_CODES[code][0], value };
}

function describeError(status: number, codes: readonly ErrorCode[]): string {
  const why = STATUS_WHY[status];
  const list = codes.map((c) => `\`${c}\`: ${ERROR_CODES[c][0]}`).join('. ');
  return `${STATUS_TEXT[status] ?? 'Error'}. ${list}.${why === undefined ? '' : ` (${why[0]!.toUpperCase()}${why.slice(1)}.)`}`;
}

/** The JSON content of a response that answers the Error schema; undefined for any other response. */
function errorMediaOf(response: Response): Media | undefined {
  const media = response.content?.['application/json'];
  return media?.schema?.$ref === ERROR_REF ? media : undefined;
}

function finishResponses(op: Operation, method: string, path: string, meta: Meta, doc: Document): void {
  const responses = op.responses ?? {};
  for (const status of statusesOf(method, path, meta)) {
    responses[status] ??= { description: '', content: { 'application/json': { schema: { $ref: ERROR_REF } } } };
  }
  const limited = meta.kind !== 'open';
  const supplement = op.operationId === undefined ? undefined : SUPPLEMENTS[op.operationId];
  const sorted: Record<string, Response> = {};
  for (const key of Object.keys(responses).sort()) {
    const response = responses[key]!;
    const status = Number(key);
    const errorMedia = errorMediaOf(response);
    if (errorMedia !== undefined) {
      const codes = [...new Set([...(STATUS_CODES[status] ?? []), ...(meta.errorCodes[status] ?? [])])];
      if (codes.length === 0) throw new Error(`${method} ${path}: no error code for ${status}`);
      response.description = describeError(status, codes);
      delete errorMedia.example;
      errorMedia.examples = Object.fromEntries(codes.map((c) => [c, errorExample(c)]));
    } else {
      if (response.description === undefined || response.description === 'Default Response' || response.description === '') {
        response.description = STATUS_TEXT[status] ?? 'Answer';
      }
      const media = response.content?.['application/json'];
      if (media !== undefined && media.example === undefined && media.examples === undefined) {
        media.example = sample(media.schema, doc, '', 0);
      }
    }
    const headers: Record<string, unknown> = { 'X-Correlation-Id': header('CorrelationId') };
    if (limited && status !== 401) {
      headers['X-RateLimit-Limit'] = header('RateLimitLimit');
      headers['X-RateLimit-Remaining'] = header('RateLimitRemaining');
      headers['X-RateLimit-Reset'] = header('RateLimitReset');
    }
    if ((status === 429 || status === 503) && errorMedia !== undefined) headers['Retry-After'] = header('RetryAfter');
    if (meta.replays && status < 500 && status !== 401 && status !== 408 && status !== 429) headers['Idempotent-Replayed'] = header('IdempotentReplayed');
    response.headers = { ...headers, ...supplement?.responseHeaders?.[status], ...response.headers };
    sorted[key] = response;
  }
  op.responses = sorted;
}

function finishRequestBody(op: Operation, doc: Document): void {
  const media = op.requestBody?.content?.['application/json'];
  if (media === undefined || media.example !== undefined || media.examples !== undefined) return;
  const supplied = op.operationId === undefined ? undefined : SUPPLEMENTS[op.operationId]?.requestExample;
  media.example = supplied !== undefined ? supplied : sample(media.schema, doc, '', 0);
}

/**
 * Every path and query parameter carries an example, which the reference's "Try it out" fills in:
 * the one its schema names (@fastify/swagger copies `examples[0]`), else one made from the schema.
 * The contracts write one for every parameter of a developer route (test/openapi.test.ts holds
 * them to their schemas and sends them to a real app).
 */
function finishParameters(op: Operation, doc: Document): void {
  for (const p of op.parameters ?? []) {
    if (p === null || typeof p !== 'object') continue;
    const param = p as { in?: string; name?: string; schema?: Schema; example?: unknown; examples?: unknown };
    if (param.in === 'header' || param.example !== undefined || param.examples !== undefined) continue;
    param.example = sample(param.schema, doc, param.name ?? '', 0);
  }
}

/** What apk.ts leaves out: the bytes of a partial download and of an upload. */
function finishApk(op: Operation): void {
  const binary = { schema: { type: 'string', format: 'binary' } };
  const apk = 'application/vnd.android.package-archive';
  if (op.operationId === 'downloadApk') {
    const partial = op.responses?.['206'];
    if (partial !== undefined && partial.content === undefined) {
      partial.content = { [apk]: binary };
      partial.headers = { 'Content-Range': { description: 'bytes <first>-<last>/<size>', schema: { type: 'string' } }, ...partial.headers };
    }
  }
  if (op.operationId === 'uploadApk' && op.requestBody === undefined) {
    op.requestBody = {
      required: true,
      description: 'The signed package, a ZIP archive; it replaces the stored one only once it arrived whole and passed the checks',
      content: { [apk]: binary, 'application/octet-stream': binary },
    };
  }
}

/** On the tracking-status route, sensitive statuses need the session: its CSRF header, optional otherwise. */
function finishStatusRoute(op: Operation): void {
  if (op.operationId !== 'recordReceiptStatus') return;
  op.parameters = [
    ...(op.parameters ?? []),
    {
      in: 'header',
      name: 'x-csrf-token',
      required: false,
      description: "Only with a sensitive status (checkout_success, refund_*): the session's csrfToken, sent with the cb_auth_token cookie",
      schema: { type: 'string' },
    },
  ];
}

/** @fastify/swagger's document transform: completes the document in place. */
const finishObject: SwaggerTransformObject = (document) => {
  const doc = 'openapiObject' in document ? document.openapiObject : document.swaggerObject;
  finishDocument(doc as Document);
  return doc;
};

function finishDocument(doc: Document): void {
  publishHandlerChecks(doc);
  for (const [path, item] of Object.entries(doc.paths ?? {})) {
    for (const [m, op] of Object.entries(item)) {
      const meta = op[META];
      if (meta === undefined) continue;
      delete op[META];
      const method = m.toUpperCase();
      finishApk(op);
      finishStatusRoute(op);
      finishRequestBody(op, doc);
      finishParameters(op, doc);
      finishResponses(op, method, path, meta, doc);
    }
  }
}

// ---------------------------------------------------------------------------------------------
// /docs: swagger-ui, in Splitline's colours

const MARK = `<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 64 64"><rect width="64" height="64" rx="14" fill="#0f766e"/><path d="M18 44 L32 20 L46 44" fill="none" stroke="#fff" stroke-width="6" stroke-linecap="round" stroke-linejoin="round"/><path d="M32 20 V48" stroke="#99f6e4" stroke-width="4" stroke-linecap="round"/></svg>`;
const LOGO = `<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 240 64"><rect width="64" height="64" rx="14" fill="#0f766e"/><path d="M18 44 L32 20 L46 44" fill="none" stroke="#fff" stroke-width="6" stroke-linecap="round" stroke-linejoin="round"/><path d="M32 20 V48" stroke="#99f6e4" stroke-width="4" stroke-linecap="round"/><text x="80" y="42" font-family="system-ui, sans-serif" font-size="28" font-weight="700" fill="#fff">Splitline</text></svg>`;
const THEME_CSS = `.swagger-ui .topbar { background: #134e4a; }
.swagger-ui .topbar .download-url-wrapper, .swagger-ui .topbar-wrapper a.link svg { display: none; }
.swagger-ui .topbar-wrapper a.link img { height: 40px; }
`;

/** Registers the document, /docs and /openapi.json. Before the routes: the document lists routes registered after it. */
export async function registerOpenApi(app: FastifyInstance, opts: { basePath: string }): Promise<void> {
  const base = opts.basePath;
  const documentOptions: FastifyDynamicSwaggerOptions = {
    openapi: {
      openapi: '3.1.0',
      info: { title: 'Splitline API', version: '0.1.0', description: INTRODUCTION },
      // Relative: "Try it out" on /docs then calls the host the page was opened from (127.0.0.1,
      // localhost or a public name alike), never a cross-origin SITE_URL.
      servers: [{ url: base === '' ? '/' : base, description: 'This service, wherever /docs was opened from' }],
      tags: TAGS,
      components: {
        securitySchemes: {
          subscriptionKey: {
            type: 'apiKey',
            in: 'header',
            name: 'Ocp-Apim-Subscription-Key',
            description: 'A subscription key from the admin app; it names the merchant and the scopes',
          },
          sessionCookie: {
            type: 'apiKey',
            in: 'cookie',
            name: 'cb_auth_token',
            description: 'Admin session from POST /api/auth/login',
          },
          csrfToken: {
            type: 'apiKey',
            in: 'header',
            name: 'x-csrf-token',
            description: "The session's csrfToken (from login or GET /api/auth/me), on every state-changing request with the session cookie",
          },
        },
        headers: {
          CorrelationId: {
            description: "The request's id: the client's X-Correlation-Id when it sent a valid one, else a new UUID. Quote it to support",
            required: true,
            schema: { type: 'string' }, example: '0b9c3f4e-8d52-4d1e-9a57-4cf0f2a1b6de',
          },
          RateLimitLimit: { description: 'Requests allowed in the current one-minute window', schema: { type: 'integer' }, example: 600 },
          RateLimitRemaining: { description: 'Requests left in the current window', schema: { type: 'integer' }, example: 599 },
          RateLimitReset: { description: 'When the window resets, Unix seconds', schema: { type: 'integer' }, example: 1767225660 },
          RetryAfter: {
            description: 'Seconds to wait before retrying: until the rate-limit window resets (429), or while the database or chain is away (503)',
            required: true,
            schema: { type: 'integer', minimum: 1 }, example: 5,
          },
          IdempotentReplayed: {
            description: 'Present when this answer is the stored answer to an earlier request with the same Idempotency-Key',
            schema: { type: 'string', enum: ['true'] },
          },
        },
      },
    },
    refResolver: { buildLocalReference: (json, _base, _fragment, i) => (typeof json.$id === 'string' ? json.$id : `def-${i}`) },
    transform: describeRoute,
    transformObject: finishObject,
  };
  await app.register(swagger, documentOptions);
  await app.register(swaggerUi, {
    routePrefix: '/docs',
    // The page links its assets by absolute path; under PUBLIC_BASE_PATH they must carry the
    // prefix, or a gateway that forwards only the prefix serves the page without its scripts.
    // Unprefixed requests still work: the server strips the prefix from every URL.
    ...(base !== '' ? { indexPrefix: base } : {}),
    uiConfig: { persistAuthorization: true, tryItOutEnabled: true, displayRequestDuration: true, docExpansion: 'list', defaultModelsExpandDepth: 0 },
    logo: { type: 'image/svg+xml', content: Buffer.from(LOGO) },
    theme: {
      title: 'Splitline API reference',
      favicon: [{ filename: 'splitline.svg', rel: 'icon', sizes: 'any', type: 'image/svg+xml', content: Buffer.from(MARK) }],
      css: [{ filename: 'splitline.css', content: THEME_CSS }],
    },
  });
  // swagger-ui's own files that the page never uses: its OAuth2 redirect page (the API has no
  // OAuth2) and its stock icons and logo (the page shows Splitline's). Not served, so nothing at
  // /docs carries another product's name.
  for (const file of UNUSED_SWAGGER_UI_FILES) {
    app.get(`/docs/static/${file}`, { schema: { hide: true } }, () => {
      throw new NotFound(`/docs/static/${file} is not served: the API reference does not use it`);
    });
  }
  app.get('/openapi.json', { schema: { hide: true } }, () => app.swagger());
}

const UNUSED_SWAGGER_UI_FILES = ['oauth2-redirect.html', 'oauth2-redirect.js', 'favicon-16x16.png', 'favicon-32x32.png', 'logo.svg'];
