/**
 * Property-based fuzzing of every route in the OpenAPI document: hostile bodies, query strings,
 * path parameters and headers, sent with valid credentials (a subscription key holding every
 * scope, or a signed-in superadmin session with its CSRF token) so the input reaches validation
 * and the handlers. For every request:
 *   - it is answered within REQUEST_BUDGET_MS (no hang);
 *   - never 500 (503 only where documented);
 *   - the status is one the route documents in the OpenAPI document;
 *   - an error body is exactly {error, message} (plus resetAt / reason), with string values.
 * Seeded and bounded: FUZZ_RUNS (default 100) runs per route, FUZZ_SEED to vary the inputs.
 */
import assert from 'node:assert/strict';
import { after, describe, test } from 'node:test';
import fc from 'fast-check';
import type { InjectOptions, LightMyRequestResponse } from 'fastify';
import { randomWallet, startTestApp } from '../helpers/app.ts';
import { newAccount, signIn, type Session } from '../helpers/session.ts';
import { DEVELOPER_ROUTES } from '../helpers/developer-routes.ts';
import { setUpMerchant } from '../helpers/merchant.ts';
import { deadline } from '../helpers/wait.ts';
import { bodyFor, extraHeaders, foldHeaders, pathFor, queryFor, type Body, type Known } from './arbitraries.ts';
import { routesFromOpenApi, type FuzzRoute } from './route-table.ts';

const RUNS = Number(process.env.FUZZ_RUNS ?? 100);
const SEED = Number(process.env.FUZZ_SEED ?? 6_2026);
/** A real-time bound on purpose: the property is that no input hangs a route; 5 s is generous for one request. */
const REQUEST_BUDGET_MS = 5000;
const ERROR_KEYS = new Set(['error', 'message', 'resetAt', 'reason']);
const SITE = 'http://pay.test';

// Every signed-in fuzzing session is a superadmin, so role checks let the input through.
const accounts = Array.from({ length: 256 }, () => newAccount());
/** Runs per signed-in wallet, under its budget of SESSION_RATE_LIMIT_PER_MINUTE (600) per minute. */
const RUNS_PER_SESSION = 400;
const t = await startTestApp({
  PUBLIC_RATE_LIMIT_PER_MINUTE: '1000000',
  SUPERADMIN_WALLETS: accounts.map((a) => a.address).join(','),
});
const { wallet: merchant, key } = await setUpMerchant(t);
const known: Known = { wallet: merchant, receiptId: 'fuzz-receipt', sku: 'fuzz-sku', payToken: '' };
const created = await t.call(key, 'POST', '/api/receipts', { id: known.receiptId, lineItems: [{ label: 'Tea', priceUsd: 2 }], totalUsd: 2 });
const stocked = await t.call(key, 'POST', '/api/inventory', { sku: known.sku, name: 'Coffee', priceUsd: 3, stockQty: -1 });
for (const res of [created, stocked]) assert.ok(res.status === 200 || res.status === 201, `set-up: ${res.status} ${JSON.stringify(res.body)}`);
known.payToken = new URL(created.body.paymentUrl).searchParams.get('t') ?? '';
assert.ok(known.payToken !== '', 'the payment URL carries its token');
const doc = (await t.app.inject({ method: 'GET', url: '/openapi.json' })).json();
const routes = routesFromOpenApi(doc);

/**
 * Valid bodies for the main writes, which the fuzzer also mutates in a place or two so that the
 * checks past schema validation see hostile values. Routes without one get schema-shaped bodies.
 */
const EXAMPLES: Record<string, unknown> = {
  'POST /api/receipts': { id: 'fuzz-new', lineItems: [{ label: 'Tea', priceUsd: 2.5, qty: 2 }], totalUsd: 5 },
  'POST /api/receipts/status': { receiptId: known.receiptId, wallet: merchant, status: 'link_opened' },
  'POST /api/inventory': { sku: 'fuzz-sku-2', name: 'Mug', priceUsd: 12.5, stockQty: 10, taxable: true, description: 'A mug', category: 'cups' },
  'POST /api/orders': { items: [{ sku: known.sku, qty: 1 }], jurisdictionCode: 'CA', taxRate: 0.0825, taxComponents: ['state'] },
  'POST /api/shop/config': {
    processingFeePct: 2.5,
    name: 'Shop',
    allowedEmbedOrigins: ['https://shop.example'],
    taxJurisdictions: [{ code: 'CA', rate: 0.0725, components: ['state'] }],
  },
  'POST /api/split/deploy': {
    recipients: [
      { address: randomWallet(), sharesBps: 9950 },
      { address: '0x000000000000000000000000000000000000beef', sharesBps: 50 },
    ],
  },
  'POST /api/receipts/refund': {
    receiptId: known.receiptId,
    wallet: merchant,
    buyer: randomWallet(),
    usd: 1,
    items: [{ label: 'Tea', priceUsd: 1, qty: 1 }],
    txHash: '0x' + 'ab'.repeat(32),
  },
  'POST /api/receipts/terminal': { amountUsd: 12.34, label: 'Sale', currency: 'USD', jurisdictionCode: 'CA', taxRate: 0.0825, taxComponents: ['state'] },
  'POST /api/auth/challenge': { wallet: merchant },
  'POST /api/auth/login': { wallet: merchant, nonce: 'n', signature: '0x' + '11'.repeat(65) },
  'POST /api/admin/subscriptions': { product: 'default', scopes: ['receipts:read'], name: 'Fuzz' },
  'POST /api/admin/subscriptions/{id}/rotate': { key: 'primary' },
  'POST /api/admin/roles': { wallet: randomWallet(), role: 'admin' },
  'POST /api/admin/users': [{ wallet: randomWallet(), displayName: 'Ann', xp: 10, live: false, spacePublic: true, domains: ['a'], platforms: [], languages: ['en'] }],
  'PUT /api/users/me': { displayName: 'Me', pfpUrl: null, spacePublic: true, domains: ['a'], languages: ['en'] },
  'POST /api/users/heartbeat': { live: true, spaceUrl: 'https://93.184.216.34/space', platform: 'web' },
  'POST /api/admin/webhooks': { url: 'https://93.184.216.34/hook', events: ['receipt.completed'] },
  'POST /api/pay/{id}/transaction': { transactionHash: '0x' + 'cd'.repeat(32) },
};

/** What each route answered, for the report. */
const seen = new Map<string, Map<number, number>>();
let requests = 0;
const started = Date.now();

after(async () => {
  const statuses = new Map<number, number>();
  for (const m of seen.values()) for (const [s, n] of m) statuses.set(s, (statuses.get(s) ?? 0) + n);
  const summary = [...statuses.entries()].sort((a, b) => a[0] - b[0]).map(([s, n]) => `${s}×${n}`).join(' ');
  console.log(`# fuzz: ${routes.length} operations, ${requests} requests in ${Date.now() - started} ms; statuses ${summary}`);
  if (process.env.FUZZ_VERBOSE) {
    for (const [route, m] of seen) console.log(`#   ${route}: ${[...m.entries()].sort((a, b) => a[0] - b[0]).map(([s, n]) => `${s}×${n}`).join(' ')}`);
  }
  await t.close();
});

type AuthCase = 'valid' | 'missing' | 'duplicated' | 'garbage' | 'no-csrf' | 'wrong-csrf' | 'foreign-origin';

interface Spec {
  path: string;
  query: string;
  body: Body | undefined;
  extra: [string, string][];
  auth: AuthCase;
}

function specFor(route: FuzzRoute): fc.Arbitrary<Spec> {
  const takesBody = route.method !== 'GET';
  const auth: fc.Arbitrary<AuthCase> =
    route.auth === 'key'
      ? fc.oneof({ weight: 12, arbitrary: fc.constant<AuthCase>('valid') }, fc.constantFrom<AuthCase>('missing', 'duplicated', 'garbage'))
      : route.auth === 'session'
        ? fc.oneof({ weight: 12, arbitrary: fc.constant<AuthCase>('valid') }, fc.constantFrom<AuthCase>('missing', 'garbage', 'no-csrf', 'wrong-csrf', 'foreign-origin'))
        : fc.constant<AuthCase>('valid');
  return fc.record({
    path: pathFor(route, known),
    query: queryFor(route, known),
    // GET bodies are ignored by the server; send one now and then all the same.
    body: takesBody ? bodyFor(route, known, EXAMPLES[`${route.method} ${route.path}`]) : fc.option(bodyFor(route, known), { nil: undefined, freq: 10 }),
    extra: extraHeaders,
    auth,
  });
}

function credentials(route: FuzzRoute, auth: AuthCase, session: Session | undefined): [string, string][] {
  if (route.auth === 'key') {
    if (auth === 'missing') return [];
    if (auth === 'duplicated') return [['ocp-apim-subscription-key', key], ['ocp-apim-subscription-key', key]];
    if (auth === 'garbage') return [['ocp-apim-subscription-key', key.slice(0, -2) + 'zz']];
    return [['ocp-apim-subscription-key', key]];
  }
  if (route.auth === 'session' && session !== undefined) {
    const cookie: [string, string] = ['cookie', auth === 'garbage' ? session.cookie.slice(0, -3) + 'abc' : session.cookie];
    if (auth === 'missing') return [['x-csrf-token', session.csrfToken], ['origin', SITE]];
    const csrf: [string, string][] = auth === 'no-csrf' ? [] : [['x-csrf-token', auth === 'wrong-csrf' ? session.csrfToken + 'x' : session.csrfToken]];
    return [cookie, ...csrf, ['origin', auth === 'foreign-origin' ? 'https://evil.example' : SITE]];
  }
  return [];
}

function checkAnswer(route: FuzzRoute, res: LightMyRequestResponse, what: string): void {
  const status = res.statusCode;
  const said = `${what} → ${status} ${res.body.slice(0, 300)}`;
  assert.ok(status !== 500, `500: ${said}`);
  assert.ok(status < 500 || route.documented.has(status), `undocumented 5xx: ${said}`);
  assert.ok(route.documented.has(status), `status ${status} is not documented for ${route.method} ${route.path} (documents ${[...route.documented].join(', ')}): ${said}`);
  assert.equal(res.headers['x-content-type-options'], 'nosniff', `no nosniff: ${said}`);
  if (status < 400) return;
  assert.match(String(res.headers['content-type']), /^application\/json/, `error not JSON: ${said}`);
  const body = res.json<Record<string, unknown>>();
  assert.ok(body !== null && typeof body === 'object' && !Array.isArray(body), `error body not an object: ${said}`);
  for (const k of Object.keys(body)) assert.ok(ERROR_KEYS.has(k), `unexpected field ${k}: ${said}`);
  assert.equal(typeof body.error, 'string', `error is not a string: ${said}`);
  assert.ok((body.error as string).length > 0, `empty error code: ${said}`);
  assert.equal(typeof body.message, 'string', `message is not a string: ${said}`);
  if ('reason' in body) assert.equal(typeof body.reason, 'string', `reason is not a string: ${said}`);
  if ('resetAt' in body) assert.equal(typeof body.resetAt, 'number', `resetAt is not a number: ${said}`);
}

function seedOf(route: FuzzRoute): number {
  let h = SEED;
  for (const c of `${route.method} ${route.path}`) h = (Math.imul(h, 31) + c.charCodeAt(0)) | 0;
  return h;
}

describe('the route list comes from the OpenAPI document', () => {
  test('it is non-trivial and holds every developer route', () => {
    assert.ok(routes.length >= 30, `only ${routes.length} operations`);
    const listed = new Set(routes.map((r) => `${r.method} ${r.path}`));
    for (const r of DEVELOPER_ROUTES) assert.ok(listed.has(`${r.method} ${r.path}`), `${r.method} ${r.path} is fuzzed`);
    for (const auth of ['key', 'session', 'public'] as const) assert.ok(routes.some((r) => r.auth === auth), `some ${auth} routes`);
    for (const path of ['/api/receipts/status', '/api/pay/{id}', '/api/auth/login', '/api/auth/challenge']) {
      assert.ok(routes.some((r) => r.path === path && r.auth === 'public'), `${path} is fuzzed as a public route`);
    }
    for (const path of ['/api/auth/me', '/api/auth/logout']) assert.ok(routes.some((r) => r.path === path && r.auth === 'session'), `${path} is fuzzed signed in`);
    for (const example of Object.keys(EXAMPLES)) assert.ok(listed.has(example), `the example for ${example} names a route`);
  });
});

describe('hostile input never gets a 500, a hang or an undocumented answer', () => {
  let nextAccount = 0;
  const takeAccount = () => accounts[nextAccount++ % accounts.length]!;
  for (const route of routes) {
    test(`${route.method} ${route.path} (${route.auth})`, async () => {
      let account = takeAccount();
      // Logging out ends the session, so that route signs in afresh for every run.
      const perRun = route.path === '/api/auth/logout';
      let session = route.auth === 'session' ? await signIn(t, account) : undefined;
      let runs = 0;
      const counts = seen.get(`${route.method} ${route.path}`) ?? new Map<number, number>();
      seen.set(`${route.method} ${route.path}`, counts);

      await fc.assert(
        fc.asyncProperty(specFor(route), async (spec) => {
          if (route.auth === 'session' && ++runs % RUNS_PER_SESSION === 0) {
            account = takeAccount();
            session = await signIn(t, account);
          }
          if (perRun) session = await signIn(t, account);
          const headers = foldHeaders([...credentials(route, spec.auth, session), ...spec.extra]);
          const opts: InjectOptions = { method: route.method, url: spec.path + spec.query, headers };
          if (spec.body !== undefined && spec.body.text !== undefined) {
            opts.payload = spec.body.text;
            if (spec.body.contentType !== undefined) headers['content-type'] = spec.body.contentType;
          }
          const what = `${route.method} ${spec.path + spec.query} [${spec.auth}] ${JSON.stringify(headers).slice(0, 300)} body=${JSON.stringify(String(spec.body?.text ?? '')).slice(0, 300)}`;
          const res = await deadline(t.app.inject(opts), REQUEST_BUDGET_MS, `an answer to ${what}`);
          requests++;
          counts.set(res.statusCode, (counts.get(res.statusCode) ?? 0) + 1);
          checkAnswer(route, res, what);
        }),
        { numRuns: RUNS, seed: seedOf(route), endOnFailure: true, includeErrorInReport: true },
      );
    });
  }
});
