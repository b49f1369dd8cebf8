/**
 * The check every test's answers pass through (test/helpers/contract.ts): held to the app's own
 * document, an answer that drifts from it fails with the operation, the status and the first
 * difference; what the document leaves out on purpose is not checked.
 */
import assert from 'node:assert/strict';
import { AssertionError } from 'node:assert';
import { after, before, describe, test } from 'node:test';
import { contractFor, type Answer, type Contract } from './helpers/contract.ts';
import { randomWallet, startTestApp, type TestApp } from './helpers/app.ts';

let t: TestApp;
let contract: Contract;
before(async () => {
  t = await startTestApp();
  contract = contractFor(t.app.swagger());
});
after(async () => {
  await t.close();
});

const JSON_HEADERS: Record<string, string> = { 'content-type': 'application/json; charset=utf-8', 'x-correlation-id': 'c0ffee00' };

function answer(method: string, url: string, status: number, body: unknown, headers = JSON_HEADERS): Answer {
  return { method, url, status, header: (n) => headers[n.toLowerCase()], text: typeof body === 'string' ? body : JSON.stringify(body) };
}

/** The document's own example of a receipt in the list. */
function sampleReceipt(): Record<string, unknown> {
  const doc = t.app.swagger() as any;
  return doc.paths['/api/receipts'].get.responses['200'].content['application/json'].example.receipts[0];
}

function refused(a: Answer, ...parts: RegExp[]): void {
  assert.throws(
    () => contract.check(a),
    (err: unknown) => {
      assert.ok(err instanceof AssertionError, String(err));
      for (const p of parts) assert.match(err.message, p);
      return true;
    },
  );
}

describe('the contract check', () => {
  test('passes what the document describes: an answer, an error, an unknown route', () => {
    contract.check(answer('GET', '/api/receipts/x?y=1', 404, { error: 'not_found', message: 'No such receipt' }));
    contract.check(answer('GET', '/no/such/route', 404, { error: 'not_found', message: 'Route GET:/no/such/route not found' }));
  });

  test('a body off its schema names the operation, the status and the field', () => {
    refused(answer('GET', '/api/receipts/abc', 404, { error: 'no_such_code', message: 'm' }), /getReceipt/, /404/, /\/error/);
    refused(answer('GET', '/api/receipts/status?receiptId=a', 200, {}), /getReceiptStatus/, /200/, /required property/);
  });

  test('multipleOf is decimal: 9.74 and 1234578.39 are whole cents, 1.005 is not', () => {
    const receipt = (totalUsd: number) => ({ receipts: [{ ...sampleReceipt(), totalUsd }], has_more: false });
    contract.check(answer('GET', '/api/receipts', 200, receipt(9.74)));
    contract.check(answer('GET', '/api/receipts', 200, receipt(1234578.39)));
    refused(answer('GET', '/api/receipts', 200, receipt(1.005)), /listReceipts/, /totalUsd/, /multipleOf/);
  });

  test('a status the operation does not list fails', () => {
    refused(answer('GET', '/api/receipts/abc', 418, { error: 'not_found', message: 'm' }), /getReceipt/, /418/, /does not list/);
  });

  test('a required header missing fails', () => {
    refused(answer('GET', '/api/receipts/abc', 404, { error: 'not_found', message: 'm' }, { 'content-type': 'application/json' }), /X-Correlation-Id/);
  });

  test('an unknown route answers the Error schema', () => {
    refused(answer('GET', '/no/such/route', 404, { oops: true }), /unknown route/, /404/);
    refused(answer('GET', '/no/such/route', 200, { error: 'not_found', message: 'm' }), /unknown route/);
  });

  test('pages, the document itself and preflights are left out', () => {
    contract.check(answer('GET', '/admin/', 200, '<!doctype html>', { 'content-type': 'text/html' }));
    contract.check(answer('GET', '/openapi.json', 200, 'anything', {}));
    contract.check(answer('OPTIONS', '/api/receipts', 204, '', {}));
  });

  test('every inject and call is checked: a real answer passes, typed', async () => {
    const key = await t.key(randomWallet());
    const created = await t.call<{ id: string; paymentUrl: string }>(key, 'POST', '/api/receipts', { id: 'typed-1', lineItems: [{ label: 'Tea', priceUsd: 2 }], totalUsd: 2 });
    assert.equal(created.status, 201, JSON.stringify(created.body));
    assert.equal(created.body.id, 'typed-1');
    const unknown = await t.app.inject({ method: 'GET', url: '/api/no-such-thing' });
    assert.equal(unknown.statusCode, 404);
  });
});
