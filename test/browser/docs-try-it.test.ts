/**
 * /docs in a real browser, as a developer meets it: the page is Splitline's, and "Try it out" on
 * every developer operation, with the example the page fills in from the document, succeeds
 * against a fresh service. The operations come from /openapi.json, so a new developer route is
 * driven here without a change to this file.
 */
import assert from 'node:assert/strict';
import path from 'node:path';
import { after, before, describe, test } from 'node:test';
import type { Locator, Page } from 'playwright-core';
import { webhookEvents } from '../../src/db/schema.ts';
import { setUpMerchant } from '../helpers/merchant.ts';
import { SCREENSHOTS, skipReason, startHarness, type Harness, type Merchant as BrowserSession } from './harness.ts';

if (skipReason) console.log(skipReason);

type Json = Record<string, any>;

interface Operation {
  method: string;
  path: string;
  operationId: string;
  tag: string;
  /** The statuses a successful try shows: the documented 2xx, or a deprecated operation's documented 410. */
  expected: number[];
}

/** Operations whose results the other examples name (receipt `order-1001`, sku `espresso`): they run first. */
const PREPARES = ['createReceipt', 'upsertInventoryItem'];
/**
 * Operations that read the chain. The harness runs without one, so the handler's own answer, 503
 * chain_unavailable, is what shows the call passed the key and reached it (test/chain/payouts.test.ts
 * tries them on a chain).
 */
const READS_CHAIN = new Set(['getRecipientBalances']);

/** The page re-renders a large document on every click; on a busy 2-core machine that takes seconds. */
const UI_TIMEOUT = 30_000;

const acceptsKey = (op: Json) => (op.security ?? []).some((requirement: Json) => 'subscriptionKey' in requirement);
const needsNothing = (op: Json) => (op.security ?? []).length === 0;

/**
 * The developer operations of the document: those a subscription key opens, and those needing no
 * credential under only the same tags (tracking statuses); in the order that works on a fresh
 * service: the creations the other examples name, the other writes, then the reads.
 */
function developerOperations(doc: Json): Operation[] {
  const all: { o: Operation; op: Json }[] = [];
  for (const [p, item] of Object.entries<Json>(doc.paths ?? {})) {
    for (const [method, op] of Object.entries<Json>(item)) {
      if (typeof op !== 'object' || op === null || typeof op.operationId !== 'string') continue;
      const documented = Object.keys(op.responses ?? {}).map(Number);
      const ok = documented.filter((s) => s >= 200 && s < 300);
      // A deprecated operation that can only say so (POST /api/split/withdraw) succeeds when it does.
      const expected = READS_CHAIN.has(op.operationId) ? documented.filter((s) => s === 503) : ok.length > 0 ? ok : op.deprecated === true ? documented.filter((s) => s === 410) : [];
      all.push({ o: { method: method.toUpperCase(), path: p, operationId: op.operationId, tag: op.tags?.[0] ?? 'default', expected }, op });
    }
  }
  const developerTags = new Set(all.filter(({ op }) => acceptsKey(op)).flatMap(({ op }) => op.tags ?? []));
  const isDeveloper = (op: Json) =>
    acceptsKey(op) || (needsNothing(op) && (op.tags ?? []).length > 0 && op.tags.every((t: string) => developerTags.has(t)));
  const rank = (o: Operation) => (PREPARES.includes(o.operationId) ? 0 : o.method === 'GET' ? 2 : 1);
  return all
    .filter(({ op }) => isDeveloper(op))
    .map(({ o }) => o)
    .sort((a, b) => rank(a) - rank(b));
}

const label = (o: Operation) => `${o.method} ${o.path} (${o.operationId})`;

/** swagger-ui's block for an operation: id "operations-<tag>-<operationId>", spaces as underscores. */
const blockOf = (page: Page, o: Operation): Locator => page.locator(`[id="operations-${o.tag.replace(/\s/g, '_')}-${o.operationId}"]`);

/** Enters the subscription key in the Authorize dialog, as a developer does. */
async function authorize(page: Page, key: string): Promise<void> {
  await page.locator('.scheme-container button.authorize').click();
  const dialog = page.locator('.dialog-ux .modal-ux');
  await dialog.waitFor();
  const scheme = dialog.locator('.auth-container').filter({ has: page.locator('h4', { hasText: 'subscriptionKey' }) });
  await scheme.locator('input').fill(key);
  await scheme.locator('button.authorize').click();
  await scheme.locator('button', { hasText: 'Logout' }).waitFor();
  await scheme.locator('button.btn-done').click();
  await dialog.waitFor({ state: 'detached' });
}

/** What the page shows of an executed request. */
interface Shown {
  status: string;
  body: string;
  requestUrl: string;
}

async function execute(block: Locator): Promise<Shown> {
  const status = block.locator('.live-responses-table .response .response-col_status');
  await block.locator('button.execute').click();
  await status.waitFor();
  const body = block.locator('.live-responses-table .response-col_description .highlight-code pre').first();
  return {
    status: (await status.innerText()).trim(),
    body: (await body.count()) > 0 ? await body.innerText() : '',
    requestUrl: (await block.locator('.request-url pre').innerText()).trim(),
  };
}

/** Why the answer shown is not a success for `o`, or null when it is. */
function refusal(o: Operation, shown: Shown, base: string): string | null {
  const why = `${label(o)}: the page showed ${shown.status} from ${shown.requestUrl}: ${shown.body.slice(0, 600)}`;
  if (!o.expected.includes(Number(shown.status))) return `expected ${o.expected.join(' or ')}; ${why}`;
  if (!shown.requestUrl.startsWith(`${base}/`)) return `expected a request to the page's own origin ${base}; ${why}`;
  if (READS_CHAIN.has(o.operationId) && !shown.body.includes('"chain_unavailable"')) return `expected 503 chain_unavailable from the handler; ${why}`;
  if (o.method !== 'GET') {
    try {
      JSON.parse(shown.body);
    } catch (err) {
      return `expected a JSON body (${(err as Error).message}); ${why}`;
    }
  }
  return null;
}

/**
 * Expands the operation, turns on "Try it out" and executes it with what the page filled in; a
 * write is executed a second time, as a developer clicking Execute again does, and must succeed
 * again (idempotent per receipt id, an upsert, or a new order). Collapses it afterwards, which
 * keeps each next render of the page small.
 */
async function tryOut(page: Page, o: Operation, base: string): Promise<string[]> {
  const block = blockOf(page, o);
  await block.locator('.opblock-summary-control').click();
  const toggle = block.locator('button.try-out__btn');
  // tryItOutEnabled opens it already; the button then offers "Cancel".
  if ((await toggle.innerText()).trim() === 'Try it out') await toggle.click();
  const problems: string[] = [];
  const first = await execute(block);
  const firstRefusal = refusal(o, first, base);
  if (firstRefusal !== null) problems.push(firstRefusal);
  else if (o.method !== 'GET') {
    await block.locator('button.btn-clear').click();
    await block.locator('.live-responses-table').waitFor({ state: 'detached' });
    const again = refusal(o, await execute(block), base);
    if (again !== null) problems.push(`executed again: ${again}`);
  }
  if (problems.length > 0) await block.screenshot({ path: path.join(SCREENSHOTS, `docs-try-it-${o.operationId}.png`) });
  await block.locator('.opblock-summary-control').click();
  await block.locator('.opblock-body').waitFor({ state: 'detached' });
  return problems;
}

describe('/docs', { skip: skipReason, timeout: 300_000 }, () => {
  let h: Harness;
  let doc: Json;
  before(async () => {
    h = await startHarness();
    const res = await fetch(`${h.base}/openapi.json`);
    assert.equal(res.status, 200, 'GET /openapi.json');
    doc = (await res.json()) as Json;
  });
  after(async () => {
    await h?.close();
  });

  async function openDocs(): Promise<BrowserSession> {
    const m = await h.open({ wallet: false });
    m.page.setDefaultTimeout(UI_TIMEOUT);
    await m.page.goto('/docs');
    await m.page.locator('.information-container .title').waitFor();
    return m;
  }

  test("is Splitline's: title, icon and logo, and no framework name shown", async () => {
    const m = await openDocs();
    const { page } = m;
    assert.equal(await page.title(), 'Splitline API reference');
    const icons = await page.locator('link[rel~="icon"]').evaluateAll((links) => links.map((l) => (l as HTMLLinkElement).href));
    assert.deepEqual(icons, [`${h.base}/docs/static/theme/splitline.svg`], "the only icon is Splitline's");
    const logo = page.locator('.topbar-wrapper a.link img');
    await logo.waitFor();
    const src = (await logo.getAttribute('src')) ?? '';
    assert.match(src, /^data:image\/svg\+xml;base64,/);
    assert.match(Buffer.from(src.split(',')[1] ?? '', 'base64').toString(), /Splitline/, 'the top bar shows the Splitline logo');
    const text = await page.locator('body').innerText();
    assert.doesNotMatch(text, /swagger|fastify|smartbear/i, 'no framework name on the page');
    assert.equal(await page.locator('.topbar-wrapper a.link svg').filter({ visible: true }).count(), 0, 'no framework logo in the top bar');
    assert.deepEqual(m.problems, [], 'no script errors on /docs');
  });

  test('every developer operation succeeds from "Try it out" with its example, on a fresh service', async () => {
    const ops = developerOperations(doc);
    const names = ops.map((o) => `${o.method} ${o.path}`);
    assert.ok(ops.length > 0, 'the document has developer operations');
    for (const must of ['POST /api/receipts', 'POST /api/orders', 'GET /api/receipts/{id}', 'POST /api/inventory']) {
      assert.ok(names.includes(must), `${must} is a developer operation; found: ${names.join(', ')}`);
    }
    for (const id of PREPARES) assert.ok(ops.some((o) => o.operationId === id), `${id} is a developer operation`);
    for (const o of ops) assert.ok(o.expected.length > 0, `${label(o)} documents a success answer`);
    for (const o of ops) {
      const key = (doc.paths[o.path][o.method.toLowerCase()].parameters ?? []).find((p: Json) => p.name.toLowerCase() === 'idempotency-key');
      const filled = key !== undefined && (key.example ?? key.examples ?? key.schema?.default ?? key.schema?.examples) !== undefined;
      // The page would send that one key with every write, and the second write would be 409 conflict.
      assert.ok(!filled, `${label(o)}: the Idempotency-Key parameter has no example for the page to fill in`);
    }

    const merchant = await setUpMerchant(h.t);
    // Events come from payments on chain and refunds, which no developer operation makes: the
    // merchant's outbox holds one with the id the document's example names, as the receipt
    // `order-1001` is created for the examples that name it.
    const eventId = doc.paths['/api/events/{id}'].get.parameters.find((p: Json) => p.in === 'path').example;
    assert.equal(typeof eventId, 'string', 'GET /api/events/{id} has an example id');
    await h.t.deps.database.db.insert(webhookEvents).values({
      wallet: merchant.wallet,
      id: eventId,
      type: 'receipt.completed',
      payload: { type: 'receipt.completed', timestamp: new Date().toISOString(), data: { receiptId: 'order-1001' } },
      dedupeKey: 'receipt.completed:order-1001',
      createdAt: Date.now(),
    });
    // Opened at the harness's http://127.0.0.1:<port>: the document's relative server URL makes
    // every try call that origin.
    const m = await openDocs();
    await authorize(m.page, merchant.key);
    const failures: string[] = [];
    for (const o of ops) failures.push(...(await tryOut(m.page, o, h.base)));
    assert.deepEqual(failures, [], `every developer operation succeeds with its example (tried: ${names.join(', ')})`);
    assert.deepEqual(m.problems, [], 'no script errors on /docs');
  });
});
