/**
 * Paying with an injected EIP-1193 wallet: connect, move the wallet to the receipt's chain
 * (adding the chain when the wallet does not know it), then an ERC-20 transfer of what is due to
 * the receipt's own payment address (never the merchant's split: a transfer is attributed to a
 * receipt only by the address it reaches).
 */
import { encodeFunctionData, erc20Abi, type Hex } from 'viem';
import { injectedWallet, WalletError } from '../lib/wallet.ts';
import type { Payment } from './api.ts';

export { injectedWallet, WalletError };

type Provider = NonNullable<ReturnType<typeof injectedWallet>>;

interface ChainParams {
  chainName: string;
  rpcUrls: string[];
  blockExplorerUrls?: string[];
}

/** What wallet_addEthereumChain needs for the chains Splitline runs on. */
const KNOWN_CHAINS: Record<number, ChainParams> = {
  8453: { chainName: 'Base', rpcUrls: ['https://mainnet.base.org'], blockExplorerUrls: ['https://basescan.org'] },
  84532: { chainName: 'Base Sepolia', rpcUrls: ['https://sepolia.base.org'], blockExplorerUrls: ['https://sepolia.basescan.org'] },
};

export const DEV_CHAIN_ID = 31337;

/** What a payment needs: the token, the chain, the receipt's payment address and the base units still due. */
export type Payable = Pick<Payment, 'chainId' | 'tokenAddress' | 'tokenSymbol' | 'tokenDecimals' | 'due'> & { payTo: string };

/** Wallet errors can be kilobytes (viem dumps the request); one short line is kept for the page. */
const MAX_DETAIL = 160;

export function shortMessage(text: string, max = MAX_DETAIL): string {
  const line = text.split(/\r?\n/).find((l) => l.trim() !== '') ?? text;
  const flat = line.replace(/\s+/g, ' ').trim();
  return flat.length > max ? `${flat.slice(0, max - 1)}…` : flat;
}

function errorCode(err: unknown): unknown {
  const e = (typeof err === 'object' && err !== null ? err : {}) as { code?: unknown; data?: { originalError?: { code?: unknown } } };
  // Some mobile wallets wrap "unknown chain" (4902) inside a generic -32603.
  return e.data?.originalError?.code ?? e.code;
}

function walletMessage(err: unknown, action: string): WalletError {
  if (err instanceof WalletError) return err;
  if (errorCode(err) === 4001) return new WalletError(`You declined the ${action} in your wallet.`);
  const e = (typeof err === 'object' && err !== null ? err : {}) as { message?: unknown };
  const detail = typeof e.message === 'string' ? e.message : String(err);
  // The whole message goes to the console for whoever debugs; the page shows one short line.
  console.warn(`wallet ${action} failed:`, err);
  return new WalletError(`The wallet could not complete the ${action}: ${shortMessage(detail)}`);
}

async function ask<T>(wallet: Provider, action: string, method: string, params?: unknown[]): Promise<T> {
  try {
    return (await wallet.request(params === undefined ? { method } : { method, params })) as T;
  } catch (err) {
    throw walletMessage(err, action);
  }
}

export async function connect(wallet: Provider): Promise<Hex> {
  const accounts = await ask<unknown>(wallet, 'connection request', 'eth_requestAccounts');
  const address = Array.isArray(accounts) ? accounts[0] : undefined;
  if (typeof address !== 'string' || !/^0x[0-9a-fA-F]{40}$/.test(address)) throw new WalletError('The wallet shared no account.');
  return address as Hex;
}

export interface SwitchOptions {
  /** Looks up the chain's parameters when the wallet has never heard of it (the dev chain's RPC URL). */
  describe(chainId: number): Promise<ChainParams | null>;
}

export async function ensureChain(wallet: Provider, chainId: number, opts: SwitchOptions): Promise<void> {
  const current = await ask<unknown>(wallet, 'network check', 'eth_chainId');
  if (typeof current === 'string' && Number.parseInt(current, 16) === chainId) return;
  const hexId = `0x${chainId.toString(16)}`;
  try {
    await wallet.request({ method: 'wallet_switchEthereumChain', params: [{ chainId: hexId }] });
    return;
  } catch (err) {
    if (errorCode(err) !== 4902) throw walletMessage(err, 'network switch');
  }
  const params = KNOWN_CHAINS[chainId] ?? (await opts.describe(chainId));
  if (params === null) throw new WalletError(`Your wallet does not know chain ${chainId}; add it in the wallet, then try again.`);
  await ask(wallet, 'request to add the network', 'wallet_addEthereumChain', [
    { chainId: hexId, nativeCurrency: { name: 'Ether', symbol: 'ETH', decimals: 18 }, ...params },
  ]);
  // Most wallets switch as they add; some only add.
  const after = await ask<unknown>(wallet, 'network check', 'eth_chainId');
  if (typeof after === 'string' && Number.parseInt(after, 16) === chainId) return;
  await ask(wallet, 'network switch', 'wallet_switchEthereumChain', [{ chainId: hexId }]);
}

export function transferData(payment: Payable): Hex {
  return encodeFunctionData({
    abi: erc20Abi,
    functionName: 'transfer',
    args: [payment.payTo as Hex, BigInt(payment.due)],
  });
}

/** Sends the transfer and returns its hash once the wallet has broadcast it. */
export async function sendTransfer(wallet: Provider, from: Hex, payment: Payable): Promise<Hex> {
  const hash = await ask<unknown>(wallet, 'payment', 'eth_sendTransaction', [
    { from, to: payment.tokenAddress, data: transferData(payment), value: '0x0' },
  ]);
  if (typeof hash !== 'string' || !/^0x[0-9a-fA-F]{64}$/.test(hash)) throw new WalletError('The wallet returned no transaction hash.');
  return hash as Hex;
}

/** EIP-681: a mobile wallet scanning this opens the same transfer of what is due, on the right chain. */
export function eip681(payment: Payable): string {
  return `ethereum:${payment.tokenAddress}@${payment.chainId}/transfer?address=${payment.payTo}&uint256=${payment.due}`;
}
