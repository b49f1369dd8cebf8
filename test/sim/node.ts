/**
 * The simulation's node: anvil with Base's chain id (8453) on loopback, started empty with the
 * dev mnemonic's accounts (the first ten as on the dev chain, ten more for the simulation's own
 * traffic) and Base-like block gas. It mines nothing by itself until told (`--no-mining`): the
 * set-up deploys with automine, history is mined block by block with its timestamps, and then
 * blocks come every `blockTimeSeconds` as on Base.
 *
 * `rpc` talks to the node's own port: what the simulation does (traffic, set-up, fee spikes, the
 * tests' own reads) never goes through the provider proxy and never counts against its limits.
 */
import { anvilBinary, spawnAnvil, type RunningAnvil } from '../../src/chain/dev-chain.ts';
import { DEV_MNEMONIC } from '../../src/chain/dev-accounts.ts';

export const SIM_CHAIN_ID = 8453;
/** Accounts the node funds: dev accounts 0-9 as on the dev chain, 10-19 for the simulation. */
export const SIM_ACCOUNTS = 20;
/** Base's block gas limit is far above this; it leaves room for a 50,000-log flood in a few blocks. */
export const SIM_BLOCK_GAS_LIMIT = 150_000_000n;

export class RpcError extends Error {
  constructor(
    readonly method: string,
    readonly code: number,
    message: string,
  ) {
    super(`${method}: ${message} (${code})`);
    this.name = 'RpcError';
  }
}

export interface SimNode {
  readonly url: string;
  readonly pid: number;
  rpc<T = unknown>(method: string, params?: unknown[]): Promise<T>;
  /** The newest block number. */
  head(): Promise<bigint>;
  stop(): Promise<void>;
}

let requestId = 0;

/** One JSON-RPC call over HTTP; a JSON-RPC error becomes an RpcError. */
export async function rpcCall<T>(url: string, method: string, params: unknown[] = []): Promise<T> {
  const res = await fetch(url, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ jsonrpc: '2.0', id: ++requestId, method, params }),
  });
  const body = (await res.json()) as { result?: T; error?: { code: number; message: string } };
  if (body.error !== undefined) throw new RpcError(method, body.error.code, body.error.message);
  return body.result as T;
}

export interface SimNodeOptions {
  /** The genesis block's timestamp (seconds); history mined afterwards counts on from it. */
  genesisTimestamp?: number;
  startTimeoutMs?: number;
}

export async function startSimNode(opts: SimNodeOptions = {}): Promise<SimNode> {
  const args = [
    '--host', '127.0.0.1',
    '--port', '0',
    '--chain-id', String(SIM_CHAIN_ID),
    '--mnemonic', DEV_MNEMONIC,
    '--accounts', String(SIM_ACCOUNTS),
    '--gas-limit', String(SIM_BLOCK_GAS_LIMIT),
    '--no-mining',
  ];
  if (opts.genesisTimestamp !== undefined) args.push('--timestamp', String(opts.genesisTimestamp));
  const running: RunningAnvil = await spawnAnvil(anvilBinary(), args, opts.startTimeoutMs ?? 30_000);
  const url = `http://127.0.0.1:${running.port}`;
  const kill = () => {
    try {
      process.kill(running.anvilPid, 'SIGKILL');
    } catch {
      // already gone
    }
  };
  process.once('exit', kill);
  let stopped: Promise<void> | undefined;
  return {
    url,
    pid: running.anvilPid,
    rpc: (method, params) => rpcCall(url, method, params),
    head: async () => BigInt(await rpcCall<string>(url, 'eth_blockNumber')),
    stop() {
      stopped ??= (async () => {
        process.off('exit', kill);
        kill();
        await running.exited;
        running.child.stdin?.destroy();
      })();
      return stopped;
    },
  };
}
