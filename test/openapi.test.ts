/**
 * The OpenAPI document and the interactive reference: every developer route is described with
 * its security and response schemas, and /docs works offline (its assets are served by the app).
 */
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { startTestApp, type TestApp } from './helpers/app.ts';
import { DEVELOPER_ROUTES } from './helpers/developer-routes.ts';

let t: TestApp;
let doc: any;

before(async () => {
  t = await startTestApp();
  const res = await t.app.inject({ method: 'GET', url: '/openapi.json' });
  assert.equal(res.statusCode, 200);
  doc = res.json();
});
after(async () => {
  await t.close();
});

function jsonSchemaOf(response: any): unknown {
  return response?.content?.['application/json']?.schema;
}

describe('GET /openapi.json', () => {
  test('is OpenAPI 3.1 with the subscription key scheme', () => {
    assert.match(doc.openapi, /^3\.1\.\d+$/);
    assert.equal(typeof doc.info?.title, 'string');
    assert.deepEqual(doc.components?.securitySchemes?.subscriptionKey, {
      type: 'apiKey',
      in: 'header',
      name: 'Ocp-Apim-Subscription-Key',
    });
  });

  test('GET /healthz is listed with a response schema and needs no key', () => {
    const op = doc.paths?.['/healthz']?.get;
    assert.ok(op, '/healthz is listed');
    assert.ok(jsonSchemaOf(op.responses?.['200']), '200 has a schema');
    assert.ok(op.security === undefined || op.security.length === 0, 'no security requirement');
  });

  for (const route of DEVELOPER_ROUTES) {
    test(`${route.method} ${route.path} is listed with its key, response schemas and the error schema`, () => {
      const op = doc.paths?.[route.path]?.[route.method.toLowerCase()];
      assert.ok(op, `${route.method} ${route.path} is in the document`);
      assert.deepEqual(op.security, [{ subscriptionKey: [] }]);
      const documented = Object.entries(op.responses ?? {}) as [string, any][];
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
