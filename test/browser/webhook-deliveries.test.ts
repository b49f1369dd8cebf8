/**
 * The admin app shows every webhook attempt and can send a delivery again (issue: "every attempt
 * is logged and visible in the admin app, which can also redeliver"); it tells the truth about
 * webhooks (issue 14): loopback targets accepted on the dev chain and the page says so, "Send test
 * event" with its result, the receipt of each delivery, and connection errors in plain words.
 */
import assert from 'node:assert/strict';
import { createServer, type Server } from 'node:http';
import { after, before, describe, test } from 'node:test';
import { verifyWebhook } from '../../src/webhooks/sign.ts';
import { screenshot, signInThroughPage, skipReason, startHarness, type Harness, type Merchant } from './harness.ts';
import { until } from '../helpers/wait.ts';

if (skipReason) console.log(skipReason);

describe('webhook deliveries in the admin app', { skip: skipReason, timeout: 120_000 }, () => {
  let h: Harness;
  let receiver: Server;
  const statuses: number[] = [];
  const received: string[] = [];
  /** Every request the receiver got, for the signature checks. */
  const requests: { headers: Record<string, string>; body: string }[] = [];
  before(async () => {
    // The receiver is on loopback, which the dev chain (CHAIN unset: the default) accepts;
    // WEBHOOK_ALLOW_PRIVATE stays off.
    h = await startHarness();
    receiver = createServer((req, res) => {
      let body = '';
      req.on('data', (c: Buffer) => (body += c.toString()));
      req.on('end', () => {
        received.push(String(req.headers['webhook-id']));
        requests.push({ headers: req.headers as Record<string, string>, body });
        res.statusCode = statuses.shift() ?? 200;
        res.end();
      });
    });
    await new Promise<void>((r) => receiver.listen(0, '127.0.0.1', r));
  });
  after(async () => {
    receiver?.close();
    await h?.close();
  });

  test('a failed attempt is listed with its status; Redeliver sends it again', async () => {
    const m = await h.open();
    await signInThroughPage(m);
    const url = `http://127.0.0.1:${(receiver.address() as { port: number }).port}/hooks`;
    assert.equal((await m.api('POST', '/api/admin/webhooks', { url, events: ['receipt.refunded'] })).status, 201);
    assert.equal(
      (await m.api('POST', '/api/receipts', { id: 'wh-ui', lineItems: [{ label: 'Tea', priceUsd: 3 }], totalUsd: 3 })).status,
      201,
    );
    const refund = await m.api('POST', '/api/receipts/refund', {
      receiptId: 'wh-ui',
      wallet: m.wallet,
      buyer: '0x' + '22'.repeat(20),
      usd: 3,
    });
    assert.equal(refund.status, 200);
    statuses.push(500);
    await h.t.deps.webhooks.tick();
    assert.equal(received.length, 1);

    await m.page.goto('/admin/webhooks');
    const card = m.page.getByTestId('delivery');
    await card.waitFor();
    const text = await card.innerText();
    assert.match(text, /receipt\.refunded/);
    assert.match(text, /pending/);
    assert.match(text, /500 in \d+ ms/);
    await screenshot(m.page, 'webhook-deliveries');

    const queued = m.page.waitForResponse((res) => res.request().method() === 'POST' && res.url().endsWith('/redeliver'));
    await card.getByRole('button', { name: 'Redeliver' }).click();
    assert.equal((await queued).status(), 200, 'the redelivery is queued');
    await h.t.deps.webhooks.tick();
    assert.equal(received.length, 2);
    assert.equal(received[0], received[1], 'the same message id on redelivery');
    await m.page.getByRole('button', { name: 'Refresh' }).click();
    await m.page.getByTestId('delivery').filter({ hasText: 'delivered' }).waitFor();
    assert.deepEqual(m.problems, [], 'no script errors or CSP violations');
  });
  /** A loopback port with nothing listening on it. */
  async function closedPort(): Promise<number> {
    const probe = createServer();
    await new Promise<void>((r) => probe.listen(0, '127.0.0.1', r));
    const { port } = probe.address() as { port: number };
    await new Promise((r) => probe.close(r));
    return port;
  }

  async function noSideScroll(m: Merchant, what: string): Promise<void> {
    const { scrollWidth, innerWidth } = await m.page.evaluate(() => ({ scrollWidth: document.documentElement.scrollWidth, innerWidth: window.innerWidth }));
    assert.ok(scrollWidth <= innerWidth, `${what}: the page is ${scrollWidth}px wide on a ${innerWidth}px screen`);
  }

  for (const viewport of [{ name: 'desktop', phone: false }, { name: 'phone', phone: true }]) {
    test(`${viewport.name}: a loopback endpoint, Send test event with its result, the receipt id of each delivery, errors in words`, async () => {
      const m = await h.open({ phone: viewport.phone });
      await signInThroughPage(m);
      await m.page.goto('/admin/webhooks');
      const targets = m.page.getByTestId('webhook-targets');
      assert.match(await targets.innerText(), /dev chain.*http:\/\/localhost.*http:\/\/127\.0\.0\.1.*In production only public https/s);

      // Registered through the page: a loopback URL over plain http, accepted on the dev chain.
      const port = (receiver.address() as { port: number }).port;
      const url = `http://localhost:${port}/hooks/${viewport.name}`;
      await m.page.getByLabel('Endpoint URL').fill(url);
      await m.page.getByRole('button', { name: 'Add endpoint' }).click();
      const secretCard = m.page.getByTestId('webhook-secret');
      await secretCard.waitFor();
      const secret = (await secretCard.locator('code').innerText()).trim();
      assert.match(secret, /^whsec_/);
      await m.page.getByRole('button', { name: 'I have copied it' }).click();

      // The dispatcher runs as in the service: the page's buttons are all it takes.
      h.t.deps.webhooks.start();
      try {
        const before = requests.length;
        const card = m.page.getByTestId('webhook').filter({ hasText: url });
        await card.getByRole('button', { name: 'Send test event' }).click();
        const result = card.getByTestId('webhook-test-result');
        await result.getByText(/^Delivered: your endpoint answered 200 in \d+ ms\.$/).waitFor();
        const sent = requests.slice(before);
        assert.equal(sent.length, 1, 'one test event');
        const { headers, body } = sent[0]!;
        assert.equal(JSON.parse(body).type, 'webhook.test');
        assert.ok(
          verifyWebhook(secret, { id: headers['webhook-id']!, timestamp: headers['webhook-timestamp']!, signature: headers['webhook-signature']! }, body),
          'signed with the secret the page showed',
        );

        // A receipt refunded in full: its delivery names the receipt, linked to its page.
        const receiptId = `wh-rcpt-${viewport.name}`;
        assert.equal((await m.api('POST', '/api/receipts', { id: receiptId, lineItems: [{ label: 'Tea', priceUsd: 3 }], totalUsd: 3 })).status, 201);
        const refund = await m.api('POST', '/api/receipts/refund', { receiptId, wallet: m.wallet, buyer: '0x' + '33'.repeat(20), usd: 3 });
        assert.equal(refund.status, 200);
        const row = m.page.getByTestId('delivery').filter({ hasText: 'receipt.refunded' });
        await until(
          async () => {
            if (await row.filter({ hasText: 'delivered' }).isVisible()) return true;
            await m.page.getByRole('button', { name: 'Refresh' }).click();
            return false;
          },
          10_000,
          "the refund's delivery to show as delivered",
          250,
        );
        const cell = row.getByTestId('delivery-receipt');
        assert.equal((await cell.innerText()).trim().replace(/^Receipt\s*/, ''), receiptId);
        const testRow = m.page.getByTestId('delivery').filter({ hasText: 'webhook.test' });
        assert.equal((await testRow.getByTestId('delivery-receipt').innerText()).replace(/^Receipt\s*/, '').trim(), '—', 'a test event is about no receipt');

        // An endpoint with nothing listening: the test's result says so in words, the code beside it.
        const dead = `http://127.0.0.1:${await closedPort()}/hooks`;
        await m.page.getByLabel('Endpoint URL').fill(dead);
        await m.page.getByRole('button', { name: 'Add endpoint' }).click();
        await m.page.getByRole('button', { name: 'I have copied it' }).click();
        const deadCard = m.page.getByTestId('webhook').filter({ hasText: dead });
        await deadCard.getByRole('button', { name: 'Send test event' }).click();
        await deadCard.getByTestId('webhook-test-result').getByText(/^Not delivered: Connection refused: nothing is listening at that address and port\.$/).waitFor();
        const failed = m.page.getByTestId('delivery').filter({ hasText: 'failed' });
        await failed.waitFor();
        assert.match(await failed.getByTestId('delivery-attempts').innerText(), /Connection refused: nothing is listening .*\(ECONNREFUSED\)/s);

        if (viewport.phone) await noSideScroll(m, 'webhooks page');
        await screenshot(m.page, `webhooks-test-event-${viewport.name}`);

        await cell.getByRole('link', { name: receiptId }).click();
        await m.page.waitForURL(new RegExp(`/admin/receipts/${receiptId}$`));
        await m.page.getByRole('heading', { name: `Receipt ${receiptId}` }).waitFor();
      } finally {
        await h.t.deps.webhooks.stop();
      }
      assert.deepEqual(m.problems, [], 'no script errors or CSP violations');
    });
  }
});
