/**
 * The admin app shows every webhook attempt and can send a delivery again (issue: "every attempt
 * is logged and visible in the admin app, which can also redeliver").
 */
import assert from 'node:assert/strict';
import { createServer, type Server } from 'node:http';
import { after, before, describe, test } from 'node:test';
import { screenshot, signInThroughPage, skipReason, startHarness, type Harness } from './harness.ts';

if (skipReason) console.log(skipReason);

describe('webhook deliveries in the admin app', { skip: skipReason, timeout: 120_000 }, () => {
  let h: Harness;
  let receiver: Server;
  const statuses: number[] = [];
  const received: string[] = [];
  before(async () => {
    // The receiver is on loopback, so this app alone allows private webhook targets.
    h = await startHarness({ WEBHOOK_ALLOW_PRIVATE: 'true' });
    receiver = createServer((req, res) => {
      req.resume();
      req.on('end', () => {
        received.push(String(req.headers['webhook-id']));
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

    await card.getByRole('button', { name: 'Redeliver' }).click();
    await m.page.waitForTimeout(300);
    await h.t.deps.webhooks.tick();
    assert.equal(received.length, 2);
    assert.equal(received[0], received[1], 'the same message id on redelivery');
    await m.page.getByRole('button', { name: 'Refresh' }).click();
    await m.page.getByTestId('delivery').filter({ hasText: 'delivered' }).waitFor();
    assert.deepEqual(m.problems, [], 'no script errors or CSP violations');
  });
});
