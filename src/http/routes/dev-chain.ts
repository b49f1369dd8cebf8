/**
 * The dev chain's public face (CHAIN=dev only): JSON-RPC at POST /dev/rpc, proxied to the local
 * anvil node so a browser wallet or a script can use {SITE_URL}/dev/rpc, and GET /dev/chain with
 * what a newcomer needs to connect.
 *
 * /dev/rpc passes an explicit list of methods: reads, eth_sendRawTransaction (a transaction the
 * sender signed), and three bounded test conveniences (evm_mine, one block; anvil_mine, at most
 * MAX_MINED_BLOCKS blocks; neither moving the clock; anvil_setBalance, test ETH for any account
 * but the service's own, at most MAX_TEST_ETH). Everything else is refused with a JSON-RPC error
 * naming the method: what sends as an account without its signature (eth_sendTransaction,
 * eth_sendUnsignedTransaction, eth_sign*, personal_*, anvil_impersonateAccount) would let anyone
 * spend any account's money, and the other node controls (anvil_reset, evm_revert, anvil_setCode...)
 * would rewrite the chain under the service's feet.
 *
 * The service's own account (the tenth account of the public mnemonic, or SPLIT_DEPLOYER_KEY) pays
 * its deployments and sweeps, and its key is public on the dev chain: eth_sendRawTransaction refuses
 * a transaction that account signed (checkDevRawTransaction), so nobody can send its ETH away or
 * spend its nonces.
 */
import { DevChain, RpcAnswers, RpcRequest } from '../../contract/dev-chain.ts';
import { recoverTransactionAddress, toHex, type TransactionSerialized } from 'viem';
import type { Deps } from '../../deps.ts';
import { devAccount, DEV_MNEMONIC } from '../../chain/dev-accounts.ts';
import type { App } from '../app-type.ts';

export const DEV_RPC_BODY_LIMIT = 1024 * 1024;
const MAX_BATCH = 100;
/** The most blocks one anvil_mine call may mine. */
export const MAX_MINED_BLOCKS = 100;
/** The most test ETH anvil_setBalance may give an account, in wei (10,000 ETH). */
export const MAX_TEST_ETH = 10_000n * 10n ** 18n;

/** Methods that read the chain or the node, or send a transaction its sender signed. */
export const DEV_RPC_METHODS: ReadonlySet<string> = new Set([
  'web3_clientVersion',
  'web3_sha3',
  'net_version',
  'net_listening',
  'net_peerCount',
  'eth_chainId',
  'eth_protocolVersion',
  'eth_syncing',
  'eth_mining',
  'eth_hashrate',
  'eth_accounts',
  'eth_blockNumber',
  'eth_gasPrice',
  'eth_maxPriorityFeePerGas',
  'eth_blobBaseFee',
  'eth_feeHistory',
  'eth_getBalance',
  'eth_getCode',
  'eth_getStorageAt',
  'eth_getTransactionCount',
  'eth_getProof',
  'eth_call',
  'eth_estimateGas',
  'eth_createAccessList',
  'eth_getBlockByNumber',
  'eth_getBlockByHash',
  'eth_getBlockReceipts',
  'eth_getBlockTransactionCountByNumber',
  'eth_getBlockTransactionCountByHash',
  'eth_getUncleCountByBlockNumber',
  'eth_getUncleCountByBlockHash',
  'eth_getUncleByBlockNumberAndIndex',
  'eth_getUncleByBlockHashAndIndex',
  'eth_getTransactionByHash',
  'eth_getTransactionByBlockNumberAndIndex',
  'eth_getTransactionByBlockHashAndIndex',
  'eth_getTransactionReceipt',
  'eth_getLogs',
  'eth_newFilter',
  'eth_newBlockFilter',
  'eth_newPendingTransactionFilter',
  'eth_getFilterChanges',
  'eth_getFilterLogs',
  'eth_uninstallFilter',
  'eth_sendRawTransaction',
]);

/** The bounded test conveniences, checked by their parameters (checkDevRpcCall). */
const BOUNDED_METHODS = new Set(['evm_mine', 'anvil_mine', 'anvil_setBalance']);

const UPSTREAM_TIMEOUT_MS = 30_000;

type RpcId = string | number | null;
interface RpcRequest {
  jsonrpc: '2.0';
  method: string;
  params?: unknown;
  id?: RpcId;
}
interface RpcError {
  jsonrpc: '2.0';
  id: RpcId;
  error: { code: number; message: string };
}

function rpcError(id: RpcId, code: number, message: string): RpcError {
  return { jsonrpc: '2.0', id, error: { code, message } };
}

function isRpcRequest(value: unknown): value is RpcRequest {
  if (typeof value !== 'object' || value === null || Array.isArray(value)) return false;
  const v = value as Record<string, unknown>;
  const idOk = v.id === undefined || v.id === null || typeof v.id === 'string' || typeof v.id === 'number';
  const paramsOk = v.params === undefined || typeof v.params === 'object';
  return v.jsonrpc === '2.0' && typeof v.method === 'string' && v.method.length <= 100 && idOk && paramsOk;
}

/** A whole number as JSON-RPC writes it (0x-hex quantity, decimal string or number); null otherwise. */
function quantity(value: unknown): bigint | null {
  if (typeof value === 'number') return Number.isSafeInteger(value) && value >= 0 ? BigInt(value) : null;
  if (typeof value !== 'string' || value.length > 80) return null;
  if (/^0x[0-9a-fA-F]+$/.test(value) || /^[0-9]+$/.test(value)) return BigInt(value);
  return null;
}

const paramList = (params: unknown): unknown[] | null => (params === undefined || params === null ? [] : Array.isArray(params) ? params : null);

/**
 * Why a call may not pass, as a JSON-RPC error (naming the method), or null when it may.
 * `serviceAccount`: the service's own dev account, whose ETH pays its deployments and sweeps.
 */
export function checkDevRpcCall(call: { method: string; params?: unknown }, serviceAccount?: string): { code: number; message: string } | null {
  const { method } = call;
  if (DEV_RPC_METHODS.has(method)) return null;
  if (!BOUNDED_METHODS.has(method)) {
    return { code: -32601, message: `${method} is not available through /dev/rpc: it passes reads, eth_sendRawTransaction and bounded test helpers only` };
  }
  const bad = (why: string) => ({ code: -32602, message: `${method} refused: ${why}` });
  const params = paramList(call.params);
  if (params === null) return bad('params must be an array');
  if (method === 'anvil_mine') {
    const blocks = params[0] === undefined || params[0] === null ? 1n : quantity(params[0]);
    if (blocks === null || blocks < 1n || blocks > BigInt(MAX_MINED_BLOCKS)) return bad(`mines 1 to ${MAX_MINED_BLOCKS} blocks at a time`);
    const interval = params[1] === undefined || params[1] === null ? 0n : quantity(params[1]);
    if (interval !== 0n || params.length > 2) return bad('the interval between blocks cannot be set (it would move the chain clock)');
    return null;
  }
  if (method === 'evm_mine') {
    // One block; its options (a timestamp, a block count) are refused: anvil_mine mines several.
    if (params.length === 0 || (params.length === 1 && params[0] === null)) return null;
    return bad('takes no parameters (a timestamp would move the chain clock; anvil_mine mines several blocks)');
  }
  // anvil_setBalance [address, wei]
  const [address, value] = params;
  if (params.length !== 2 || typeof address !== 'string' || !/^0x[0-9a-fA-F]{40}$/.test(address)) return bad('takes [address, wei]');
  if (serviceAccount !== undefined && address.toLowerCase() === serviceAccount.toLowerCase()) {
    return bad("the service's own account pays its deployments and sweeps; its balance is not for sale");
  }
  const wei = quantity(value);
  if (wei === null || wei > MAX_TEST_ETH) return bad(`gives at most ${MAX_TEST_ETH / 10n ** 18n} test ETH`);
  return null;
}

/**
 * Why an eth_sendRawTransaction may not pass, or null when it may: a transaction signed by the
 * service's own account is refused, whoever signed it. A transaction whose sender cannot be
 * recovered goes on to the node, which refuses it in its own words.
 */
export async function checkDevRawTransaction(call: { method: string; params?: unknown }, serviceAccount: string | undefined): Promise<{ code: number; message: string } | null> {
  if (call.method !== 'eth_sendRawTransaction' || serviceAccount === undefined) return null;
  const raw = paramList(call.params)?.[0];
  if (typeof raw !== 'string' || !/^0x[0-9a-fA-F]+$/.test(raw) || raw.length > 2 * DEV_RPC_BODY_LIMIT) return null;
  const sender = await recoverTransactionAddress({ serializedTransaction: raw as TransactionSerialized }).catch(() => null);
  if (sender === null || sender.toLowerCase() !== serviceAccount.toLowerCase()) return null;
  return {
    code: -32602,
    message: "eth_sendRawTransaction refused: the transaction is signed by the service's own account, which pays its deployments and sweeps; its key is public on the dev chain, its ETH and nonces are not",
  };
}

export function devChainRoutes(app: App, deps: Deps): void {
  const chain = deps.chain;
  if (deps.config.chain !== 'dev' || chain?.dev === undefined) return;
  const dev = chain.dev;
  const publicRpcUrl = `${deps.config.siteUrl}/dev/rpc`;
  const serviceAccount = chain.walletClient?.account.address;
  // The first test account, whose key every Ethereum tool knows: what a newcomer imports into a
  // browser wallet to sign in and pay on the dev chain (the admin app's sign-in page shows it).
  const first = devAccount(0);
  const firstKey = first.getHdKey().privateKey;
  const testAccount = firstKey === null ? null : { address: first.address, privateKey: toHex(firstKey) };

  const forward = async (body: unknown): Promise<unknown> => {
    const res = await fetch(chain.rpcUrl, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify(body),
      signal: AbortSignal.timeout(UPSTREAM_TIMEOUT_MS),
    });
    return res.json() as Promise<unknown>;
  };

  app.options('/dev/rpc', { config: { auth: 'open' }, schema: { hide: true } }, async (_request, reply) => {
    reply
      .header('access-control-allow-origin', '*')
      .header('access-control-allow-methods', 'POST, OPTIONS')
      .header('access-control-allow-headers', 'content-type')
      .header('access-control-max-age', '600')
      .status(204)
      .send();
  });

  app.post(
    '/dev/rpc',
    {
      bodyLimit: DEV_RPC_BODY_LIMIT,
      // JSON-RPC: a raw transaction sent twice is the same transaction; nothing to store.
      config: { auth: 'open', idempotency: 'none' },
      schema: {
        tags: ['dev'],
        summary: 'JSON-RPC of the dev chain (CHAIN=dev only)',
        description:
          'A JSON-RPC 2.0 request or a batch (at most 100) forwarded to the embedded anvil node. Read methods, ' +
          'eth_sendRawTransaction, evm_mine (one block), anvil_mine (at most 100 blocks; neither moves the clock) and anvil_setBalance (at ' +
          'most 10,000 test ETH, not the service account) pass; a raw transaction signed by the service account is refused (-32602); other methods answer error -32601 naming the method, ' +
          'out-of-bounds parameters -32602. Nothing sends as an account without its signature.',
        body: RpcRequest,
        response: RpcAnswers,
      },
    },
    async (request, reply) => {
      reply.header('access-control-allow-origin', '*');
      const body = request.body;
      const batch = Array.isArray(body);
      const items: unknown[] = batch ? body : [body];
      if (items.length === 0 || items.length > MAX_BATCH) {
        return reply.status(400).send(rpcError(null, -32600, `A batch holds 1 to ${MAX_BATCH} requests`));
      }
      const answers: unknown[] = [];
      const forwarded: RpcRequest[] = [];
      for (const item of items) {
        if (!isRpcRequest(item)) answers.push(rpcError(null, -32600, 'Invalid JSON-RPC 2.0 request'));
        else {
          const refused = checkDevRpcCall(item, serviceAccount) ?? (await checkDevRawTransaction(item, serviceAccount));
          if (refused !== null) answers.push(rpcError(item.id ?? null, refused.code, refused.message));
          else forwarded.push(item);
        }
      }
      if (!batch && answers.length > 0) {
        // A malformed request is the client's fault (400); a refused method is a normal JSON-RPC error.
        return reply.status(isRpcRequest(body) ? 200 : 400).send(answers[0]);
      }
      if (forwarded.length > 0) {
        let upstream: unknown;
        try {
          upstream = await forward(batch ? forwarded : forwarded[0]);
        } catch (err) {
          request.log.warn({ err }, 'dev chain did not answer a /dev/rpc request');
          return reply.status(503).send(rpcError(null, -32603, 'The dev chain is not answering (it may be restarting); retry shortly'));
        }
        if (!batch) return upstream;
        answers.unshift(...(Array.isArray(upstream) ? (upstream as unknown[]) : [upstream]));
      }
      return answers;
    },
  );

  app.get(
    '/dev/chain',
    {
      config: { auth: 'open' },
      schema: {
        tags: ['dev'],
        summary: 'How to connect to the dev chain (CHAIN=dev only)',
        response: { 200: DevChain },
      },
    },
    () => ({
      chainId: chain.chainId,
      rpcUrl: publicRpcUrl,
      usdcAddress: chain.usdc.address,
      accounts: dev.accounts,
      mnemonic: DEV_MNEMONIC,
      testAccount,
    }),
  );
}
