/**
 * Unknown query parameters (DESIGN.md "Integrator API"): every operation of the app's OpenAPI
 * document, called with credentials that open it and a body its schema accepts, answers 400
 * invalid_input naming a query parameter it does not declare, beside the ones it does. The
 * operations come from the document, so a new route is walked without a list to edit; the dev
 * chain's two (CHAIN=dev only) are in test/chain/dev-http.test.ts.
 */
import assert from 'node:assert/strict';
import { after, describe, test } from 'node:test';
import { startTestApp, type Res } from './helpers/app.ts';
import { ADMIN_URLS } from './helpers/admin-routes.ts';
import { setUpMerchant } from './helpers/merchant.ts';
import { DEVELOPER_CALLS, RECEIPT_ID } from './helpers/developer-routes.ts';
import { newAccount, signIn } from './helpers/session.ts';
import { routesFromOpenApi, type FuzzRoute, type Param } from './fuzz/route-table.ts';

const SITE = 'http://pay.test';
const UNKNOWN = 'not_a_parameter';
const superAccount = newAccount();
// Built while the file loads: the tests are made from the document it publishes.
const t = await startTestApp({ SUPERADMIN_WALLETS: superAccount.address, PUBLIC_RATE_LIMIT_PER_MINUTE: '100000' });
const doc = (await t.app.inject({ method: 'GET', url: '/openapi.json' })).json();
const operations = routesFromOpenApi(doc);

const { key } = await setUpMerchant(t);
const session = await signIn(t, superAccount);

after(async () => {
  await t.close();
});

/** A value a parameter's schema accepts: its example, else one made for its type. */
function valueOf(p: Param): string {
  const s = p.schema;
  const example = s.examples?.[0] ?? s.example ?? s.default ?? s.enum?.[0];
  if (example !== undefined) return String(example);
  if (s.type === 'integer' || s.type === 'number') return String(s.minimum ?? 1);
  if (s.type === 'boolean') return 'true';
  return 'x';
}

/** The path and query to call `r` with: the security matrices' URL where they keep one, else made from the document. */
function urlOf(r: FuzzRoute): URL {
  const operation = `${r.method} ${r.path}`;
  const admin = ADMIN_URLS[operation];
  const kept = DEVELOPER_CALLS[operation]?.url ?? (typeof admin === 'string' ? admin : admin?.url);
  const made = r.pathParams.reduce((path, p) => path.replace(`{${p.name}}`, encodeURIComponent(p.name === 'id' ? RECEIPT_ID : valueOf(p))), r.path);
  const url = new URL(kept ?? made, SITE);
  for (const p of r.query) if (p.required && !url.searchParams.has(p.name)) url.searchParams.set(p.name, valueOf(p));
  return url;
}

/** The body the document gives as the operation's request example (bytes for a binary upload). */
function bodyOf(r: FuzzRoute): { payload?: unknown; contentType?: string } {
  if (r.method === 'GET') return {};
  const content = doc.paths[r.path][r.method.toLowerCase()].requestBody?.content ?? {};
  const json = content['application/json'];
  if (json !== undefined) {
    const example = json.example ?? Object.values<{ value: unknown }>(json.examples ?? {})[0]?.value;
    return { payload: example, contentType: 'application/json' };
  }
  const [other] = Object.keys(content);
  return other === undefined ? {} : { payload: Buffer.from('PK\u0003\u0004'), contentType: other };
}

function send(r: FuzzRoute, url: URL): Promise<Res> {
  const { payload, contentType } = bodyOf(r);
  const headers: Record<string, string> = contentType === undefined ? {} : { 'content-type': contentType };
  if (r.auth === 'session') Object.assign(headers, { cookie: session.cookie, 'x-csrf-token': session.csrfToken, origin: SITE });
  return t.call(r.auth === 'key' ? key : null, r.method, url.pathname + url.search, payload, headers);
}

function assertRefusesUnknown(res: Res, name: string, declared: string[]): void {
  assert.equal(res.status, 400, `expected 400, got ${res.status} ${JSON.stringify(res.body)}`);
  assert.equal(res.body.error, 'invalid_input');
  assert.ok(res.body.message.startsWith(`Unknown query parameter ${JSON.stringify(name)}:`), res.body.message);
  for (const d of declared) assert.ok(res.body.message.includes(d), `the message lists the declared parameter ${d}: ${res.body.message}`);
  if (declared.length === 0) assert.match(res.body.message, /takes no query parameter/);
}

describe('every operation refuses a query parameter it does not declare', () => {
  test('the document lists the operations walked here, developer, admin and public alike', () => {
    const kinds = new Set(operations.map((r) => r.auth));
    assert.deepEqual([...kinds].sort(), ['key', 'public', 'session']);
    assert.ok(operations.length >= 50, `only ${operations.length} operations in the document`);
  });

  for (const r of operations) {
    // A withdrawn operation answers 410 to anything, before reading the request: it is gone.
    const gone = doc.paths[r.path][r.method.toLowerCase()].deprecated === true;
    test(`${r.method} ${r.path}${gone ? ' (deprecated: 410 whatever the query)' : ''}`, async () => {
      const url = urlOf(r);
      url.searchParams.set(UNKNOWN, '1');
      const res = await send(r, url);
      if (gone) {
        assert.equal(res.status, 410, JSON.stringify(res.body));
        assert.equal(res.body.error, 'deprecated');
        return;
      }
      assertRefusesUnknown(res, UNKNOWN, r.query.map((p) => p.name));
    });
  }
});

describe('what the refusal keeps and what it names', () => {
  test('an unknown parameter beside declared ones: 400, listing what the operation takes', async () => {
    const res = await t.call(key, 'GET', '/api/receipts?limit=5&cursor=abc');
    assertRefusesUnknown(res, 'cursor', ['limit', 'starting_after', 'status', 'created_gte', 'created_lte']);
  });

  test('a misspelt parameter is named as sent', async () => {
    assertRefusesUnknown(await t.call(key, 'GET', '/api/receipts?Limit=5'), 'Limit', ['limit']);
    assertRefusesUnknown(await t.call(key, 'GET', '/api/receipts?limit%5B%5D=5'), 'limit[]', ['limit']);
  });

  test('a route that checks its own body in the specification order still refuses the query first, whatever the body', async () => {
    const tracking = await t.call(null, 'POST', `/api/receipts/status?${UNKNOWN}=1`, {});
    assertRefusesUnknown(tracking, UNKNOWN, []);
    const refund = await t.call(null, 'POST', `/api/receipts/refund?${UNKNOWN}=1`, { receiptId: 7 }, { cookie: session.cookie, 'x-csrf-token': session.csrfToken, origin: SITE });
    assertRefusesUnknown(refund, UNKNOWN, []);
    // Without the unknown parameter the same bodies meet the specification's own codes.
    assert.equal((await t.call(null, 'POST', '/api/receipts/status', {})).body.error, 'missing_receipt_id');
  });

  test('an empty name (a stray "=" or "&=") is a parameter too', async () => {
    assertRefusesUnknown(await t.call(key, 'GET', '/api/inventory?=1'), '', []);
  });

  test('only the declared parameters: answered as before', async () => {
    const created = await t.call(key, 'POST', '/api/receipts', { id: 'uq-1', lineItems: [{ label: 'Tea', priceUsd: 2 }], totalUsd: 2 });
    assert.equal(created.status, 201, JSON.stringify(created.body));
    const list = await t.call(key, 'GET', '/api/receipts?limit=1&status=pending');
    assert.equal(list.status, 200, JSON.stringify(list.body));
    assert.equal(list.body.receipts.length, 1);
    const status = await t.call(key, 'GET', '/api/receipts/status?receiptId=uq-1');
    assert.equal(status.status, 200, JSON.stringify(status.body));
    assert.equal((await t.call(key, 'GET', '/api/inventory')).status, 200);
    const token = new URL(created.body.paymentUrl).searchParams.get('t');
    assert.equal((await t.call(null, 'GET', `/api/pay/uq-1?t=${token}`)).status, 200);
  });

  test('a refused request changes nothing: a receipt create with an unknown parameter stores no receipt', async () => {
    const res = await t.call(key, 'POST', `/api/receipts?${UNKNOWN}=1`, { id: 'uq-2', lineItems: [{ label: 'Tea', priceUsd: 2 }], totalUsd: 2 });
    assertRefusesUnknown(res, UNKNOWN, []);
    assert.equal((await t.call(key, 'GET', '/api/receipts/uq-2')).status, 404);
  });

  test('bodies keep their rule: an unknown body field is still dropped, not refused', async () => {
    const res = await t.call(key, 'POST', '/api/inventory', { sku: 'uq-sku', name: 'Mug', priceUsd: 3, stockQty: 1, colour: 'red' });
    assert.equal(res.status, 201, JSON.stringify(res.body));
    assert.equal('colour' in res.body.item, false);
  });

  test('pages and files outside the document still take any query (cache busting, the payment link)', async () => {
    const doc = await t.app.inject({ method: 'GET', url: '/openapi.json?v=1' });
    assert.equal(doc.statusCode, 200);
    const page = await t.app.inject({ method: 'GET', url: '/pay/uq-1?t=abc&utm_source=mail' });
    assert.notEqual(page.statusCode, 400);
  });
});
