/**
 * The CLI's dev chain commands: the README's quick start from a terminal. They go through the
 * running server's HTTP API, as the admin app and a buyer's wallet would, so they work while the
 * server holds the embedded database (the CLI's other commands open the database themselves).
 *
 *   dev merchant  signs in as a test account (EIP-712, as the admin app does), saves its split
 *                 (everything but the platform fee to itself) and issues a subscription key
 *   dev pay       pays what a receipt still needs in test USDC from a test account, through
 *                 {server}/dev/rpc, and waits until the chain worker has settled it
 *
 * The test accounts' keys are public (the standard test mnemonic): test money only.
 */
import { bytesToHex, createWalletClient, defineChain, erc20Abi, formatUnits, http, type Address, type Hex } from 'viem';
import type { HDAccount } from 'viem/accounts';
import { DEV_ACCOUNT_COUNT, DEV_DEPLOYER_INDEX, devAccount } from './chain/dev-accounts.ts';
import { DEV_CHAIN_ID } from './chain/dev-chain.ts';
import { devPublicClient } from './chain/dev-public-client.ts';
import type { Config } from './config.ts';
import { isAddress } from './domain/wallet.ts';

/** A dev command that cannot go on: exit 1 with the message. */
export class DevCommandError extends Error {}
/** 429 from the server: a poll waits and asks again. */
class RateLimited extends DevCommandError {}

/** The merchant `dev merchant` signs in as, and the buyer `dev pay` pays from, unless --account says otherwise. */
export const DEFAULT_MERCHANT_ACCOUNT = 0;
export const DEFAULT_BUYER_ACCOUNT = 1;
/** How long `dev pay` waits for the chain worker to settle the payment. */
const SETTLE_TIMEOUT_MS = 60_000;
const POLL_MS = 500;
const REQUEST_TIMEOUT_MS = 30_000;

type Json = Record<string, unknown>;

/** Where the server listens by the same settings (HOST, PORT) the CLI reads, or --url. */
export function serverUrl(config: Pick<Config, 'host' | 'port'>, url: string | undefined, flag = '--url'): string {
  if (url !== undefined) {
    if (!URL.canParse(url) || !['http:', 'https:'].includes(new URL(url).protocol)) {
      throw new DevCommandError(`${flag} must be the server's address, such as http://127.0.0.1:8080 (got "${url}")`);
    }
    return new URL(url).origin;
  }
  if (config.port === 0) throw new DevCommandError(`PORT=0 lets the server pick its port: pass ${flag} with the address its banner printed`);
  const host = config.host === '0.0.0.0' ? '127.0.0.1' : config.host === '::' ? '::1' : config.host;
  return `http://${host.includes(':') ? `[${host}]` : host}:${config.port}`;
}

/** A test account by its index, refusing the service's own (it pays the deployments and sweeps). */
export function testAccount(value: string | undefined, fallback: number): { index: number; account: HDAccount } {
  const index = value === undefined ? fallback : Number(value);
  if (!/^\d+$/.test(value ?? '0') || !Number.isInteger(index) || index < 0 || index >= DEV_ACCOUNT_COUNT) {
    throw new DevCommandError(`--account must be a test account from 0 to ${DEV_ACCOUNT_COUNT - 2} (got "${value}")`);
  }
  if (index === DEV_DEPLOYER_INDEX) {
    throw new DevCommandError(`test account ${index} is the service's own (it deploys splits and pays the sweeps); pick another --account`);
  }
  return { index, account: devAccount(index) };
}

interface Answer {
  status: number;
  body: Json;
  headers: Headers;
}

/** One JSON request to the server; an unreachable server is one line saying how to start it. */
async function call(base: string, method: 'GET' | 'POST', url: string, opts: { body?: unknown; headers?: Record<string, string> } = {}): Promise<Answer> {
  let res: Response;
  try {
    res = await fetch(base + url, {
      method,
      headers: { ...(opts.body === undefined ? {} : { 'content-type': 'application/json' }), ...opts.headers },
      ...(opts.body === undefined ? {} : { body: JSON.stringify(opts.body) }),
      signal: AbortSignal.timeout(REQUEST_TIMEOUT_MS),
    });
  } catch (err) {
    const cause = err instanceof Error && err.cause instanceof Error ? err.cause.message : String(err);
    throw new DevCommandError(`no Splitline server answers at ${base} (${cause}): start it with npm start, or pass --url with the address its banner printed`);
  }
  const text = await res.text();
  let body: unknown;
  try {
    body = JSON.parse(text);
  } catch {
    throw new DevCommandError(`${method} ${base}${url} answered ${res.status} with something other than JSON: is a Splitline server there?`);
  }
  return { status: res.status, body: typeof body === 'object' && body !== null && !Array.isArray(body) ? (body as Json) : {}, headers: res.headers };
}

/** The answer's body when its status is `expected`; otherwise the server's {error, message} as one line. */
function expect(answer: Answer, expected: number, what: string): Json {
  if (answer.status === expected) return answer.body;
  const { error, message } = answer.body;
  const why = typeof message === 'string' ? `${typeof error === 'string' ? `${error}: ` : ''}${message}` : JSON.stringify(answer.body);
  throw new (answer.status === 429 ? RateLimited : DevCommandError)(`${what} failed (${answer.status} ${why})`);
}

function str(body: Json, name: string, what: string): string {
  const v = body[name];
  if (typeof v !== 'string') throw new DevCommandError(`${what}: the server's answer has no ${name}`);
  return v;
}

function obj(body: Json, name: string, what: string): Json {
  const v = body[name];
  if (typeof v !== 'object' || v === null || Array.isArray(v)) throw new DevCommandError(`${what}: the server's answer has no ${name}`);
  return v as Json;
}

function baseUnits(body: Json, name: string, what: string): bigint {
  const v = str(body, name, what);
  if (!/^\d+$/.test(v)) throw new DevCommandError(`${what}: ${name} is not an amount in base units ("${v}")`);
  return BigInt(v);
}

const short = (address: string) => `${address.slice(0, 6)}…${address.slice(-4)}`;
const pct = (bps: number) => `${(bps / 100).toString()}%`;

export interface DevMerchantResult {
  account: number;
  wallet: string;
  privateKey: Hex;
  split: { address: string | null; recipients: { address: string; sharesBps: number }[]; alreadySaved: boolean };
  subscriptionId: string;
  primaryKey: string;
  secondaryKey: string;
}

/** Signs in as the test account over HTTP (the admin app's EIP-712 flow): the cookie and CSRF headers. */
async function signIn(base: string, account: HDAccount): Promise<Record<string, string>> {
  const challenge = expect(await call(base, 'POST', '/api/auth/challenge', { body: { wallet: account.address } }), 200, 'sign-in (challenge)');
  const typed = obj(challenge, 'typedData', 'sign-in (challenge)');
  const { EIP712Domain: _implied, ...types } = obj(typed, 'types', 'sign-in (challenge)');
  const signature = await account.signTypedData({
    domain: obj(typed, 'domain', 'sign-in (challenge)'),
    types,
    primaryType: str(typed, 'primaryType', 'sign-in (challenge)'),
    message: obj(typed, 'message', 'sign-in (challenge)'),
  });
  const login = await call(base, 'POST', '/api/auth/login', {
    body: { wallet: account.address, nonce: str(challenge, 'nonce', 'sign-in (challenge)'), signature },
  });
  const session = expect(login, 200, 'sign-in (login)');
  const cookie = login.headers.getSetCookie().find((c) => c.startsWith('cb_auth_token='));
  if (cookie === undefined) throw new DevCommandError('sign-in (login): the server set no session cookie');
  return { cookie: cookie.split(';')[0]!, 'x-csrf-token': str(session, 'csrfToken', 'sign-in (login)') };
}

/**
 * Makes a test account a merchant ready to take payments: its split saved (everything but the
 * platform fee to itself; kept as it is when one is saved already) and a new subscription key.
 */
export async function devMerchant(p: { base: string; index: number; account: HDAccount; log: (line: string) => void }): Promise<DevMerchantResult> {
  const { base, index, account, log } = p;
  const session = await signIn(base, account);
  const platform = expect(await call(base, 'GET', '/api/admin/platform', { headers: session }), 200, 'reading the platform settings');
  if (platform.chainId !== DEV_CHAIN_ID) {
    throw new DevCommandError(`dev merchant is for the dev chain (CHAIN=dev); the server at ${base} runs chain ${String(platform.chainId)}`);
  }
  const platformAddress = platform.platformRecipientAddress;
  if (typeof platformAddress !== 'string') {
    throw new DevCommandError('the server has no platform recipient, which every split must include: set PLATFORM_RECIPIENT_ADDRESS on the server');
  }
  if (platformAddress.toLowerCase() === account.address.toLowerCase()) {
    throw new DevCommandError(`test account ${index} is the platform recipient (PLATFORM_RECIPIENT_ADDRESS): pick another --account`);
  }
  const feeBps = typeof platform.platformFeeBps === 'number' ? platform.platformFeeBps : 0;
  const recipients = [
    { address: account.address.toLowerCase(), sharesBps: 10_000 - feeBps },
    ...(feeBps > 0 ? [{ address: platformAddress, sharesBps: feeBps }] : []),
  ];
  log(`Signed in to ${base} as test account ${index} (${account.address}).`);
  const deployed = expect(await call(base, 'POST', '/api/split/deploy', { headers: session, body: { recipients } }), 200, 'saving the split');
  const split = obj(deployed, 'split', 'saving the split');
  const alreadySaved = deployed.idempotent === true;
  const savedRecipients = Array.isArray(split.recipients)
    ? split.recipients.flatMap((r: unknown) => {
        const o = r as Json;
        return typeof o?.address === 'string' && typeof o.sharesBps === 'number' ? [{ address: o.address, sharesBps: o.sharesBps }] : [];
      })
    : [];
  const splitAddress = typeof split.address === 'string' ? split.address : null;
  log(
    `Split ${splitAddress ?? '(not deployed yet)'} ${alreadySaved ? 'was already saved' : 'saved'}: ` +
      savedRecipients.map((r) => `${pct(r.sharesBps)} to ${r.address.toLowerCase() === platformAddress.toLowerCase() ? 'the platform' : short(r.address)}`).join(', ') +
      '.',
  );
  const created = expect(
    await call(base, 'POST', '/api/admin/subscriptions', { headers: session, body: { name: 'quick start (dev merchant)' } }),
    201,
    'creating a subscription key',
  );
  const result: DevMerchantResult = {
    account: index,
    wallet: account.address.toLowerCase(),
    privateKey: bytesToHex(account.getHdKey().privateKey!),
    split: { address: splitAddress, recipients: savedRecipients, alreadySaved },
    subscriptionId: str(created, 'id', 'creating a subscription key'),
    primaryKey: str(created, 'primaryKey', 'creating a subscription key'),
    secondaryKey: str(created, 'secondaryKey', 'creating a subscription key'),
  };
  log(`Subscription ${result.subscriptionId} created. Its primary key follows; send it as the Ocp-Apim-Subscription-Key header.`);
  log(`To see this merchant in the admin app (${base}/admin/), import test account ${index}'s key into a browser wallet: ${result.privateKey}`);
  return result;
}

/** What to pay and where to read the outcome. */
interface Payable {
  receiptId: string;
  status: string;
  payTo: string | null;
  due: bigint;
  token: Address;
  chainId: number;
  /** Reads the receipt's status and transaction again. */
  read(): Promise<ReceiptState>;
}

type ReceiptState = { status: string; exception: string | null; transactionHash: string | null };

/** A payment URL (`…/pay/<id>?t=…`), read through the payment page's API: no key needed. */
function payUrlParts(target: string): { id: string; token: string } | null {
  if (!URL.canParse(target)) return null;
  const u = new URL(target);
  const m = /\/pay\/([^/]+)$/.exec(u.pathname);
  const token = u.searchParams.get('t');
  return m === null || token === null ? null : { id: decodeURIComponent(m[1]!), token };
}

async function payableFromUrl(base: string, id: string, token: string): Promise<Payable> {
  const url = `/api/pay/${encodeURIComponent(id)}?t=${encodeURIComponent(token)}`;
  const read = async () => expect(await call(base, 'GET', url), 200, `reading receipt ${id}`);
  const view = await read();
  const payment = view.payment;
  if (typeof payment !== 'object' || payment === null) throw new DevCommandError('the server runs without a chain: nothing to pay on');
  const p = payment as Json;
  return {
    receiptId: id,
    status: str(view, 'status', 'the receipt'),
    payTo: typeof p.payTo === 'string' ? p.payTo : null,
    due: baseUnits(p, 'due', 'the payment'),
    token: addressIn(p, 'tokenAddress', "the payment's token"),
    chainId: typeof p.chainId === 'number' ? p.chainId : 0,
    read: async () => stateOf(await read()),
  };
}

/** A receipt id, read with the merchant's subscription key; the token is the dev chain's test USDC. */
async function payableFromId(base: string, id: string, key: string): Promise<Payable> {
  const headers = { 'ocp-apim-subscription-key': key };
  const receipt = expect(await call(base, 'GET', `/api/receipts/${encodeURIComponent(id)}`, { headers }), 200, `reading receipt ${id}`);
  const chain = expect(await call(base, 'GET', '/dev/chain'), 200, 'reading the dev chain (GET /dev/chain; is the server running with CHAIN=dev?)');
  const statusUrl = `/api/receipts/status?receiptId=${encodeURIComponent(id)}`;
  return {
    receiptId: id,
    status: str(receipt, 'status', 'the receipt'),
    payTo: typeof receipt.payTo === 'string' ? receipt.payTo : null,
    due: baseUnits(receipt, 'amountDue', 'the receipt'),
    token: addressIn(chain, 'usdcAddress', "the dev chain's test USDC"),
    chainId: typeof chain.chainId === 'number' ? chain.chainId : 0,
    read: async () => stateOf(expect(await call(base, 'GET', statusUrl, { headers }), 200, `reading receipt ${id}`)),
  };
}

/** An address the server named in `field`, or an error saying what it was instead. */
function addressIn(v: Json, field: string, what: string): Address {
  const value = str(v, field, what);
  if (!isAddress(value)) throw new DevCommandError(`${what} is not an address ("${String(value)}")`);
  return value as Address;
}

/** Where a receipt stands, from an answer carrying its status: the payment page's or the status route's. */
function stateOf(v: Json): ReceiptState {
  return {
    status: str(v, 'status', 'the receipt'),
    exception: typeof v.exception === 'string' ? v.exception : null,
    transactionHash: typeof v.transactionHash === 'string' ? v.transactionHash : null,
  };
}

/** The receipt's state now; the previous one when the server asks to slow down (its read routes are rate-limited). */
async function readAgain(payable: Payable, previous: ReceiptState): Promise<ReceiptState> {
  try {
    return await payable.read();
  } catch (err) {
    if (err instanceof RateLimited) return previous;
    throw err;
  }
}

/** Statuses after which waiting longer changes nothing. */
const SETTLED = new Set(['completed', 'failed', 'tx_mismatch', 'refunded']);

export interface DevPayResult {
  receiptId: string;
  status: string;
  exception: string | null;
  /** The buyer's transfer; null when nothing was due. */
  transferHash: Hex | null;
  /** The transaction the receipt records (its sweep into the split) once settled. */
  transactionHash: string | null;
  amount: string;
  from: string;
  payTo: string | null;
}

/** How long dev pay waits for a new receipt's payment address. */
const ADDRESS_WAIT_MS = 30_000;

/**
 * The receipt, once it has a payment address: the chain worker stores a new receipt's address in
 * its next pass (a moment after the receipt or its merchant's split was saved), so a receipt read
 * at once may not have one yet. Read again every POLL_MS, up to ADDRESS_WAIT_MS.
 */
async function addressed(read: () => Promise<Payable>): Promise<Payable> {
  const deadline = Date.now() + ADDRESS_WAIT_MS;
  for (;;) {
    const payable = await read();
    if (payable.payTo !== null || Date.now() >= deadline) return payable;
    await new Promise((resolve) => setTimeout(resolve, POLL_MS));
  }
}

/**
 * Pays what the receipt still needs, in its token, from a test account, through {base}/dev/rpc,
 * then waits until the chain worker has settled it (completed, or why not).
 */
export async function devPay(p: {
  base: string;
  target: string;
  key: string | undefined;
  index: number;
  account: HDAccount;
  log: (line: string) => void;
}): Promise<DevPayResult> {
  const { base, account, log } = p;
  const fromUrl = payUrlParts(p.target);
  const key = p.key;
  let payable: Payable;
  if (fromUrl !== null) payable = await addressed(() => payableFromUrl(base, fromUrl.id, fromUrl.token));
  else if (key !== undefined) payable = await addressed(() => payableFromId(base, p.target, key));
  else throw new DevCommandError(`dev pay needs the receipt's payment URL (…/pay/<id>?t=…), or its id with --key <subscription key> (got "${p.target}")`);
  const { receiptId } = payable;
  if (payable.chainId !== DEV_CHAIN_ID) {
    throw new DevCommandError(`dev pay pays on the dev chain (chain id ${DEV_CHAIN_ID}); receipt ${receiptId} is paid on chain ${payable.chainId}`);
  }
  if (payable.payTo === null) {
    throw new DevCommandError(`receipt ${receiptId} has no payment address yet: its merchant has no split (npm run cli -- dev merchant saves one)`);
  }
  const payTo = payable.payTo as Address;
  const rpc = `${base}/dev/rpc`;
  const chain = defineChain({ id: DEV_CHAIN_ID, name: 'Splitline dev chain', nativeCurrency: { decimals: 18, name: 'Ether', symbol: 'ETH' }, rpcUrls: { default: { http: [rpc] } } });
  const publicClient = devPublicClient(chain, http(rpc));
  const [decimals, symbol] = await Promise.all([
    publicClient.readContract({ address: payable.token, abi: erc20Abi, functionName: 'decimals' }),
    publicClient.readContract({ address: payable.token, abi: erc20Abi, functionName: 'symbol' }),
  ]);
  const amount = formatUnits(payable.due, decimals);
  let transferHash: Hex | null = null;
  if (payable.due === 0n) {
    log(`Receipt ${receiptId} needs nothing more (status ${payable.status}).`);
  } else {
    if (SETTLED.has(payable.status)) throw new DevCommandError(`receipt ${receiptId} is ${payable.status}: nothing sent`);
    log(`Paying receipt ${receiptId}: ${amount} ${symbol} from test account ${p.index} (${account.address}) to its payment address ${payTo}...`);
    const wallet = createWalletClient({ account, chain, transport: http(rpc) });
    // A wallet's margin over the estimate: paying the rest of an underpaid receipt races the
    // worker's sweep of the first transfer, and a transfer into an emptied address costs more gas
    // than the estimate made while it held tokens.
    transferHash = await wallet.writeContract({ address: payable.token, abi: erc20Abi, functionName: 'transfer', args: [payTo, payable.due], gas: 100_000n });
    const mined = await publicClient.waitForTransactionReceipt({ hash: transferHash });
    if (mined.status !== 'success') throw new DevCommandError(`the transfer ${transferHash} reverted`);
    log(`Transfer ${transferHash} mined in block ${mined.blockNumber}; waiting for the chain worker to settle the receipt...`);
  }
  const deadline = Date.now() + SETTLE_TIMEOUT_MS;
  let last = await readAgain(payable, { status: payable.status, exception: null, transactionHash: null });
  while (!SETTLED.has(last.status)) {
    if (Date.now() > deadline) {
      const exception = last.exception === null ? '' : ` (${last.exception})`;
      throw new DevCommandError(
        `receipt ${receiptId} is still ${last.status}${exception} ${SETTLE_TIMEOUT_MS / 1000} s after the transfer: is the server's chain worker running? (its log says)`,
      );
    }
    await new Promise((resolve) => setTimeout(resolve, POLL_MS));
    last = await readAgain(payable, last);
  }
  return {
    receiptId,
    status: last.status,
    exception: last.exception,
    transferHash,
    transactionHash: last.transactionHash,
    amount: `${amount} ${symbol}`,
    from: account.address.toLowerCase(),
    payTo: payable.payTo,
  };
}
