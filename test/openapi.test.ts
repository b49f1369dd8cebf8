/**
 * The OpenAPI document and the interactive reference: every developer route is described with
 * its security and response schemas, every operation with an id, its statuses and their error
 * codes, response headers and examples that hold; /docs is Splitline's and works offline (its
 * assets are served by the app). test/openapi-lint.test.ts runs Redocly's rules on it.
 */
import assert from 'node:assert/strict';
import { readdirSync, readFileSync, statSync } from 'node:fs';
import path from 'node:path';
import { after, before, describe, test } from 'node:test';
import { Ajv2020 } from 'ajv/dist/2020.js';
import { CHAIN_STATUSES, INITIAL_STATUSES, RECEIPT_EXCEPTIONS, TRACKING_STATUSES } from '../src/contract/receipts.ts';
import { SCOPES } from '../src/contract/subscriptions.ts';
import { WEBHOOK_EVENT_TYPES } from '../src/contract/webhooks.ts';
import { and, eq } from 'drizzle-orm';
import { webhookEvents } from '../src/db/schema.ts';
import { enqueueEvent } from '../src/webhooks/outbox.ts';
import { randomWallet, startTestApp, type TestApp } from './helpers/app.ts';
import { setUpMerchant } from './helpers/merchant.ts';
import { DEVELOPER_ROUTES } from './helpers/developer-routes.ts';
import { admin, newAccount, signIn } from './helpers/session.ts';
import { resolveRefs } from './fuzz/route-table.ts';

let t: TestApp;
let doc: any;

const METHODS = ['get', 'post', 'put', 'delete', 'patch'] as const;

/** Every operation of the document: method, path and the operation object. */
function operations(): [string, string, any][] {
  const out: [string, string, any][] = [];
  for (const [p, item] of Object.entries<any>(doc.paths)) for (const m of METHODS) if (item[m] !== undefined) out.push([m.toUpperCase(), p, item[m]]);
  return out;
}

const superadmin = newAccount();

before(async () => {
  t = await startTestApp({ SUPERADMIN_WALLETS: superadmin.address });
  const res = await t.app.inject({ method: 'GET', url: '/openapi.json' });
  assert.equal(res.statusCode, 200);
  doc = res.json();
});
after(async () => {
  await t.close();
});

function jsonSchemaOf(response: any): any {
  return response?.content?.['application/json']?.schema;
}

/** The error codes src/ answers with: `new X(…, 'code')`, `super(status, 'code'`, `error: 'code'`. */
function codesInSource(): Set<string> {
  const files: string[] = [];
  const walk = (dir: string) => {
    for (const name of readdirSync(dir)) {
      const p = path.join(dir, name);
      if (statSync(p).isDirectory()) walk(p);
      else if (name.endsWith('.ts') && !name.startsWith('cli')) files.push(p);
    }
  };
  walk(path.join(import.meta.dirname, '..', 'src'));
  const codes = new Set<string>();
  for (const file of files) {
    const text = readFileSync(file, 'utf8');
    for (const m of text.matchAll(/new (?:InvalidInput|NotFound|Conflict)\((?:[^()]|\([^()]*\))*?,\s*'([a-z_]+)',?\s*\)/g)) codes.add(m[1]!);
    for (const m of text.matchAll(/(?:super|new AppError)\(\s*\d{3},\s*'([a-z_]+)'/g)) codes.add(m[1]!);
    for (const m of text.matchAll(/\berror: '([a-z_]+)'/g)) codes.add(m[1]!);
  }
  assert.ok(codes.size >= 15, `found codes: ${[...codes].join(', ')}`);
  return codes;
}

describe('GET /openapi.json', () => {
  test('is OpenAPI 3.1 with the subscription key scheme', () => {
    assert.match(doc.openapi, /^3\.1\.\d+$/);
    assert.equal(typeof doc.info?.title, 'string');
    const { type, in: where, name } = doc.components?.securitySchemes?.subscriptionKey ?? {};
    assert.deepEqual({ type, in: where, name }, { type: 'apiKey', in: 'header', name: 'Ocp-Apim-Subscription-Key' });
  });

  test('GET /healthz is listed with a response schema and needs no key', () => {
    const op = doc.paths?.['/healthz']?.get;
    assert.ok(op, '/healthz is listed');
    assert.ok(jsonSchemaOf(op.responses?.['200']), '200 has a schema');
    assert.deepEqual(op.security, [], 'declared public');
  });

  test('is titled Splitline and introduces authentication, rate limits, idempotency, degraded mode and errors', () => {
    assert.equal(doc.info.title, 'Splitline API');
    const intro: string = doc.info.description;
    for (const needle of [
      'Ocp-Apim-Subscription-Key',
      'cb_auth_token',
      'x-csrf-token',
      'X-RateLimit-Remaining',
      'resetAt',
      'Idempotency-Key',
      'Idempotent-Replayed',
      'degraded: true',
      '{error, message}',
      'X-Correlation-Id',
    ]) {
      assert.ok(intro.includes(needle), `the introduction mentions ${needle}`);
    }
    for (const tag of doc.tags) assert.ok(typeof tag.description === 'string' && tag.description.length > 0, `tag ${tag.name} is described`);
  });

  test('every operation has a unique, readable operationId, a summary, tags and a security declaration', () => {
    const ids = new Set<string>();
    for (const [m, p, op] of operations()) {
      assert.match(op.operationId ?? '', /^[a-z][A-Za-z]+$/, `${m} ${p} has an operationId`);
      assert.ok(!ids.has(op.operationId), `${op.operationId} is unique`);
      ids.add(op.operationId);
      assert.ok(op.summary && op.tags?.length > 0, `${m} ${p} has a summary and a tag`);
      assert.ok(Array.isArray(op.security), `${m} ${p} declares its security`);
      const schemes = op.security.flatMap((s: object) => Object.keys(s));
      if (schemes.includes('sessionCookie') && m !== 'GET') {
        assert.ok(op.security.every((s: any) => !('sessionCookie' in s) || 'csrfToken' in s), `${m} ${p} needs x-csrf-token with the cookie`);
      }
    }
    for (const id of ['listReceipts', 'createReceipt', 'getReceipt', 'getReceiptStatus', 'recordReceiptStatus', 'createOrder', 'refundReceipt']) {
      assert.ok(ids.has(id), `${id} is an operationId`);
    }
    assert.equal(doc.components.securitySchemes.csrfToken.name, 'x-csrf-token');
  });

  test('public operations say so, and the receipt list limit is optional', () => {
    for (const [m, p] of [
      ['post', '/api/receipts/status'],
      ['get', '/api/pay/{id}'],
      ['post', '/api/auth/challenge'],
      ['post', '/api/auth/login'],
    ] as const) {
      assert.deepEqual(doc.paths[p][m].security, [], `${m} ${p} is public`);
    }
    const limit = doc.paths['/api/receipts'].get.parameters.find((x: any) => x.name === 'limit');
    assert.equal(limit.required, false);
    assert.equal(limit.schema.default, 100);
  });

  test('every response is described, carries X-Correlation-Id and an example; errors list their codes', () => {
    for (const [m, p, op] of operations()) {
      const statuses = Object.keys(op.responses);
      if (op.operationId !== 'withdrawFromSplit') assert.ok(statuses.some((s) => /^2\d\d$/.test(s)), `${m} ${p} documents a 2xx`);
      for (const [status, response] of Object.entries<any>(op.responses)) {
        const what = `${m} ${p} ${status}`;
        assert.ok(response.description && response.description !== 'Default Response', `${what} is described`);
        assert.ok(response.headers?.['X-Correlation-Id'], `${what} has X-Correlation-Id`);
        for (const [type, media] of Object.entries<any>(response.content ?? {})) {
          if (!type.includes('json')) continue;
          assert.ok(media.example !== undefined || media.examples !== undefined, `${what} has an example`);
        }
        if (jsonSchemaOf(response)?.$ref === '#/components/schemas/Error') {
          const codes = Object.keys(response.content['application/json'].examples);
          assert.ok(codes.length > 0, `${what} lists its error codes`);
          for (const code of codes) assert.ok(response.description.includes(`\`${code}\``), `${what} names ${code}`);
          if (status === '429' || status === '503') assert.ok(response.headers['Retry-After'], `${what} has Retry-After`);
        }
      }
    }
  });

  test('session operations that touch the database document 503, key operations their rate-limit headers', () => {
    for (const [m, p, op] of operations()) {
      const schemes = op.security.flatMap((s: object) => Object.keys(s));
      if (schemes.length === 0) continue;
      assert.ok(op.responses['503'], `${m} ${p} documents 503`);
      assert.ok(op.responses['503'].content['application/json'].examples.database_unavailable, `${m} ${p}: 503 database_unavailable`);
      const ok = Object.entries<any>(op.responses).find(([s]) => /^2/.test(s))?.[1];
      if (ok !== undefined) assert.ok(ok.headers['X-RateLimit-Remaining'], `${m} ${p} shows the rate-limit headers`);
      if (m === 'POST' && op.parameters?.some((x: any) => x.name === 'idempotency-key')) {
        assert.ok(op.responses['409'], `${m} ${p} documents 409 for a reused Idempotency-Key`);
        if (ok !== undefined) assert.ok(ok.headers['Idempotent-Replayed'], `${m} ${p} shows Idempotent-Replayed`);
      }
    }
  });

  test('the request bodies the specification left open are typed, with the server’s own constraints', () => {
    const body = (p: string) => resolveRefs(doc.paths[p].post.requestBody.content['application/json'].schema, doc);
    const status = body('/api/receipts/status');
    assert.deepEqual([...status.required].sort(), ['receiptId', 'status', 'wallet']);
    assert.match(status.properties.wallet.pattern, /0x/);
    const refund = body('/api/receipts/refund');
    assert.equal(refund.properties.usd.exclusiveMinimum, 0);
    assert.equal(refund.properties.usd.multipleOf, 0.01);
    assert.ok(body('/api/receipts/terminal').properties.amountUsd);
    assert.equal(body('/api/admin/users').type, 'array');
    assert.ok(body('/api/admin/users').items.properties.wallet.pattern);
    const create = body('/api/receipts');
    assert.ok(create.properties.id.pattern, 'receipt ids have their pattern');
    assert.equal(create.properties.totalUsd.exclusiveMinimum, 0);
    assert.equal(create.properties.totalUsd.multipleOf, 0.01);
    assert.equal(create.properties.lineItems.items.properties.qty.minimum, 1);
    // The handler answers items_required itself, but the document states the rule.
    const order = body('/api/orders');
    assert.deepEqual(order.required, ['items']);
    assert.equal(order.properties.items.type, 'array');
    assert.equal(order.properties.items.minItems, 1);
    assert.equal(order.properties.items.anyOf, undefined, 'items is not nullable');
  });

  test('closed sets come from the server’s constants', () => {
    const enums = (schema: any): unknown[] => (schema.enum ?? (schema.anyOf ?? []).flatMap((s: any) => s.enum ?? []));
    const error = doc.components.schemas.Error.properties.error;
    for (const code of codesInSource()) assert.ok(error.enum.includes(code), `the Error enum lists ${code}, which the source answers`);
    const receipt = doc.components.schemas.Receipt.properties;
    for (const s of [...INITIAL_STATUSES, ...TRACKING_STATUSES, ...CHAIN_STATUSES]) assert.ok(enums(receipt.status).includes(s), `status ${s}`);
    for (const e of RECEIPT_EXCEPTIONS) assert.ok(receipt.exception.enum.includes(e), `exception ${e}`);
    const sub = resolveRefs(doc.paths['/api/admin/subscriptions'].get.responses['200'].content['application/json'].schema, doc);
    assert.deepEqual(sub.properties.subscriptions.items.properties.scopes.items.enum, [...SCOPES]);
    const hook = resolveRefs(doc.paths['/api/admin/webhooks'].post.requestBody.content['application/json'].schema, doc);
    assert.deepEqual(hook.properties.events.items.enum, [...WEBHOOK_EVENT_TYPES]);
    const me = resolveRefs(doc.paths['/api/auth/me'].get.responses['200'].content['application/json'].schema, doc);
    assert.deepEqual(me.properties.roles.items.enum, ['owner', 'admin', 'superadmin']);
  });

  for (const route of DEVELOPER_ROUTES) {
    test(`${route.method} ${route.path} is listed with its key, response schemas and the error schema`, () => {
      const op = doc.paths?.[route.path]?.[route.method.toLowerCase()];
      assert.ok(op, `${route.method} ${route.path} is in the document`);
      // The key, or (for the admin app) the session, with its CSRF token on writes.
      assert.deepEqual(op.security, [{ subscriptionKey: [] }, route.method === 'GET' ? { sessionCookie: [] } : { sessionCookie: [], csrfToken: [] }]);
      const documented = Object.entries<any>(op.responses ?? {});
      const answers = documented.filter(([status]) => /^2\d\d$/.test(status) || status === '410');
      assert.ok(answers.length > 0, 'a success (or, for withdraw, the 410) response is documented');
      for (const [status, response] of answers) assert.ok(jsonSchemaOf(response) !== undefined || status === '204', `${status} has a schema`);
      for (const status of ['401', '429']) {
        assert.deepEqual(jsonSchemaOf(op.responses?.[status]), { $ref: '#/components/schemas/Error' }, `${status} uses the Error schema`);
      }
      if (route.scope !== undefined) {
        assert.deepEqual(jsonSchemaOf(op.responses?.['403']), { $ref: '#/components/schemas/Error' }, '403 uses the Error schema');
      }
    });
  }

  test('every $ref resolves within the document', () => {
    const refs: string[] = [];
    const walk = (v: unknown): void => {
      if (Array.isArray(v)) v.forEach(walk);
      else if (v !== null && typeof v === 'object') {
        for (const [k, x] of Object.entries(v)) {
          if (k === '$ref' && typeof x === 'string') refs.push(x);
          else walk(x);
        }
      }
    };
    walk(doc);
    assert.ok(refs.length > 0);
    for (const ref of new Set(refs)) {
      assert.match(ref, /^#\//, `${ref} is local`);
      let node: any = doc;
      for (const part of ref.slice(2).split('/')) node = node?.[part.replace(/~1/g, '/').replace(/~0/g, '~')];
      assert.ok(node !== undefined, `${ref} resolves`);
    }
    const error = doc.components.schemas.Error;
    assert.deepEqual([...error.required].sort(), ['error', 'message']);
  });
});

describe('GET /docs', () => {
  test('is titled Splitline, with its own logo and icon and no framework branding', async () => {
    const page = await t.app.inject({ method: 'GET', url: '/docs' });
    assert.match(page.body, /<title>Splitline API reference<\/title>/);
    assert.doesNotMatch(page.body, /<title>[^<]*swagger/i);
    assert.doesNotMatch(page.body, /favicon-(16|32)x\1\.png/, "no Swagger favicon");
    const init = await t.app.inject({ method: 'GET', url: '/docs/static/swagger-initializer.js' });
    assert.match(init.body, /data:image\/svg\+xml;base64,/, 'the top bar shows the Splitline logo');
    const logo = Buffer.from(init.body.match(/data:image\/svg\+xml;base64,([A-Za-z0-9+/=]+)/)![1]!, 'base64').toString();
    assert.match(logo, /Splitline/);
  });

  test("swagger-ui's unused files are not served: its OAuth2 redirect page, stock icons and logo", async () => {
    for (const file of ['oauth2-redirect.html', 'oauth2-redirect.js', 'favicon-16x16.png', 'favicon-32x32.png', 'logo.svg']) {
      const res = await t.app.inject({ method: 'GET', url: `/docs/static/${file}` });
      assert.equal(res.statusCode, 404, file);
      assert.equal(res.json().error, 'not_found');
    }
    // Its own files still are.
    assert.equal((await t.app.inject({ method: 'GET', url: '/docs/static/swagger-ui.css' })).statusCode, 200);
  });

  test('serves the interactive reference with every asset from the app, no CDN', async () => {
    const page = await t.app.inject({ method: 'GET', url: '/docs' });
    assert.equal(page.statusCode, 200);
    assert.match(String(page.headers['content-type']), /text\/html/);
    assert.match(page.body, /swagger-ui/i);
    const assets = [...page.body.matchAll(/\b(?:src|href)="([^"]+)"/g)].map((m) => m[1] as string);
    assert.ok(assets.length >= 3, `assets found: ${assets.join(', ')}`);
    assert.doesNotMatch(page.body, /\b(?:src|href)="(?:https?:)?\/\//, 'no external URL in the page');
    for (const asset of assets) {
      const url = new URL(asset, 'http://app.test/docs/').pathname;
      const res = await t.app.inject({ method: 'GET', url });
      assert.equal(res.statusCode, 200, `${asset} loads`);
      assert.ok(res.rawPayload.length > 0, `${asset} is not empty`);
      if (asset.endsWith('.js')) assert.doesNotMatch(res.body, /https?:\/\/(?:unpkg|cdn|cdnjs|jsdelivr)/, `${asset} loads nothing from a CDN`);
    }
  });

  test('the reference loads the same document', async () => {
    const init = await t.app.inject({ method: 'GET', url: '/docs/static/swagger-initializer.js' });
    assert.equal(init.statusCode, 200);
    // The initializer resolves the document against the page's own address (/docs/).
    const specUrl = init.body.match(/\burl:\s*resolveUrl\(['"]([^'"]+)['"]\)/)?.[1];
    assert.ok(specUrl, 'the initializer names the document');
    assert.match(init.body, /validatorUrl:\s*null/, 'no call to the public swagger.io validator');
    const res = await t.app.inject({ method: 'GET', url: new URL(specUrl, 'http://app.test/docs/').pathname });
    assert.equal(res.statusCode, 200);
    const served = res.json();
    assert.equal(served.openapi, doc.openapi);
    assert.deepEqual(Object.keys(served.paths).sort(), Object.keys(doc.paths).sort());
  });
});

describe('the headers the document promises', () => {
  test('a refused request carries X-RateLimit-*, Retry-After and X-Correlation-Id', async () => {
    const key = await t.key(randomWallet(), { rateLimitPerMinute: 1 });
    const first = await t.call(key, 'GET', '/api/receipts');
    assert.equal(first.status, 200);
    for (const h of ['x-ratelimit-limit', 'x-ratelimit-remaining', 'x-ratelimit-reset', 'x-correlation-id']) assert.ok(first.headers[h] !== undefined, h);
    const refused = await t.call(key, 'GET', '/api/receipts');
    assert.equal(refused.status, 429);
    assert.equal(refused.body.error, 'rate_limited');
    const wait = Number(refused.headers['retry-after']);
    assert.ok(Number.isInteger(wait) && wait >= 1 && wait <= 60, `Retry-After ${String(refused.headers['retry-after'])}`);
    assert.ok(refused.headers['x-correlation-id']);
  });
});

describe('request examples', () => {
  /** The developer (key) operations that take a JSON body. */
  const withBodies = () => operations().filter(([, , op]) => 'subscriptionKey' in (op.security[0] ?? {}) && op.requestBody?.content?.['application/json']);

  test('every developer operation has a request example that validates against its own schema', () => {
    const ajv = new Ajv2020({ strict: false, allErrors: true });
    const checked: string[] = [];
    for (const [m, p, op] of withBodies()) {
      const media = op.requestBody.content['application/json'];
      assert.ok(media.example !== undefined, `${m} ${p} has a request example`);
      const validate = ajv.compile(resolveRefs(media.schema, doc));
      assert.ok(validate(media.example), `${m} ${p}: ${JSON.stringify(validate.errors)}`);
      checked.push(`${m} ${p}`);
    }
    for (const route of DEVELOPER_ROUTES.filter((r) => r.method === 'POST' && r.path !== '/api/split/withdraw')) {
      assert.ok(checked.includes(`${route.method} ${route.path}`), `${route.method} ${route.path} is checked`);
    }
  });

  test('checks published for handlers stay theirs: $19.99 passes the validator, and no internal keyword leaks', async () => {
    const text = JSON.stringify(doc);
    assert.doesNotMatch(text, /x-handler-checks|x-splitline-meta/);
    const key = await t.key(randomWallet());
    const res = await t.call(key, 'POST', '/api/receipts', { id: 'cents-1999', lineItems: [{ label: 'Tea', priceUsd: 19.99 }], totalUsd: 19.99 });
    assert.equal(res.status, 201, JSON.stringify(res.body));
    const refused = await t.call(key, 'POST', '/api/receipts', { id: 'cents-1', lineItems: [{ label: 'Tea', priceUsd: 1.005 }], totalUsd: 1.005 });
    assert.equal(refused.status, 400);
    assert.equal(refused.body.error, 'invalid_input');
  });

  test('the server takes every request example as it is (no invalid_input), as the credential the operation names', async () => {
    const key = await t.key(randomWallet());
    const session = await signIn(t, superadmin);
    let sent = 0;
    for (const [m, p, op] of operations()) {
      const example = op.requestBody?.content?.['application/json']?.example;
      // The webhook example is a loopback URL, which only an instance on the dev chain accepts.
      if (example === undefined || op.operationId === 'createWebhook') continue;
      const url = p.replace(/\{[^}]+\}/g, 'x');
      const schemes = op.security.flatMap((s: object) => Object.keys(s));
      const method = m as 'POST' | 'PUT';
      const res = schemes.includes('subscriptionKey')
        ? await t.call(key, method, url, example)
        : schemes.includes('sessionCookie')
          ? await admin(t, session, method, url, example)
          : await t.call(null, method, url, example);
      assert.ok(!(res.status === 400 && res.body.error === 'invalid_input'), `${m} ${p} → ${res.status} ${JSON.stringify(res.body)}`);
      sent++;
    }
    assert.ok(sent >= 15, `${sent} examples sent`);
  });
});

describe('parameter examples ("Try it out")', () => {
  type Param = { in: string; name: string; required?: boolean; schema: object; example?: unknown; examples?: Record<string, { value: unknown }> };
  const paramsOf = (op: any): Param[] => (op.parameters ?? []).filter((p: Param) => p.in === 'query' || p.in === 'path');

  test('every path and query parameter and every JSON request body has an example that validates against its own schema', () => {
    const ajv = new Ajv2020({ strict: false, allErrors: true });
    let params = 0;
    let bodies = 0;
    for (const [m, p, op] of operations()) {
      for (const param of paramsOf(op)) {
        // One example, or named ones (a choice in the reference); each must fit.
        const values = param.example !== undefined ? [param.example] : Object.values<{ value: unknown }>(param.examples ?? {}).map((e) => e.value);
        assert.ok(values.length > 0, `${m} ${p}: ${param.in} parameter ${param.name} has an example`);
        const validate = ajv.compile(resolveRefs(param.schema, doc));
        for (const value of values) assert.ok(validate(value), `${m} ${p} ${param.name}=${JSON.stringify(value)}: ${JSON.stringify(validate.errors)}`);
        params++;
      }
      const media = op.requestBody?.content?.['application/json'];
      if (media === undefined) continue;
      assert.ok(media.example !== undefined, `${m} ${p} has a request body example`);
      const validate = ajv.compile(resolveRefs(media.schema, doc));
      assert.ok(validate(media.example), `${m} ${p} body: ${JSON.stringify(validate.errors)}`);
      bodies++;
    }
    assert.ok(params >= 40 && bodies >= 20, `${params} parameters, ${bodies} bodies`);
  });

  test('the new parameters of the integrator API carry the examples the reference shows', () => {
    const example = (path: string, name: string) => paramsOf(doc.paths[path].get).find((x) => x.name === name)?.example;
    assert.equal(example('/api/receipts', 'starting_after'), 'order-1001');
    assert.equal(example('/api/receipts', 'status'), 'completed');
    assert.equal(typeof example('/api/receipts', 'created_gte'), 'number');
    assert.equal(typeof example('/api/receipts', 'created_lte'), 'number');
    assert.equal(example('/api/events', 'type'), 'receipt.completed');
    assert.match(String(example('/api/events', 'starting_after')), /^msg_/);
    assert.equal(example('/api/events', 'limit'), 20);
    assert.equal(example('/api/split/settlements', 'format'), 'csv');
    // metadata in the bodies' examples; returnUrl's example on its field, since on a fresh
    // service no shop allows its origin yet (the body examples must work from "Try it out").
    for (const p of ['/api/receipts', '/api/orders']) {
      const media = doc.paths[p].post.requestBody.content['application/json'];
      assert.ok(Object.keys(media.example.metadata).length > 0, `${p}: metadata in the example`);
      const schema = resolveRefs(media.schema, doc);
      assert.equal(schema.properties.returnUrl.examples[0], 'https://shop.example/orders/SO-20417', `${p}: returnUrl's example`);
      assert.ok(schema.properties.metadata.examples.length > 0, `${p}: metadata's example`);
    }
  });

  test('every GET of the developer API answers its documented examples without a 4xx, once the objects they name exist', async () => {
    // What a developer would have made first: the example receipt (POST /api/receipts's example),
    // and an event whose id the examples name (events come from payments, which no example makes).
    const m = await setUpMerchant(t);
    const created = await t.call(m.key, 'POST', '/api/receipts', doc.paths['/api/receipts'].post.requestBody.content['application/json'].example);
    assert.equal(created.status, 201, JSON.stringify(created.body));
    const eventId = paramsOf(doc.paths['/api/events/{id}'].get).find((x) => x.name === 'id')!.example as string;
    const db = t.deps.database.db;
    const made = await db.transaction((tx) => enqueueEvent(tx, { wallet: m.wallet, type: 'receipt.completed', dedupeKey: 'openapi-example', data: { receiptId: 'order-1001' } }, Date.now()));
    await db.update(webhookEvents).set({ id: eventId }).where(and(eq(webhookEvents.wallet, m.wallet), eq(webhookEvents.id, made!)));

    const url = (p: string, params: Param[], only?: Param) => {
      let path = p;
      const query = new URLSearchParams();
      for (const x of params) {
        if (x.in === 'path') path = path.replace(`{${x.name}}`, encodeURIComponent(String(x.example)));
        else if (only === undefined || x === only) query.set(x.name, String(x.example));
      }
      const q = query.toString();
      return q === '' ? path : `${path}?${q}`;
    };
    const sent: string[] = [];
    for (const [m2, p, op] of operations()) {
      if (m2 !== 'GET' || !('subscriptionKey' in (op.security[0] ?? {}))) continue;
      const params = paramsOf(op);
      const queries = params.filter((x) => x.in === 'query');
      // Every query example together, as "Try it out" fills them in, and each alone.
      for (const target of [url(p, params), ...queries.map((q) => url(p, params, q))]) {
        const res = await t.call(m.key, 'GET', target);
        // This test app runs without a chain: the routes that read the chain say so with a 503.
        const noChain = res.status === 503 && res.body.error === 'chain_unavailable';
        assert.ok(res.status < 400 || noChain, `GET ${target} → ${res.status} ${JSON.stringify(res.body)}`);
        sent.push(target);
      }
    }
    for (const must of ['/api/receipts?', '/api/events?', '/api/events/msg_', '/api/receipts/order-1001', '/api/split/settlements?']) {
      assert.ok(sent.some((s) => s.startsWith(must)), `${must} was sent: ${sent.join(' ')}`);
    }
  });
});
