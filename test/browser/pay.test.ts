/**
 * The hosted payment page in a real browser (Debian's chromium, headless) on a real dev chain.
 * Every receipt has its own payment address (`payTo`); buyers pay it, never the split, and the
 * chain worker follows the transfers into it. Covered, at desktop (1280x800) and phone (390x844)
 * width, with no sideways scrolling in any state: unpaid with the QR code and the countdown, a
 * partial payment asking for the rest at the same address, a payment sent and confirming, paid,
 * overpaid, another token, expired. Also: framed by a shop's page (status messages to allowed
 * origins only), no wallet, a long wallet error (one sentence, details folded and wrapped) at
 * every width, clear messages.
 */
import assert from 'node:assert/strict';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { after, before, describe, test } from 'node:test';
import { sql } from 'drizzle-orm';
import { chromium, type Browser, type BrowserContext, type Page } from 'playwright-core';
import QRCode from 'qrcode';
import { createWalletClient, decodeFunctionData, erc20Abi, http, keccak256, type Address, type Hex } from 'viem';
import { devAccount } from '../../src/chain/dev-accounts.ts';
import { ensureWebBuild } from '../../scripts/ensure-web-build.ts';
import { freePort } from '../../scripts/service-launcher.ts';
import type { TestApp } from '../helpers/app.ts';
import { admin, signIn, type Session } from '../helpers/session.ts';
import { PLATFORM, startChainApp, startTestChain, type TestChain } from '../chain/helpers.ts';
import { CHROMIUM, injectStrictWallet, PHONE, RENDER_MS, screenshot, skipReason, type AddedChain } from './harness.ts';
import { eventually, sleep, until } from '../helpers/wait.ts';

if (skipReason) console.log(skipReason);

const FLAGS = ['--headless', '--no-sandbox', '--disable-gpu', '--no-first-run', '--disable-background-networking', '--disable-component-update', '--disable-sync'];
const DESKTOP = { width: 1280, height: 800 };
/** The narrowest phones in use; a long wallet error must not widen the page there. */
const NARROW = { width: 360, height: 740 };
type Device = 'desktop' | 'phone' | 'narrow';
const VIEWPORTS: Record<Device, { width: number; height: number }> = { desktop: DESKTOP, phone: PHONE, narrow: NARROW };
/** The worker and the page's polling each take a moment; a state is awaited this long at most. */
const STATE_MS = 30_000;

interface Message {
  origin: string;
  data: { type?: unknown; status?: unknown; receiptId?: unknown };
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

/** The SVG path the page draws for `text`: the modules of its QR code, as web/src/components/QrCode.tsx draws them. */
function qrPath(text: string): string {
  const qr = QRCode.create(text, { errorCorrectionLevel: 'M' });
  const n = qr.modules.size;
  let d = '';
  for (let y = 0; y < n; y++) for (let x = 0; x < n; x++) if (qr.modules.get(y, x)) d += `M${x + 4} ${y + 4}h1v1h-1z`;
  return d;
}

interface Buyer {
  context: BrowserContext;
  page: Page;
  /** wallet_addEthereumChain parameters the page asked the wallet for. */
  addedChains: AddedChain[];
  /** Transactions the page asked the wallet to send. */
  sent: { from: string; to: Hex; data: Hex; hash: Hex }[];
  /** Bodies of the hints the page posted to /transaction, with the answer's status code. */
  hints: { body: string; status: number }[];
  /** Broadcasts the transactions a `hold` wallet signed but kept back. */
  release(): Promise<void>;
  problems: string[];
}

interface Quote {
  chainId: number;
  tokenAddress: Hex;
  tokenSymbol: string;
  payTo: Hex;
  splitAddress: Hex;
  amount: string;
  paid: string;
  due: string;
}

describe('payment page', { skip: skipReason, timeout: 600_000 }, () => {
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
    // Every page polls from 127.0.0.1; the per-address limit is not what these tests are about.
    t = await startChainApp(tc.chain, { SITE_URL: siteUrl, CONFIRMATIONS: '1', PUBLIC_RATE_LIMIT_PER_MINUTE: '100000' });
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
  const usdc = () => tc.chain.usdc.address;

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

  /** The payment page's own answer for a payment URL. */
  async function view(payUrl: string): Promise<{ status: string; exception: string | null; expiresAt: number; payment: Quote }> {
    const u = new URL(payUrl);
    const res = await t.call(null, 'GET', `/api${u.pathname}${u.search}`);
    assert.equal(res.status, 200, JSON.stringify(res.body));
    return res.body;
  }

  /** A transfer of `amount` base units of `token` from dev account `from`, straight from a wallet (a QR-code payment). */
  async function transfer(from: number, to: Hex, amount: bigint, token: Address = usdc()): Promise<Hex> {
    const wallet = createWalletClient({ chain: tc.chain.publicClient.chain, transport: http(tc.chain.rpcUrl), account: devAccount(from) });
    const hash = await wallet.writeContract({ address: token, abi: erc20Abi, functionName: 'transfer', args: [to, amount] });
    const mined = await tc.chain.publicClient.waitForTransactionReceipt({ hash });
    assert.equal(mined.status, 'success');
    return hash;
  }

  /**
   * A browser context for a buyer. With `account`, the harness's strict wallet is injected into
   * every frame: it starts on mainnet, knows no dev chain until asked to add it (adding does not
   * switch; the RPC URL is not checked), and sends real transactions to the dev chain from that
   * account. With `hold`, it signs and answers the hash at once but broadcasts only on
   * `release()`, so the page can be seen between sending and the chain seeing it. With
   * `sendError`, sending fails with it.
   */
  async function buyer(opts: { account?: number; device?: Device; hold?: boolean; sendError?: string } = {}): Promise<Buyer> {
    const device = opts.device ?? 'desktop';
    const context = await browser.newContext({
      viewport: VIEWPORTS[device],
      ...(device === 'desktop' ? {} : { isMobile: true, hasTouch: true, deviceScaleFactor: 2 }),
      locale: 'en-US',
      timezoneId: 'UTC',
    });
    contexts.push(context);
    context.setDefaultTimeout(15_000);
    const held: Hex[] = [];
    const b: Buyer = {
      context,
      page: undefined as unknown as Page,
      addedChains: [],
      sent: [],
      hints: [],
      problems: [],
      async release() {
        for (const raw of held.splice(0)) await tc.chain.publicClient.sendRawTransaction({ serializedTransaction: raw });
      },
    };
    if (opts.account !== undefined) {
      const account = devAccount(opts.account);
      const wallet = createWalletClient({ chain: tc.chain.publicClient.chain, transport: http(tc.chain.rpcUrl), account });
      await injectStrictWallet(context, account, {
        checkRpc: false,
        sendError: opts.sendError,
        onAddChain: (chain) => b.addedChains.push(chain),
        async send(tx) {
          const value = BigInt(tx.value ?? '0x0');
          let hash: Hex;
          if (opts.hold) {
            const request = await wallet.prepareTransactionRequest({ to: tx.to, data: tx.data, value });
            const raw = await wallet.signTransaction(request);
            held.push(raw);
            hash = keccak256(raw);
          } else hash = await wallet.sendTransaction({ to: tx.to, data: tx.data, value });
          b.sent.push({ from: tx.from, to: tx.to, data: tx.data, hash });
          return hash;
        },
      });
    }
    b.page = await context.newPage();
    b.page.on('pageerror', (err) => b.problems.push(`page error: ${err.message}`));
    b.page.on('console', (msg) => {
      // 4xx answers are logged by the browser as "Failed to load resource"; some tests provoke them.
      if (msg.type() === 'error' && !msg.text().startsWith('Failed to load resource')) b.problems.push(`console: ${msg.text()}`);
    });
    b.page.on('response', async (res) => {
      if (res.request().method() === 'POST' && /\/transaction\?/.test(res.url())) b.hints.push({ body: res.request().postData() ?? '', status: res.status() });
    });
    return b;
  }

  /** Closes a test's browser contexts, so their pages stop polling. */
  async function done(...buyers: Buyer[]) {
    for (const b of buyers) await b.context.close();
  }

  const messages = (page: Page) => page.evaluate(() => (window as unknown as { __messages: Message[] }).__messages);
  const frameUrl = (parent: string, payUrl: string) => `${parent}/frame?u=${encodeURIComponent(payUrl)}`;
  const statusPanel = (page: Page) => page.getByTestId('payment-status');

  /** Waits until the page shows `phase` (and, when given, the receipt's `status`). */
  async function phase(page: Page, name: string, status?: string) {
    const selector = `[data-testid="payment-status"][data-phase="${name}"]${status === undefined ? '' : `[data-status="${status}"]`}`;
    await page.locator(selector).waitFor({ timeout: STATE_MS });
  }

  /** Nothing scrolls sideways: the document is no wider than the screen. */
  async function fits(page: Page, what: string) {
    const { scrollWidth, innerWidth } = await page.evaluate(() => ({ scrollWidth: document.documentElement.scrollWidth, innerWidth: window.innerWidth }));
    assert.ok(scrollWidth <= innerWidth, `${what}: the page is ${scrollWidth}px wide on a ${innerWidth}px screen`);
  }

  /** The QR code and its link carry exactly `uri`, drawn at a scannable size. */
  async function assertQr(page: Page, uri: string) {
    const panel = page.getByTestId('qr-panel');
    assert.equal(await panel.getAttribute('data-uri'), uri);
    assert.equal(await panel.getByRole('link').getAttribute('href'), uri);
    const qr = panel.getByTestId('qr-code');
    assert.equal(await qr.getAttribute('aria-label'), `QR code of ${uri}`);
    assert.equal(await qr.locator('path').getAttribute('d'), qrPath(uri), 'the drawn modules are the QR code of the URI');
    const box = await qr.boundingBox();
    assert.ok(box !== null && box.width >= 150, 'drawn at a scannable size');
  }

  const eip681 = (q: Quote, due: string) => `ethereum:${q.tokenAddress}@31337/transfer?address=${q.payTo}&uint256=${due}`;

  test('framed by an allowed origin: the buyer pays the receipt\'s address with the wallet and the parent hears "completed"', async () => {
    const m = await merchant({ origins: [allowed.origin] });
    const payUrl = await receipt(m.key, 'pay-framed-1');
    const quote = (await view(payUrl)).payment;
    assert.match(quote.payTo, /^0x[0-9a-f]{40}$/);
    assert.notEqual(quote.payTo, m.split, 'the payment address is not the split');
    const b = await buyer({ account: 1 });
    await b.page.goto(frameUrl(allowed.origin, payUrl));
    const frame = b.page.frameLocator('#pay');
    await frame.getByTestId('brand').filter({ hasText: 'Corner Café' }).waitFor();
    assert.deepEqual(await frame.getByTestId('line-item').allInnerTexts(), ['Flat white 2 × $4.25\n$8.50', 'Almond croissant\n$3.50']);
    assert.match(await frame.getByTestId('total').innerText(), /\$12\.00/);
    await frame.getByRole('button', { name: 'Pay 12 USDC with a browser wallet' }).click();

    const heard = await eventually(
      async () => {
        const list = await messages(b.page);
        assert.ok(list.some((x) => x.data.status === 'completed'), JSON.stringify(list));
        return list;
      },
      STATE_MS,
      'the parent to receive "completed"',
    );
    const completed = heard.find((x) => x.data.status === 'completed')!;
    assert.deepEqual(completed.data, { type: 'splitline:payment', status: 'completed', receiptId: 'pay-framed-1' });
    assert.equal(completed.origin, siteUrl, "the message comes from the payment page's origin");
    assert.ok(heard.every((x) => x.data.type === 'splitline:payment' && x.data.receiptId === 'pay-framed-1'));
    assert.equal(heard[0]!.data.status, 'pending', 'the first message is the status on load');
    await frame.getByTestId('payment-status').filter({ hasText: 'Paid' }).waitFor();
    await screenshot(b.page, 'pay-framed-completed');

    // The wallet was moved to the dev chain, which it learnt through the service's /dev/rpc.
    assert.deepEqual(
      b.addedChains.map((c) => ({ chainId: c.chainId, rpcUrls: c.rpcUrls })),
      [{ chainId: '0x7a69', rpcUrls: [`${siteUrl}/dev/rpc`] }],
    );
    // One ERC-20 transfer of what was due to the receipt's payment address, in the payment token.
    assert.equal(b.sent.length, 1);
    const [tx] = b.sent;
    assert.equal(tx!.to.toLowerCase(), quote.tokenAddress);
    const call = decodeFunctionData({ abi: erc20Abi, data: tx!.data });
    assert.equal(call.functionName, 'transfer');
    assert.equal(String(call.args?.[0]).toLowerCase(), quote.payTo);
    assert.equal(call.args?.[1], BigInt(quote.due));
    // The hash went to the service as a hint.
    assert.deepEqual(b.hints, [{ body: JSON.stringify({ transactionHash: tx!.hash }), status: 202 }]);

    const detail = await t.call(m.key, 'GET', '/api/receipts/pay-framed-1');
    assert.equal(detail.body.status, 'completed');
    assert.equal(detail.body.exception, null);
    assert.equal(detail.body.transactionHash, tx!.hash.toLowerCase());
    assert.deepEqual(
      detail.body.statusHistory.map((h: { status: string }) => h.status),
      ['pending', 'link_opened', 'buyer_logged_in', 'checkout_initialized', 'tx_mined', 'recipient_validated', 'completed'],
    );
    assert.deepEqual(b.problems, [], 'no script errors or CSP violations');
    await done(b);
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
    await until(() => refused.length > 0, 10_000, 'chromium to refuse to frame the page');
    // Proving absence, not a wait: give a page that did load time to post, then check nothing arrived.
    await sleep(2_000);
    assert.deepEqual(await messages(b.page), []);
    const receipt2 = await t.call(m.key, 'GET', '/api/receipts/pay-framed-2');
    assert.equal(receipt2.body.status, 'pending', 'the page never ran: no link_opened either');
    await done(b);
  });

  test('without a wallet the page says so, and the QR code carries the EIP-681 transfer to the payment address', async () => {
    const m = await merchant({ origins: [] });
    const payUrl = await receipt(m.key, 'pay-qr-1');
    const quote = (await view(payUrl)).payment;
    const b = await buyer();
    await b.page.goto(payUrl);
    const note = b.page.getByTestId('no-wallet');
    await note.waitFor();
    assert.match(await note.innerText(), /No browser wallet was found/);
    await b.page.getByRole('button', { name: /with a browser wallet/ }).click();
    await b.page.getByRole('alert').filter({ hasText: 'No browser wallet was found' }).waitFor();
    assert.equal(await b.page.getByText('No browser wallet was found').count(), 1, 'said once, now as an alert');
    await assertQr(b.page, `ethereum:${quote.tokenAddress}@31337/transfer?address=${quote.payTo}&uint256=12000000`);
    assert.equal(await b.page.getByTestId('pay-to').innerText(), quote.payTo);
    await screenshot(b.page, 'pay-no-wallet');
    assert.deepEqual(b.problems, []);
    await done(b);
  });

  for (const device of ['desktop', 'phone'] as const) {
    test(`${device}: unpaid with QR code and countdown; part paid, the rest asked at the same address; sent and confirming; paid`, async () => {
      const m = await merchant({ origins: [] });
      const id = `pay-parts-${device}`;
      const payUrl = await receipt(m.key, id);
      const before = await view(payUrl);
      const quote = before.payment;
      assert.equal(quote.due, '12000000');
      // The buyer's browser wallet holds its transaction back until released.
      const b = await buyer({ account: device === 'desktop' ? 3 : 4, device, hold: true });
      await b.page.goto(payUrl);

      // Unpaid: the whole amount, the QR code of a transfer to the receipt's address, the time left.
      await phase(b.page, 'unpaid');
      await b.page.getByRole('button', { name: 'Pay 12 USDC with a browser wallet' }).waitFor();
      await assertQr(b.page, eip681(quote, '12000000'));
      const countdown = b.page.getByTestId('countdown');
      assert.match(await countdown.innerText(), /^Pay within (1:00:00|59:[0-5]\d)$/);
      assert.equal(Number(await countdown.getAttribute('data-expires-at')), before.expiresAt);
      const first = await countdown.innerText();
      await eventually(async () => assert.notEqual(await countdown.innerText(), first), 5_000, 'the countdown to tick');
      assert.match(await countdown.innerText(), /^Pay within 59:[0-5]\d$/, 'minutes and seconds under an hour');
      await fits(b.page, 'unpaid');
      await screenshot(b.page, `pay-${device}-unpaid`);

      // 5 of the 12 USDC arrive from another wallet (a QR-code payment): the page asks for exactly 7 more, same address.
      await transfer(5, quote.payTo, 5_000_000n);
      await phase(b.page, 'partial', 'tx_mismatch');
      const partial = await view(payUrl);
      assert.equal(partial.exception, 'underpaid');
      assert.deepEqual([partial.payment.paid, partial.payment.due, partial.payment.payTo], ['5000000', '7000000', quote.payTo]);
      assert.match(await statusPanel(b.page).innerText(), /Partly paid/);
      assert.equal(await b.page.getByTestId('amount-paid').innerText(), '5 USDC');
      assert.equal(await b.page.getByTestId('amount-due').innerText(), '7 USDC');
      const payRest = b.page.getByRole('button', { name: 'Pay the remaining 7 USDC with a browser wallet' });
      await payRest.waitFor();
      await assertQr(b.page, eip681(quote, '7000000'));
      assert.equal(await b.page.getByTestId('countdown').count(), 0, 'money arrived: the receipt no longer expires');
      await fits(b.page, 'partial');
      await screenshot(b.page, `pay-${device}-partial`);

      // The buyer pays the rest with the wallet: sent and confirming, no QR code and no button meanwhile.
      await payRest.click();
      await phase(b.page, 'sent');
      assert.match(await statusPanel(b.page).innerText(), /Payment sent, confirming/);
      assert.equal(await b.page.getByTestId('qr-panel').count(), 0, 'the QR code is hidden');
      assert.equal(await b.page.getByRole('button', { name: /with a browser wallet/ }).count(), 0, 'the pay button is hidden');
      assert.equal(b.sent.length, 1);
      const call = decodeFunctionData({ abi: erc20Abi, data: b.sent[0]!.data });
      assert.equal(b.sent[0]!.to.toLowerCase(), quote.tokenAddress);
      assert.deepEqual([String(call.args?.[0]).toLowerCase(), call.args?.[1]], [quote.payTo, 7_000_000n], 'exactly the rest, to the same address');
      await until(() => b.hints.length === 1, RENDER_MS, 'the page to post the hash as a hint');
      assert.deepEqual(b.hints, [{ body: JSON.stringify({ transactionHash: b.sent[0]!.hash }), status: 202 }]);
      await fits(b.page, 'sent');
      await screenshot(b.page, `pay-${device}-sent`);

      // The transaction reaches the chain: the worker completes the receipt and the page says paid.
      await b.release();
      await phase(b.page, 'completed', 'completed');
      assert.match(await statusPanel(b.page).innerText(), /^Paid/);
      assert.equal(await b.page.getByTestId('amount-paid').innerText(), '12 USDC');
      assert.equal(await b.page.getByTestId('amount-due').innerText(), '0 USDC');
      assert.equal(await b.page.getByTestId('qr-panel').count(), 0);
      assert.equal(await b.page.getByTestId('overpaid').count(), 0);
      await fits(b.page, 'completed');
      await screenshot(b.page, `pay-${device}-completed`);
      const detail = (await t.call(m.key, 'GET', `/api/receipts/${id}`)).body;
      assert.deepEqual([detail.status, detail.exception, detail.amountPaid, detail.amountDue], ['completed', null, '12000000', '0']);
      assert.deepEqual(b.problems, []);
      await done(b);
    });
  }

  /** One receipt seen at both widths at once. */
  async function bothWidths(payUrl: string): Promise<Buyer[]> {
    const pages = [await buyer({ device: 'desktop' }), await buyer({ device: 'phone' })];
    for (const b of pages) await b.page.goto(payUrl);
    return pages;
  }

  test('overpaid: both widths show what was paid against the total and the surplus', async () => {
    const m = await merchant({ origins: [] });
    const payUrl = await receipt(m.key, 'pay-over-1');
    const quote = (await view(payUrl)).payment;
    const pages = await bothWidths(payUrl);
    for (const b of pages) await phase(b.page, 'unpaid');
    await transfer(6, quote.payTo, 15_000_000n);
    for (const [i, b] of pages.entries()) {
      await phase(b.page, 'completed', 'completed');
      const note = b.page.getByTestId('overpaid');
      assert.match(await note.innerText(), /15 USDC arrived for a total of 12 USDC: a surplus of 3 USDC/);
      assert.equal(await note.getByTestId('surplus').innerText(), '3 USDC');
      assert.equal(await b.page.getByTestId('amount-paid').innerText(), '15 USDC');
      assert.equal(await b.page.getByTestId('qr-panel').count(), 0);
      await fits(b.page, 'overpaid');
      await screenshot(b.page, `pay-${i === 0 ? 'desktop' : 'phone'}-overpaid`);
      assert.deepEqual(b.problems, []);
    }
    assert.equal((await view(payUrl)).exception, 'overpaid');
    await done(...pages);
  });

  test('another token arrives: both widths say so and still offer to pay the right one', async () => {
    const m = await merchant({ origins: [] });
    const payUrl = await receipt(m.key, 'pay-wrong-1');
    const quote = (await view(payUrl)).payment;
    // Other money is found by its balance, which the open page asks the worker to read; it never
    // moves the status (a stranger's wei must not park a receipt), so the receipt keeps its own.
    const wallet = createWalletClient({ chain: tc.chain.publicClient.chain, transport: http(tc.chain.rpcUrl), account: devAccount(7) });
    await tc.chain.publicClient.waitForTransactionReceipt({ hash: await wallet.sendTransaction({ to: quote.payTo, value: 10n ** 15n }) });
    // A page asks once its receipt is a minute old (and then once a minute): the test stands in
    // for the minute by making the receipt that old, with no read made yet.
    await t.deps.database.db.execute(sql`update receipts set created_at = created_at - 61000, balances_checked_at = null where wallet = ${m.s.wallet} and id = 'pay-wrong-1'`);
    const pages = await bothWidths(payUrl);
    for (const [i, b] of pages.entries()) {
      await phase(b.page, 'wrong_token');
      assert.match(await statusPanel(b.page).innerText(), /The wrong token arrived/);
      await b.page.getByRole('button', { name: 'Pay 12 USDC with a browser wallet' }).waitFor();
      await assertQr(b.page, eip681(quote, '12000000'));
      await fits(b.page, 'wrong token');
      await screenshot(b.page, `pay-${i === 0 ? 'desktop' : 'phone'}-wrong-token`);
      assert.deepEqual(b.problems, []);
    }
    const after = await view(payUrl);
    assert.equal(after.exception, 'wrong_token');
    assert.equal(after.status, 'link_opened', 'other money alone never moves the status; the page’s own tracking status stands');
    await done(...pages);
  });

  test('expired with nothing received: both widths say so and stop offering to pay', async () => {
    const m = await merchant({ origins: [] });
    const payUrl = await receipt(m.key, 'pay-expired-1');
    const pages = await bothWidths(payUrl);
    for (const b of pages) {
      await phase(b.page, 'unpaid');
      await b.page.getByTestId('countdown').waitFor();
    }
    const past = Date.now() - 60_000;
    await t.deps.database.db.execute(sql`update receipts set expires_at = ${past} where wallet = ${m.s.wallet} and id = 'pay-expired-1'`);
    for (const [i, b] of pages.entries()) {
      await phase(b.page, 'expired', 'failed');
      assert.match(await statusPanel(b.page).innerText(), /This receipt has expired/);
      assert.equal(await b.page.getByRole('button', { name: /with a browser wallet/ }).count(), 0, 'no pay button');
      assert.equal(await b.page.getByTestId('qr-panel').count(), 0, 'no QR code');
      assert.equal(await b.page.getByTestId('countdown').count(), 0);
      await fits(b.page, 'expired');
      await screenshot(b.page, `pay-${i === 0 ? 'desktop' : 'phone'}-expired`);
      assert.deepEqual(b.problems, []);
    }
    const detail = (await t.call(m.key, 'GET', '/api/receipts/pay-expired-1')).body;
    assert.deepEqual([detail.status, detail.exception], ['failed', 'expired']);
    await done(...pages);
  });

  /** An empty account's answer to eth_sendTransaction: the node's words, then the whole request and a huge data blob. */
  const EMPTY_ACCOUNT =
    `insufficient funds for gas * price + value: address 0x${'ab'.repeat(20)} have 0 want 1006510000000000\n` +
    `Request Arguments:\n  from: 0x${'ab'.repeat(20)}\n  data: 0xa9059cbb${'deadbeef'.repeat(600)}\n${'Details: '.repeat(100)}`;

  for (const device of ['desktop', 'phone', 'narrow'] as const) {
    test(`${device}: an empty account's long wallet error is one sentence, the details folded and wrapped; nothing scrolls sideways`, async () => {
      const m = await merchant({ origins: [] });
      const payUrl = await receipt(m.key, `pay-error-${device}`);
      const b = await buyer({ account: 8, device, sendError: EMPTY_ACCOUNT });
      await b.page.goto(payUrl);
      await b.page.getByRole('button', { name: 'Pay 12 USDC with a browser wallet' }).click();
      const note = b.page.getByTestId('pay-error');
      await note.waitFor();
      assert.equal(
        await note.getByTestId('error-summary').innerText(),
        'The account in your wallet has too little ETH to pay the network fee for the payment; add ETH to it and try again.',
      );
      const details = note.getByTestId('error-detail');
      assert.equal(await details.getAttribute('open'), null, 'the details start folded');
      await fits(b.page, 'folded wallet error');
      await details.locator('summary').click();
      assert.match(await details.locator('pre').innerText(), /^insufficient funds for gas \* price \+ value: address 0xabab/);
      const box = await note.boundingBox();
      const width = VIEWPORTS[device].width;
      assert.ok(box !== null && box.x >= 0 && box.x + box.width <= width, 'the note stays on the screen');
      await fits(b.page, 'unfolded wallet error');
      await screenshot(b.page, `pay-${device}-wallet-error`);
      // Still unpaid, so the buyer may try again.
      await phase(b.page, 'unpaid');
      assert.equal(await b.page.getByRole('button', { name: 'Pay 12 USDC with a browser wallet' }).isEnabled(), true);
      assert.deepEqual(b.problems, []);
      await done(b);
    });
  }

  test('another long wallet error keeps its first line, cut short, as the sentence', async () => {
    const m = await merchant({ origins: [] });
    const payUrl = await receipt(m.key, 'pay-error-revert');
    const long = `execution reverted: 0x${'deadbeef'.repeat(200)}\nRequest Arguments:\n  from: 0x${'ab'.repeat(20)}\n${'Details: '.repeat(100)}`;
    const b = await buyer({ account: 7, device: 'phone', sendError: long });
    await b.page.goto(payUrl);
    await b.page.getByRole('button', { name: 'Pay 12 USDC with a browser wallet' }).click();
    const note = b.page.getByTestId('pay-error');
    await note.waitFor();
    const summary = await note.getByTestId('error-summary').innerText();
    assert.match(summary, /^The wallet could not complete the payment: execution reverted: 0xdeadbeef.*…$/);
    assert.ok(summary.length <= 200, `the sentence is cut short (${summary.length} characters)`);
    await note.getByTestId('error-detail').locator('summary').click();
    await fits(b.page, 'unfolded revert');
    assert.deepEqual(b.problems, []);
    await done(b);
  });

  test('clear messages: a shop without a deployed split, a link that names no receipt', async () => {
    const m = await merchant({ origins: [], split: false });
    const payUrl = await receipt(m.key, 'pay-nosplit-1');
    assert.equal((await view(payUrl)).payment.payTo, null);
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
    await done(b);
  });
});
