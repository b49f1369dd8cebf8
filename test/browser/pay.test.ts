/**
 * The hosted payment page in a real browser (Debian's chromium, headless) on a real dev chain:
 * framed by a shop's page on another origin, a buyer pays with an injected wallet, the receipt
 * completes, and the parent receives the page's status messages; an origin the shop does not
 * allow can neither frame the page nor hear from it. Also: no wallet, the QR code, a phone screen.
 */
import assert from 'node:assert/strict';
import { createServer, type Server } from 'node:http';
import { createServer as createNetServer, type AddressInfo } from 'node:net';
import { after, before, describe, test } from 'node:test';
import { chromium, type Browser, type BrowserContext, type Page } from 'playwright-core';
import { createWalletClient, decodeFunctionData, erc20Abi, http, type Hex } from 'viem';
import { devAccount } from '../../src/chain/dev-accounts.ts';
import { ensureWebBuild } from '../../scripts/ensure-web-build.ts';
import type { TestApp } from '../helpers/app.ts';
import { admin, signIn, type Session } from '../helpers/session.ts';
import { PLATFORM, startChainApp, startTestChain, type TestChain } from '../chain/helpers.ts';
import { CHROMIUM, eventually, PHONE, screenshot, skipReason } from './harness.ts';

if (skipReason) console.log(skipReason);

const FLAGS = ['--headless', '--no-sandbox', '--disable-gpu', '--no-first-run', '--disable-background-networking', '--disable-component-update', '--disable-sync'];

interface Message {
  origin: string;
  data: { type?: unknown; status?: unknown; receiptId?: unknown };
}

function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const probe = createNetServer();
    probe.once('error', reject);
    probe.listen(0, '127.0.0.1', () => {
      const { port } = probe.address() as AddressInfo;
      probe.close(() => resolve(port));
    });
  });
}

/** A shop's own page: it frames the payment URL and records every message it receives. */
const PARENT_PAGE = `<!doctype html><html><head><meta charset="utf-8"><title>Shop checkout</title></head>
<body><h1>Shop checkout</h1><iframe id="pay" title="Payment" width="420" height="900"></iframe>
<script>
  window.__messages = [];
  window.addEventListener('message', (e) => window.__messages.push({ origin: e.origin, data: e.data }));
  document.getElementById('pay').src = new URLSearchParams(location.search).get('u');
</script></body></html>`;

/** Serves PARENT_PAGE on its own port: another origin than the app's. */
async function startParent(): Promise<{ origin: string; close(): Promise<void> }> {
  const server: Server = createServer((req, res) => {
    if ((req.url ?? '').startsWith('/frame')) {
      res.writeHead(200, { 'content-type': 'text/html; charset=utf-8' }).end(PARENT_PAGE);
    } else res.writeHead(404).end();
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return { origin: `http://127.0.0.1:${port}`, close: () => new Promise((resolve) => server.close(() => resolve())) };
}

interface Buyer {
  context: BrowserContext;
  page: Page;
  /** wallet_addEthereumChain parameters the page asked the wallet for. */
  addedChains: { chainId: string; rpcUrls: string[] }[];
  /** Transactions the page asked the wallet to send. */
  sent: { from: string; to: Hex; data: Hex; hash: Hex }[];
  problems: string[];
}

describe('payment page', { skip: skipReason, timeout: 240_000 }, () => {
  let tc: TestChain;
  let t: TestApp;
  let siteUrl: string;
  let browser: Browser;
  let allowed: { origin: string; close(): Promise<void> };
  let other: { origin: string; close(): Promise<void> };
  const contexts: BrowserContext[] = [];

  before(async () => {
    await ensureWebBuild((line) => console.log(line));
    tc = await startTestChain();
    const port = await freePort();
    // The app is reached as localhost, the shop's page as 127.0.0.1: two origins, two sites.
    siteUrl = `http://localhost:${port}`;
    t = await startChainApp(tc.chain, { SITE_URL: siteUrl, CONFIRMATIONS: '1' });
    t.deps.startWorkers();
    await t.app.listen({ host: '127.0.0.1', port });
    allowed = await startParent();
    other = await startParent();
    browser = await chromium.launch({ executablePath: CHROMIUM, headless: true, args: FLAGS, timeout: 30_000 });
  });
  after(async () => {
    for (const c of contexts) await c.close();
    await browser?.close();
    await allowed?.close();
    await other?.close();
    await t?.close();
    await tc?.close();
  });

  const as = (s: Session, method: 'GET' | 'POST', url: string, body?: unknown) => admin(t, s, method, url, body, { origin: siteUrl });

  /** A merchant with a deployed split (unless `split: false`) and the given embed origins. */
  async function merchant(opts: { origins: string[]; split?: boolean }) {
    const s = await signIn(t);
    let split: string | null = null;
    if (opts.split !== false) {
      const res = await as(s, 'POST', '/api/split/deploy', {
        recipients: [
          { address: s.wallet, sharesBps: 9950 },
          { address: PLATFORM, sharesBps: 50 },
        ],
      });
      assert.equal(res.status, 200, JSON.stringify(res.body));
      split = res.body.split.address;
    }
    const cfg = await as(s, 'POST', '/api/shop/config', { processingFeePct: 0, name: 'Corner Café', allowedEmbedOrigins: opts.origins });
    assert.equal(cfg.status, 200, JSON.stringify(cfg.body));
    return { s, split, key: await t.key(s.wallet) };
  }

  async function receipt(key: string, id: string): Promise<string> {
    const res = await t.call(key, 'POST', '/api/receipts', {
      id,
      lineItems: [
        { label: 'Flat white', priceUsd: 4.25, qty: 2 },
        { label: 'Almond croissant', priceUsd: 3.5 },
      ],
      totalUsd: 12,
    });
    assert.equal(res.status, 201, JSON.stringify(res.body));
    assert.ok(res.body.paymentUrl.startsWith(`${siteUrl}/pay/${id}?t=`));
    return res.body.paymentUrl;
  }

  /**
   * A browser context for a buyer. With `account`, an EIP-1193 wallet is injected into every
   * frame: it starts on mainnet, knows no dev chain until asked to add it, and sends real
   * transactions to the dev chain from that account through functions exposed from Node.
   */
  async function buyer(opts: { account?: number; phone?: boolean } = {}): Promise<Buyer> {
    const context = await browser.newContext({
      viewport: opts.phone ? PHONE : { width: 1100, height: 1000 },
      ...(opts.phone ? { isMobile: true, hasTouch: true, deviceScaleFactor: 2 } : {}),
      locale: 'en-US',
      timezoneId: 'UTC',
    });
    contexts.push(context);
    context.setDefaultTimeout(15_000);
    const b: Buyer = { context, page: undefined as unknown as Page, addedChains: [], sent: [], problems: [] };
    if (opts.account !== undefined) {
      const account = devAccount(opts.account);
      const wallet = createWalletClient({ chain: tc.chain.publicClient.chain, transport: http(tc.chain.rpcUrl), account });
      await context.exposeFunction('__splitlineTestAddChain', (json: string) => {
        b.addedChains.push(JSON.parse(json));
      });
      await context.exposeFunction('__splitlineTestSend', async (json: string) => {
        const tx = JSON.parse(json) as { from: string; to: Hex; data: Hex; value?: Hex };
        const hash = await wallet.sendTransaction({ to: tx.to, data: tx.data, value: BigInt(tx.value ?? '0x0') });
        b.sent.push({ from: tx.from, to: tx.to, data: tx.data, hash });
        return hash;
      });
      await context.addInitScript({
        content: `(() => {
          const address = ${JSON.stringify(account.address)};
          const fail = (code, message) => Object.assign(new Error(message), { code });
          let chainId = '0x1';
          const known = new Set(['0x1']);
          window.ethereum = {
            async request({ method, params }) {
              switch (method) {
                case 'eth_requestAccounts':
                case 'eth_accounts':
                  return [address];
                case 'eth_chainId':
                  return chainId;
                case 'wallet_switchEthereumChain':
                  if (!known.has(params[0].chainId)) throw fail(4902, 'Unrecognized chain ID ' + params[0].chainId);
                  chainId = params[0].chainId;
                  return null;
                case 'wallet_addEthereumChain':
                  await window.__splitlineTestAddChain(JSON.stringify(params[0]));
                  known.add(params[0].chainId);
                  return null;
                case 'eth_sendTransaction':
                  if (chainId !== '0x7a69') throw fail(4901, 'the wallet is on ' + chainId);
                  if (String(params[0].from).toLowerCase() !== address.toLowerCase()) throw fail(4100, 'unknown account');
                  return window.__splitlineTestSend(JSON.stringify(params[0]));
                default:
                  throw fail(4200, 'unsupported method ' + method);
              }
            },
            on() {},
            removeListener() {},
          };
        })();`,
      });
    }
    b.page = await context.newPage();
    b.page.on('pageerror', (err) => b.problems.push(`page error: ${err.message}`));
    b.page.on('console', (msg) => {
      // 4xx answers are logged by the browser as "Failed to load resource"; some tests provoke them.
      if (msg.type() === 'error' && !msg.text().startsWith('Failed to load resource')) b.problems.push(`console: ${msg.text()}`);
    });
    return b;
  }

  const messages = (page: Page) => page.evaluate(() => (window as unknown as { __messages: Message[] }).__messages);
  const frameUrl = (parent: string, payUrl: string) => `${parent}/frame?u=${encodeURIComponent(payUrl)}`;

  test('framed by an allowed origin: the buyer pays with the wallet and the parent hears "completed"', async () => {
    const m = await merchant({ origins: [allowed.origin] });
    const payUrl = await receipt(m.key, 'pay-framed-1');
    const quote = (await t.call(null, 'GET', `/api/pay/pay-framed-1${new URL(payUrl).search}`)).body.payment;
    const b = await buyer({ account: 1 });
    await b.page.goto(frameUrl(allowed.origin, payUrl));
    const frame = b.page.frameLocator('#pay');
    await frame.getByTestId('brand').filter({ hasText: 'Corner Café' }).waitFor();
    assert.deepEqual(await frame.getByTestId('line-item').allInnerTexts(), ['Flat white 2 × $4.25\n$8.50', 'Almond croissant\n$3.50']);
    assert.match(await frame.getByTestId('total').innerText(), /\$12\.00/);
    await frame.getByRole('button', { name: 'Pay 12 USDC with a browser wallet' }).click();

    const done = await eventually(
      () => messages(b.page),
      (list) => list.some((x) => x.data.status === 'completed'),
      'the parent receives "completed"',
      30_000,
    );
    const completed = done.find((x) => x.data.status === 'completed')!;
    assert.deepEqual(completed.data, { type: 'splitline:payment', status: 'completed', receiptId: 'pay-framed-1' });
    assert.equal(completed.origin, siteUrl, "the message comes from the payment page's origin");
    assert.ok(done.every((x) => x.data.type === 'splitline:payment' && x.data.receiptId === 'pay-framed-1'));
    assert.equal(done[0]!.data.status, 'pending', 'the first message is the status on load');
    await frame.getByTestId('payment-status').filter({ hasText: 'Paid' }).waitFor();
    await screenshot(b.page, 'pay-framed-completed');

    // The wallet was moved to the dev chain, which it learnt through the service's /dev/rpc.
    assert.deepEqual(
      b.addedChains.map((c) => ({ chainId: c.chainId, rpcUrls: c.rpcUrls })),
      [{ chainId: '0x7a69', rpcUrls: [`${siteUrl}/dev/rpc`] }],
    );
    // One ERC-20 transfer of the exact amount to the merchant's split, in the payment token.
    assert.equal(b.sent.length, 1);
    const [tx] = b.sent;
    assert.equal(tx!.to.toLowerCase(), quote.tokenAddress);
    const call = decodeFunctionData({ abi: erc20Abi, data: tx!.data });
    assert.equal(call.functionName, 'transfer');
    assert.equal(String(call.args?.[0]).toLowerCase(), m.split);
    assert.equal(call.args?.[1], BigInt(quote.amount));

    const detail = await t.call(m.key, 'GET', '/api/receipts/pay-framed-1');
    assert.equal(detail.body.status, 'completed');
    assert.equal(detail.body.transactionHash, tx!.hash.toLowerCase());
    assert.deepEqual(
      detail.body.statusHistory.map((h: { status: string }) => h.status),
      ['pending', 'link_opened', 'buyer_logged_in', 'checkout_initialized', 'tx_mined', 'recipient_validated', 'completed'],
    );
    assert.deepEqual(b.problems, [], 'no script errors or CSP violations');
  });

  test('an origin the shop does not allow can neither frame the page nor hear from it', async () => {
    const m = await merchant({ origins: [allowed.origin] });
    const payUrl = await receipt(m.key, 'pay-framed-2');
    const page = await t.call(null, 'GET', new URL(payUrl).pathname + new URL(payUrl).search);
    const csp = String(page.headers['content-security-policy']);
    assert.match(csp, new RegExp(`frame-ancestors 'self' ${allowed.origin.replace(/\./g, '\\.')}(;|$)`));
    assert.ok(!csp.includes(other.origin), 'the other origin is not among the frame ancestors');
    assert.equal(page.headers['x-frame-options'], undefined);

    const b = await buyer({ account: 2 });
    const refused: string[] = [];
    b.page.on('console', (msg) => {
      if (/frame-ancestors/.test(msg.text())) refused.push(msg.text());
    });
    await b.page.goto(frameUrl(other.origin, payUrl));
    await eventually(async () => refused.length, (n) => n > 0, 'chromium refuses to frame the page', 10_000);
    // Give a page that did load time to post, then check nothing arrived.
    await new Promise((resolve) => setTimeout(resolve, 2_000));
    assert.deepEqual(await messages(b.page), []);
    const receipt2 = await t.call(m.key, 'GET', '/api/receipts/pay-framed-2');
    assert.equal(receipt2.body.status, 'pending', 'the page never ran: no link_opened either');
  });

  test('without a wallet the page says so, and the QR code carries the EIP-681 transfer', async () => {
    const m = await merchant({ origins: [] });
    const payUrl = await receipt(m.key, 'pay-qr-1');
    const quote = (await t.call(null, 'GET', `/api/pay/pay-qr-1${new URL(payUrl).search}`)).body.payment;
    const b = await buyer();
    await b.page.goto(payUrl);
    const note = b.page.getByTestId('no-wallet');
    await note.waitFor();
    assert.match(await note.innerText(), /No browser wallet was found/);
    await b.page.getByRole('button', { name: /with a browser wallet/ }).click();
    await b.page.getByRole('alert').filter({ hasText: 'No browser wallet was found' }).waitFor();
    assert.equal(await b.page.getByText('No browser wallet was found').count(), 1, 'said once, now as an alert');

    const expected = `ethereum:${quote.tokenAddress}@31337/transfer?address=${m.split}&uint256=12000000`;
    const panel = b.page.getByTestId('qr-panel');
    assert.equal(await panel.getAttribute('data-uri'), expected);
    assert.equal(await panel.getByRole('link').getAttribute('href'), expected);
    const qr = panel.getByTestId('qr-code');
    assert.equal(await qr.getAttribute('aria-label'), `QR code of ${expected}`);
    assert.ok(((await qr.locator('path').getAttribute('d')) ?? '').length > 1000, 'the QR code has modules');
    const box = await qr.boundingBox();
    assert.ok(box !== null && box.width >= 150, 'drawn at a scannable size');
    await screenshot(b.page, 'pay-no-wallet');
    assert.deepEqual(b.problems, []);
  });

  test('a phone-sized screen: everything fits, nothing scrolls sideways, and the buyer pays', async () => {
    const m = await merchant({ origins: [] });
    const payUrl = await receipt(m.key, 'pay-phone-1');
    const b = await buyer({ account: 3, phone: true });
    await b.page.goto(payUrl);
    const button = b.page.getByRole('button', { name: 'Pay 12 USDC with a browser wallet' });
    await button.waitFor();
    const width = await b.page.evaluate(() => document.documentElement.scrollWidth);
    assert.ok(width <= PHONE.width, `the page is ${width}px wide on a ${PHONE.width}px screen`);
    const box = await button.boundingBox();
    assert.ok(box !== null && box.x >= 0 && box.x + box.width <= PHONE.width && box.height >= 44, 'a full-width, thumb-sized button');
    await screenshot(b.page, 'pay-phone');
    // Not framed: the same payment, and no message to post.
    await button.click();
    await b.page.getByTestId('payment-status').filter({ hasText: 'Paid' }).waitFor({ timeout: 30_000 });
    assert.equal((await b.page.evaluate(() => document.documentElement.scrollWidth)) <= PHONE.width, true);
    await screenshot(b.page, 'pay-phone-completed');
    assert.equal((await t.call(m.key, 'GET', '/api/receipts/pay-phone-1')).body.status, 'completed');
    assert.deepEqual(b.problems, []);
  });

  test('clear messages: a shop without a deployed split, a link that names no receipt', async () => {
    const m = await merchant({ origins: [], split: false });
    const payUrl = await receipt(m.key, 'pay-nosplit-1');
    const b = await buyer({ account: 4 });
    await b.page.goto(payUrl);
    const note = b.page.getByTestId('no-split');
    await note.waitFor();
    assert.match(await note.innerText(), /split contract is not deployed/);
    assert.equal(await b.page.getByRole('button', { name: /with a browser wallet/ }).count(), 0, 'nothing to pay into');
    assert.equal(await b.page.getByTestId('qr-panel').count(), 0);

    const res = await b.page.goto(`${siteUrl}/pay/pay-nosplit-1?t=AAAAAAAAAAAAAAAAAAAAAAAA`);
    assert.equal(res?.status(), 404);
    const missing = b.page.getByTestId('not-found');
    await missing.waitFor();
    assert.match(await missing.innerText(), /This payment link is not valid/);
    await screenshot(b.page, 'pay-not-found');
    assert.deepEqual(b.problems, []);
  });
});
