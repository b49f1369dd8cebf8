/**
 * The browser-test harness: the real app listening on a loopback port with the built admin app,
 * Debian's chromium driven by playwright-core, and an injected EIP-1193 wallet whose signatures
 * come from a viem local account in Node: a lenient one already on the service's chain, or a
 * strict one that behaves as MetaMask does about chains (see injectStrictWallet).
 */
import { existsSync, mkdirSync } from 'node:fs';
import { after, before } from 'node:test';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { chromium, type Browser, type BrowserContext, type BrowserContextOptions, type Page } from 'playwright-core';
import { createWalletClient, http, type Hex } from 'viem';
import { generatePrivateKey, privateKeyToAccount, type LocalAccount, type PrivateKeyAccount } from 'viem/accounts';
import { ensureWebBuild } from '../../scripts/ensure-web-build.ts';
import { freePort } from '../../scripts/service-launcher.ts';
import { startTestApp, type TestApp } from '../helpers/app.ts';
import type { ChainDeps } from '../../src/chain/client.ts';
import { devAccount } from '../../src/chain/dev-accounts.ts';
import { startChainApp, startTestChain, type TestChain } from '../chain/helpers.ts';

export const CHROMIUM = '/usr/bin/chromium';
const FLAGS = [
  '--headless',
  '--no-sandbox',
  '--disable-gpu',
  '--disable-quic',
  '--no-first-run',
  '--disable-background-networking',
  '--disable-component-update',
  '--disable-sync',
];

/** Headless Chromium at CHROMIUM with the flags every browser test uses. */
export function launchChromium(): Promise<Browser> {
  return chromium.launch({ executablePath: CHROMIUM, headless: true, args: FLAGS, timeout: 30_000 });
}

/** Listens `t` on 127.0.0.1 at `port` (0: a free one); the base URL it answers at. */
export async function listenLocal(t: TestApp, port = 0): Promise<string> {
  await t.app.listen({ host: '127.0.0.1', port });
  const address = t.app.server.address();
  if (address === null || typeof address === 'string') throw new Error('the app is not listening on a TCP port');
  return `http://127.0.0.1:${address.port}`;
}

/** Why the browser tests cannot run here, or false when they can. */
export const skipReason: string | false = existsSync(CHROMIUM)
  ? false
  : `${CHROMIUM} is absent, so the browser tests are skipped; install it with "apt-get install chromium" (.ci/run does)`;

export const SCREENSHOTS = path.join(fileURLToPath(new URL('../..', import.meta.url)), 'test-artifacts', 'screenshots');
export const PHONE = { width: 390, height: 844 };
const DESKTOP = { width: 1280, height: 860 };

/** A page's context as the tests open it: a desktop, or a phone (touch, 2x), in English at UTC; at `base` when given. */
export function contextOptions(phone: boolean, base?: string): BrowserContextOptions {
  return {
    ...(base === undefined ? {} : { baseURL: base }),
    viewport: phone ? PHONE : DESKTOP,
    ...(phone ? { isMobile: true, hasTouch: true, deviceScaleFactor: 2 } : {}),
    locale: 'en-US',
    timezoneId: 'UTC',
  };
}

export interface ApiResult {
  status: number;
  body: any;
}

export interface Merchant {
  account: PrivateKeyAccount;
  wallet: string;
  context: BrowserContext;
  page: Page;
  /** Calls the API as the signed-in admin app does (session cookie, CSRF, same Origin). */
  api(method: string, url: string, body?: unknown): Promise<ApiResult>;
  /** Console errors, failed page scripts and CSP violations seen so far. */
  problems: string[];
}

/** The dev chain's id as wallets write it (31337). */
const DEV_CHAIN = '0x7a69';

/** What a page passes to wallet_addEthereumChain (the fields the tests read). */
export interface AddedChain {
  chainId: string;
  rpcUrls: string[];
}

/** What a page passes to eth_sendTransaction. */
export interface WalletTransaction {
  from: string;
  to: Hex;
  data: Hex;
  value?: Hex;
}

/** How the strict wallet misbehaves, or does more than sign, when asked to. */
export interface StrictWalletOptions {
  /** wallet_switchEthereumChain is refused by the person (4001). */
  rejectSwitch?: boolean;
  /** eth_sendTransaction fails with this message (code -32603), as an empty account's does. */
  sendError?: string;
  /**
   * wallet_addEthereumChain asks the RPC URL for its chain id first, as MetaMask does (the
   * default). False where the page's RPC URL (SITE_URL/dev/rpc) is not where the test serves it.
   */
  checkRpc?: boolean;
  /** wallet_addEthereumChain also switches to the chain, as most wallets do (MetaMask only adds). */
  switchOnAdd?: boolean;
  /** Told in Node of each chain added, from whichever frame asked. */
  onAddChain?: (chain: AddedChain) => void;
  /**
   * Sends eth_sendTransaction in Node and answers its hash; the wallet first requires the dev
   * chain to be active (4901) and the sender to be its account (4100). Without it, sending fails (4200).
   */
  send?: (tx: WalletTransaction) => Promise<Hex>;
}

export interface Harness {
  t: TestApp;
  base: string;
  browser: Browser;
  /**
   * A new browser context; with a wallet (`account`, or a new one) unless `wallet: false`. Not
   * signed in yet. `strictWallet`: the strict wallet (injectStrictWallet) instead of the lenient one.
   */
  open(opts?: { wallet?: boolean; phone?: boolean; account?: PrivateKeyAccount; strictWallet?: StrictWalletOptions }): Promise<Merchant>;
  close(): Promise<void>;
}

/**
 * `env`: extra configuration for the app, such as SUPERADMIN_WALLETS or CONTAINER_TYPE.
 * `opts.chain`: a chain the test file started; the app runs on it with CHAIN=dev, and SITE_URL is
 * the address the app listens at, so /dev/rpc is reachable from the page as `${base}/dev/rpc`.
 */
export async function startHarness(env: Record<string, string> = {}, opts: { chain?: ChainDeps } = {}): Promise<Harness> {
  await ensureWebBuild((line) => console.log(line));
  mkdirSync(SCREENSHOTS, { recursive: true });
  const port = opts.chain === undefined ? 0 : await freePort();
  const chainEnv: Record<string, string> = opts.chain === undefined ? {} : { CHAIN: 'dev', SITE_URL: `http://127.0.0.1:${port}` };
  const t = await startTestApp({ ...chainEnv, ...env }, opts.chain === undefined ? {} : { chain: opts.chain });
  const base = await listenLocal(t, port);
  const browser = await launchChromium();
  const contexts: BrowserContext[] = [];

  return {
    t,
    base,
    browser,
    async open(opts = {}) {
      const account = opts.account ?? privateKeyToAccount(generatePrivateKey());
      const context = await browser.newContext(contextOptions(opts.phone === true, base));
      contexts.push(context);
      context.setDefaultTimeout(10_000);
      if (opts.wallet !== false) {
        if (opts.strictWallet !== undefined) await injectStrictWallet(context, account, opts.strictWallet);
        else await injectWallet(context, account);
      }
      const page = await context.newPage();
      const problems: string[] = [];
      page.on('pageerror', (err) => problems.push(`page error: ${err.message}`));
      page.on('console', (msg) => {
        // A fetch answered 4xx is logged by the browser as "Failed to load resource"; the tests
        // provoke those on purpose (signed-out /api/auth/me, server-side refusals).
        if (msg.type() === 'error' && !msg.text().startsWith('Failed to load resource')) problems.push(`console: ${msg.text()}`);
      });
      const api = async (method: string, url: string, body?: unknown): Promise<ApiResult> => {
        const cookies = await context.cookies(base);
        const cookie = cookies.map((c) => `${c.name}=${c.value}`).join('; ');
        const me = await fetch(`${base}/api/auth/me`, { headers: { cookie } });
        const csrf = me.ok ? ((await me.json()) as { csrfToken: string }).csrfToken : '';
        const res = await fetch(`${base}${url}`, {
          method,
          headers: {
            cookie,
            origin: base,
            'x-csrf-token': csrf,
            ...(body === undefined ? {} : { 'content-type': 'application/json' }),
          },
          body: body === undefined ? undefined : JSON.stringify(body),
        });
        const text = await res.text();
        return { status: res.status, body: text === '' ? null : JSON.parse(text) };
      };
      return { account, wallet: account.address.toLowerCase(), context, page, api, problems };
    },
    async close() {
      for (const c of contexts) await c.close();
      await browser.close();
      await t.close();
    },
  };
}

/** window.__splitlineTestSign(json): the account's EIP-712 signature, made in Node. */
async function exposeSigner(context: BrowserContext, account: LocalAccount): Promise<void> {
  await context.exposeFunction('__splitlineTestSign', async (json: string) => {
    const typed = JSON.parse(json) as { domain: any; types: Record<string, unknown>; primaryType: string; message: any };
    const { EIP712Domain: _domain, ...types } = typed.types;
    return account.signTypedData({ domain: typed.domain, types: types as any, primaryType: typed.primaryType, message: typed.message });
  });
}

/**
 * An EIP-1193 provider in the page that knows one account and signs typed data through a
 * function exposed from Node, as an extension wallet would after the person approves.
 */
async function injectWallet(context: BrowserContext, account: PrivateKeyAccount): Promise<void> {
  await exposeSigner(context, account);
  const address = JSON.stringify(account.address);
  await context.addInitScript({
    content: `(() => {
      const address = ${address};
      const fail = (code, message) => Object.assign(new Error(message), { code });
      window.ethereum = {
        isSplitlineTestWallet: true,
        async request({ method, params }) {
          switch (method) {
            case 'eth_requestAccounts':
            case 'eth_accounts':
              return [address];
            case 'eth_chainId':
              return ${JSON.stringify(DEV_CHAIN)};
            case 'eth_signTypedData_v4': {
              const [from, data] = params;
              if (String(from).toLowerCase() !== address.toLowerCase()) throw fail(4100, 'unknown account ' + from);
              if (typeof data !== 'string') throw fail(-32602, 'typed data must be a JSON string');
              return window.__splitlineTestSign(data);
            }
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

/**
 * A wallet as strict about chains as MetaMask: it starts on Ethereum mainnet (0x1) and knows no
 * other chain; wallet_switchEthereumChain to an unknown chain answers 4902; wallet_addEthereumChain
 * checks that the RPC URL answers eth_chainId with the chain's id (as MetaMask does) and adds the
 * chain without switching to it; eth_signTypedData_v4 refuses typed data whose domain chainId is
 * not the active chain ("must match the active chainId"). Every request is logged in
 * window.__walletCalls as `method` or `method:outcome`; added chains in window.__addedChains.
 * The options make it refuse or fail on purpose, or send real transactions (`send`).
 */
export async function injectStrictWallet(context: BrowserContext, account: LocalAccount, opts: StrictWalletOptions = {}): Promise<void> {
  await exposeSigner(context, account);
  const { onAddChain, send } = opts;
  if (onAddChain !== undefined) await context.exposeFunction('__splitlineTestAddChain', (json: string) => onAddChain(JSON.parse(json) as AddedChain));
  if (send !== undefined) await context.exposeFunction('__splitlineTestSend', (json: string) => send(JSON.parse(json) as WalletTransaction));
  const behaviour = {
    rejectSwitch: opts.rejectSwitch ?? false,
    sendError: opts.sendError ?? null,
    checkRpc: opts.checkRpc ?? true,
    switchOnAdd: opts.switchOnAdd ?? false,
    reportAdds: onAddChain !== undefined,
    sends: send !== undefined,
  };
  await context.addInitScript({
    content: `(() => {
      const address = ${JSON.stringify(account.address)};
      const devChain = ${JSON.stringify(DEV_CHAIN)};
      const opts = ${JSON.stringify(behaviour)};
      const fail = (code, message) => Object.assign(new Error(message), { code });
      let chainId = '0x1';
      const known = new Set(['0x1']);
      window.__walletCalls = [];
      window.__addedChains = [];
      const log = (entry) => window.__walletCalls.push(entry);
      async function handle(method, params) {
        switch (method) {
          case 'eth_requestAccounts':
          case 'eth_accounts':
            return [address];
          case 'eth_chainId':
            return chainId;
          case 'wallet_switchEthereumChain': {
            const wanted = String(params[0].chainId).toLowerCase();
            if (opts.rejectSwitch) throw fail(4001, 'User rejected the request.');
            if (!known.has(wanted)) throw fail(4902, 'Unrecognized chain ID "' + wanted + '". Try adding the chain using wallet_addEthereumChain first.');
            chainId = wanted;
            return null;
          }
          case 'wallet_addEthereumChain': {
            const p = params[0];
            const wanted = String(p.chainId).toLowerCase();
            if (opts.checkRpc) {
              const rpc = (p.rpcUrls || [])[0];
              if (typeof rpc !== 'string') throw fail(-32602, 'rpcUrls is required');
              const res = await fetch(rpc, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'eth_chainId' }) });
              const answer = await res.json();
              if (parseInt(answer.result, 16) !== parseInt(wanted, 16)) {
                throw fail(-32603, 'Chain ID returned by RPC URL ' + rpc + ' (' + answer.result + ') does not match ' + wanted);
              }
            }
            window.__addedChains.push(p);
            if (opts.reportAdds) await window.__splitlineTestAddChain(JSON.stringify(p));
            known.add(wanted);
            if (opts.switchOnAdd) chainId = wanted;
            return null;
          }
          case 'eth_signTypedData_v4': {
            const [from, data] = params;
            if (String(from).toLowerCase() !== address.toLowerCase()) throw fail(4100, 'unknown account ' + from);
            const typed = JSON.parse(data);
            const domainChain = Number(typed.domain.chainId);
            if (domainChain !== parseInt(chainId, 16)) {
              throw fail(-32603, 'Provided chainId "' + domainChain + '" must match the active chainId "' + parseInt(chainId, 16) + '"');
            }
            return window.__splitlineTestSign(data);
          }
          case 'eth_sendTransaction':
            if (opts.sendError !== null) throw fail(-32603, opts.sendError);
            if (!opts.sends) throw fail(4200, 'this test wallet sends no transactions');
            if (chainId !== devChain) throw fail(4901, 'the wallet is on ' + chainId);
            if (String(params[0].from).toLowerCase() !== address.toLowerCase()) throw fail(4100, 'unknown account');
            return window.__splitlineTestSend(JSON.stringify(params[0]));
          default:
            throw fail(4200, 'unsupported method ' + method);
        }
      }
      window.ethereum = {
        isSplitlineStrictTestWallet: true,
        async request({ method, params }) {
          try {
            const result = await handle(method, params);
            log(method);
            return result;
          } catch (err) {
            log(method + ':' + err.code);
            throw err;
          }
        },
        on() {},
        removeListener() {},
      };
    })();`,
  });
}

/** A signed-in browser whose wallet sends real transactions on the dev chain (browseWithDevWallet). */
export interface DevWalletPage {
  context: BrowserContext;
  page: Page;
  /** Every transaction the wallet sent, in order. */
  sent: { to: Hex; data: Hex; hash: Hex }[];
  /** Every chain the page asked the wallet to add. */
  added: AddedChain[];
  /** Console errors and failed page scripts seen so far. */
  problems: string[];
}

/**
 * A new browser context at `base`, signed in with the session `cookie`, with the strict wallet
 * for dev account `walletOf` injected: it starts on mainnet, adds the dev chain when asked
 * (switching to it; the RPC URL is not checked, as the app is not at SITE_URL) and sends
 * eth_sendTransaction to the dev chain from that account. The caller closes the context.
 */
export async function browseWithDevWallet(opts: {
  browser: Browser;
  base: string;
  tc: TestChain;
  cookie: string;
  walletOf: number;
  phone?: boolean;
}): Promise<DevWalletPage> {
  const { base, tc, phone = false } = opts;
  const context = await opts.browser.newContext(contextOptions(phone, base));
  context.setDefaultTimeout(15_000);
  const [name, value] = opts.cookie.split('=') as [string, string];
  await context.addCookies([{ name, value, url: base }]);
  const account = devAccount(opts.walletOf);
  const wallet = createWalletClient({ chain: tc.chain.publicClient.chain, transport: http(tc.chain.rpcUrl), account });
  const sent: DevWalletPage['sent'] = [];
  const added: AddedChain[] = [];
  await injectStrictWallet(context, account, {
    checkRpc: false,
    switchOnAdd: true,
    onAddChain: (chain) => added.push(chain),
    async send(tx) {
      const hash = await wallet.sendTransaction({ to: tx.to, data: tx.data, value: BigInt(tx.value ?? '0x0') });
      sent.push({ to: tx.to, data: tx.data, hash });
      return hash;
    },
  });
  const page = await context.newPage();
  const problems: string[] = [];
  page.on('pageerror', (err) => problems.push(`page error: ${err.message}`));
  page.on('console', (msg) => {
    if (msg.type() === 'error' && !msg.text().startsWith('Failed to load resource')) problems.push(`console: ${msg.text()}`);
  });
  return { context, page, sent, added, problems };
}

/** Signs in through the page, as a merchant clicking the button with a wallet installed. */
export async function signInThroughPage(m: Merchant): Promise<void> {
  await m.page.goto('/admin/');
  await m.page.getByRole('button', { name: 'Sign in with wallet' }).click();
  await m.page.getByTestId('signed-in-wallet').waitFor();
}

export async function screenshot(page: Page, name: string): Promise<void> {
  await page.screenshot({ path: path.join(SCREENSHOTS, `${name}.png`), fullPage: true });
}

export const PLATFORM = '0x000000000000000000000000000000000000beef';

/** A configured split for the merchant: 99.50% to itself, 0.50% to the platform. */
export async function setUpSplit(m: Merchant): Promise<void> {
  const res = await m.api('POST', '/api/split/deploy', {
    recipients: [
      { address: m.wallet, sharesBps: 9950 },
      { address: PLATFORM, sharesBps: 50 },
    ],
  });
  if (res.status !== 200) throw new Error(`split set-up failed: ${res.status} ${JSON.stringify(res.body)}`);
}

/** How long a test waits for the page to re-render after an event (it re-renders after, not during). */
export const RENDER_MS = 5_000;

/** A browser suite's dev chain, the app on it with its workers, where it listens, and Chromium. */
export interface ChainBrowserSuite {
  tc: TestChain;
  t: TestApp;
  /** http://127.0.0.1:<port>, where the app listens. */
  base: string;
  browser: Browser;
}

/**
 * For a describe block: starts the web build, a dev chain, the app on it with `env` (its workers
 * started) listening at 127.0.0.1, and Chromium, in the block's before hook; hands them to
 * `started` in that same hook (the suite's own set-up belongs there, so it runs after), and closes
 * every browser context, Chromium, the app and the chain after the block.
 */
export function useChainBrowser(env: Record<string, string>, started: (s: ChainBrowserSuite) => unknown): void {
  const suite: Partial<ChainBrowserSuite> = {};
  before(async () => {
    await ensureWebBuild((line) => console.log(line));
    suite.tc = await startTestChain();
    suite.t = await startChainApp(suite.tc.chain, env);
    suite.t.deps.startWorkers();
    suite.base = await listenLocal(suite.t);
    suite.browser = await launchChromium();
    await started(suite as ChainBrowserSuite);
  });
  after(async () => {
    for (const c of suite.browser?.contexts() ?? []) await c.close();
    await suite.browser?.close();
    await suite.t?.close();
    await suite.tc?.close();
  });
}

/** A test file's dev chain, the app on it with its workers, listening at `siteUrl`, and Chromium. */
export interface ChainBrowser {
  tc: TestChain;
  t: TestApp;
  siteUrl: string;
  browser: Browser;
  /** A new browser context (closed by close()), as a phone unless `desktop`. */
  context(opts?: { desktop?: boolean }): Promise<BrowserContext>;
  close(): Promise<void>;
}

/**
 * Starts a dev chain, the app on it (CONFIRMATIONS=1, workers started, a high public rate limit:
 * every page polls from 127.0.0.1) reached as http://localhost:<port>, and Chromium.
 */
export async function startChainBrowser(env: Record<string, string> = {}): Promise<ChainBrowser> {
  await ensureWebBuild((line) => console.log(line));
  mkdirSync(SCREENSHOTS, { recursive: true });
  const tc = await startTestChain();
  const port = await freePort();
  const siteUrl = `http://localhost:${port}`;
  const t = await startChainApp(tc.chain, { SITE_URL: siteUrl, CONFIRMATIONS: '1', PUBLIC_RATE_LIMIT_PER_MINUTE: '100000', ...env });
  t.deps.startWorkers();
  await listenLocal(t, port);
  const browser = await launchChromium();
  const contexts: BrowserContext[] = [];
  return {
    tc,
    t,
    siteUrl,
    browser,
    async context(opts = {}) {
      const context = await browser.newContext(contextOptions(opts.desktop !== true));
      contexts.push(context);
      context.setDefaultTimeout(15_000);
      // The first load of a page on a busy machine (other test files share its cores) can take longer.
      context.setDefaultNavigationTimeout(60_000);
      return context;
    },
    async close() {
      for (const c of contexts) await c.close();
      await browser.close();
      await t.close();
      await tc.close();
    },
  };
}
