/**
 * The injected EIP-1193 wallet (window.ethereum), shared by the admin app and the payment page:
 * connecting, moving the wallet to the service's chain (adding the chain when the wallet does not
 * know it), summarising the wallet's errors in one sentence, and signing in.
 */
import { auth, type Session } from './api.ts';
import { DevChain as DevChainSchema, type DevChain } from '../../../src/contract/dev-chain.ts';
import { shortMessage, TX_HASH } from './format.ts';
import { call, messageOf } from './http.ts';

export { shortMessage };

export interface Eip1193Provider {
  request(args: { method: string; params?: unknown[] }): Promise<unknown>;
}

/**
 * A wallet failure as a person reads it: `message` is one sentence; `detail` is what the wallet
 * said in full (often kilobytes: viem dumps the whole request), shown folded, or null.
 */
export class WalletError extends Error {
  override name = 'WalletError';
  constructor(
    message: string,
    readonly detail: string | null = null,
  ) {
    super(message);
  }
}

/** The injected provider, looked up at the moment it is needed: some wallets inject late. */
export function injectedWallet(): Eip1193Provider | null {
  const candidate = (window as unknown as { ethereum?: unknown }).ethereum;
  if (typeof candidate !== 'object' || candidate === null) return null;
  const request = (candidate as { request?: unknown }).request;
  return typeof request === 'function' ? (candidate as Eip1193Provider) : null;
}

// ---- chains ----------------------------------------------------------------------------------

export const DEV_CHAIN_ID = 31337;

export function chainName(chainId: number): string {
  if (chainId === 8453) return 'Base';
  if (chainId === 84532) return 'Base Sepolia';
  if (chainId === DEV_CHAIN_ID) return 'Splitline dev chain';
  return `chain ${chainId}`;
}

export interface ChainParams {
  chainName: string;
  rpcUrls: string[];
  blockExplorerUrls?: string[];
}

/** What wallet_addEthereumChain needs for the public chains Splitline runs on. */
const KNOWN_CHAINS: Record<number, ChainParams> = {
  8453: { chainName: 'Base', rpcUrls: ['https://mainnet.base.org'], blockExplorerUrls: ['https://basescan.org'] },
  84532: { chainName: 'Base Sepolia', rpcUrls: ['https://sepolia.base.org'], blockExplorerUrls: ['https://sepolia.basescan.org'] },
};

/** The dev chain and its first funded test account, to import into a wallet (test money only). */
export type DevChainInfo = DevChain;

/** What GET /dev/chain publishes (CHAIN=dev only; elsewhere the call fails with 404). */
export function devChain(): Promise<DevChainInfo> {
  return call('GET', '/dev/chain', DevChainSchema, { anonymous: true });
}

/**
 * The parameters to add `chainId` to a wallet: the public chains are known; the dev chain's RPC
 * URL is this service's own {SITE_URL}/dev/rpc, read from /dev/chain.
 */
export async function describeChain(chainId: number): Promise<ChainParams | null> {
  const known = KNOWN_CHAINS[chainId];
  if (known !== undefined) return known;
  if (chainId !== DEV_CHAIN_ID) return null;
  const dev = await devChain().catch((err: unknown) => {
    throw new WalletError(`The dev chain's RPC address could not be fetched: ${messageOf(err)}`);
  });
  return { chainName: chainName(chainId), rpcUrls: [dev.rpcUrl] };
}

// ---- errors ----------------------------------------------------------------------------------

/** The most of a wallet's error kept for the folded details; the rest goes to the console only. */
const MAX_DETAIL = 4000;

function fields(err: unknown): { code: unknown; message: string; nested: string } {
  const e = (typeof err === 'object' && err !== null ? err : {}) as {
    code?: unknown;
    message?: unknown;
    data?: { originalError?: { code?: unknown; message?: unknown }; message?: unknown };
    cause?: { message?: unknown };
  };
  // Some mobile wallets wrap the real error (4902 "unknown chain" among them) inside a generic -32603.
  const code = e.data?.originalError?.code ?? e.code;
  const message = typeof e.message === 'string' ? e.message : typeof err === 'string' ? err : String(err);
  const inner = [e.data?.originalError?.message, e.data?.message, e.cause?.message].filter((m): m is string => typeof m === 'string');
  return { code, message, nested: inner.join('\n') };
}

export function errorCode(err: unknown): unknown {
  return fields(err).code;
}

/** One sentence for what the wallet said, by its EIP-1193 code or by the words wallets use. */
function summarise(code: unknown, text: string, action: string): string {
  if (code === 4001 || code === 'ACTION_REJECTED' || /user (rejected|denied|cancell?ed)|rejected by (the )?user|request rejected/i.test(text)) {
    return `You declined the ${action} in your wallet.`;
  }
  if (/insufficient funds/i.test(text)) {
    return `The account in your wallet has too little ETH to pay the network fee for the ${action}; add ETH to it and try again.`;
  }
  if (/transfer amount exceeds balance|exceeds balance/i.test(text)) {
    return `The account in your wallet holds too little of the token for the ${action}.`;
  }
  if (/must match the active chain ?id|wrong (network|chain)/i.test(text) || code === 4901) {
    return `Your wallet is on another network than the one this service uses; switch networks in the wallet and try again.`;
  }
  if (code === 4902 || /unrecognized chain|unknown chain/i.test(text)) return `Your wallet does not know this network yet; add it in the wallet and try again.`;
  if (code === -32002 || /already pending|request already/i.test(text)) return `Your wallet already has a request waiting; open the wallet and answer it.`;
  if (code === 4100) return `Your wallet has not allowed this site to use that account; connect it again.`;
  if (code === 4200 || /not supported|unsupported method|does not exist\/is not available/i.test(text)) {
    return `Your wallet does not support the ${action}.`;
  }
  if (code === 4900) return 'Your wallet is not connected to any network.';
  if (/nonce too low/i.test(text)) return `Your wallet used an old transaction number for the ${action}; reset the account's activity in the wallet and try again.`;
  const said = shortMessage(text);
  if (said === '') return `The wallet could not complete the ${action}.`;
  return `The wallet could not complete the ${action}: ${said}${/[.…!?]$/.test(said) ? '' : '.'}`;
}

/**
 * A wallet failure as one sentence, with the wallet's full words kept for a folded "details".
 * `action`: what was asked, as in "You declined the payment".
 */
export function walletError(err: unknown, action: string): WalletError {
  if (err instanceof WalletError) return err;
  const { code, message, nested } = fields(err);
  const text = nested === '' ? message : `${message}\n${nested}`;
  const summary = summarise(code, text, action);
  // The whole error goes to the console for whoever debugs; the page keeps a bounded copy.
  console.warn(`wallet ${action} failed:`, err);
  const full = text.trim();
  // A "no" needs no details; other summaries keep the wallet's words for whoever helps.
  const declined = summary.startsWith('You declined');
  const detail = declined || full === '' || summary.includes(full) ? null : full.length > MAX_DETAIL ? `${full.slice(0, MAX_DETAIL)}… (${full.length - MAX_DETAIL} more characters in the browser console)` : full;
  return new WalletError(summary, detail);
}

/** The summary and the folded detail of any error: a WalletError's own, or the message of another. */
export function errorParts(err: unknown): { message: string; detail: string | null } {
  if (err instanceof WalletError) return { message: err.message, detail: err.detail };
  return { message: messageOf(err), detail: null };
}

// ---- requests --------------------------------------------------------------------------------

export async function ask<T>(wallet: Eip1193Provider, action: string, method: string, params?: unknown[]): Promise<T> {
  try {
    return (await wallet.request(params === undefined ? { method } : { method, params })) as T;
  } catch (err) {
    throw walletError(err, action);
  }
}

/**
 * Sends one transaction from the connected wallet (eth_sendTransaction, no ETH attached) and
 * returns its hash once the wallet has broadcast it: a payment, a refund, a payout, a sweep.
 * `action` names it in errors.
 */
export async function sendTransaction(wallet: Eip1193Provider, from: string, tx: { to: string; data: string }, action: string): Promise<`0x${string}`> {
  const hash = await ask<unknown>(wallet, action, 'eth_sendTransaction', [{ from, to: tx.to, data: tx.data, value: '0x0' }]);
  if (typeof hash !== 'string' || !TX_HASH.test(hash)) throw new WalletError('The wallet returned no transaction hash.');
  return hash as `0x${string}`;
}

/**
 * Waits until the wallet's node has the transaction in a block (the server reads only mined
 * state). A wallet that cannot answer is not waited for: the server's answer then tells.
 */
export async function waitForMined(wallet: Eip1193Provider, hash: string, timeoutMs = 180_000, pollMs = 1500): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (Date.now() < deadline) {
    let receipt: unknown;
    try {
      receipt = await wallet.request({ method: 'eth_getTransactionReceipt', params: [hash] });
    } catch (err) {
      console.warn('the wallet cannot report the transaction; the server checks it instead', err);
      return;
    }
    if (typeof receipt === 'object' && receipt !== null) return;
    await new Promise((resolve) => setTimeout(resolve, pollMs));
  }
}

export async function connect(wallet: Eip1193Provider): Promise<`0x${string}`> {
  const accounts = await ask<unknown>(wallet, 'connection request', 'eth_requestAccounts');
  const address: unknown = Array.isArray(accounts) ? accounts[0] : undefined;
  if (typeof address !== 'string' || !/^0x[0-9a-fA-F]{40}$/.test(address)) throw new WalletError('The wallet shared no account.');
  return address as `0x${string}`;
}

export interface SwitchOptions {
  /** Looks up the chain's parameters when the wallet has never heard of it; describeChain by default. */
  describe?(chainId: number): Promise<ChainParams | null>;
}

async function activeChain(wallet: Eip1193Provider): Promise<number | null> {
  const current = await ask<unknown>(wallet, 'network check', 'eth_chainId');
  return typeof current === 'string' ? Number.parseInt(current, 16) : typeof current === 'number' ? current : null;
}

/**
 * Moves the wallet to `chainId` (wallet_switchEthereumChain); when the wallet does not know the
 * chain (4902), adds it (wallet_addEthereumChain) and switches if adding did not.
 */
export async function ensureChain(wallet: Eip1193Provider, chainId: number, opts: SwitchOptions = {}): Promise<void> {
  if ((await activeChain(wallet)) === chainId) return;
  const hexId = `0x${chainId.toString(16)}`;
  try {
    await wallet.request({ method: 'wallet_switchEthereumChain', params: [{ chainId: hexId }] });
    return;
  } catch (err) {
    if (errorCode(err) !== 4902 && !/unrecognized chain/i.test(fields(err).message)) throw walletError(err, `switch to ${chainName(chainId)}`);
  }
  const params = await (opts.describe ?? describeChain)(chainId);
  if (params === null) throw new WalletError(`Your wallet does not know ${chainName(chainId)}; add it in the wallet, then try again.`);
  await ask(wallet, `request to add ${chainName(chainId)}`, 'wallet_addEthereumChain', [
    { chainId: hexId, nativeCurrency: { name: 'Ether', symbol: 'ETH', decimals: 18 }, ...params },
  ]);
  // Most wallets switch as they add; some only add.
  if ((await activeChain(wallet)) === chainId) return;
  await ask(wallet, `switch to ${chainName(chainId)}`, 'wallet_switchEthereumChain', [{ chainId: hexId }]);
}

// ---- sign-in ---------------------------------------------------------------------------------

export interface SignInProgress {
  (step: 'connect' | 'switch' | 'sign', chainId?: number): void;
}

/**
 * Connects, moves the wallet to the service's chain (a wallet signs EIP-712 data only for its
 * active chain), signs the server's challenge and opens a session.
 */
export async function signInWithWallet(onStep: SignInProgress = () => {}): Promise<Session> {
  const wallet = injectedWallet();
  if (wallet === null) throw new WalletError('No browser wallet was found.');
  onStep('connect');
  const address = await connect(wallet);
  const { nonce, typedData } = await auth.challenge(address);
  // The challenge is bound to its domain's chain, and a wallet signs EIP-712 data only for its active chain.
  const chainId = typedData.domain.chainId;
  onStep('switch', chainId);
  await ensureChain(wallet, chainId);
  onStep('sign', chainId);
  const signature = await ask<unknown>(wallet, 'signature request', 'eth_signTypedData_v4', [address, JSON.stringify(typedData)]);
  if (typeof signature !== 'string') throw new WalletError('The wallet returned no signature.');
  return auth.login(address, nonce, signature);
}
