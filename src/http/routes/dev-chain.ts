/**
 * The dev chain's public face (CHAIN=dev only): JSON-RPC at POST /dev/rpc, proxied to the local
 * anvil node so a browser wallet or a script can use {SITE_URL}/dev/rpc, and GET /dev/chain with
 * what a newcomer needs to connect.
 *
 * /dev/rpc forwards the standard eth_, net_ and web3_ methods, plus evm_mine, anvil_mine and
 * anvil_setBalance (test ETH for your own wallet). Other node controls (anvil_reset, evm_revert,
 * anvil_setCode...) are refused: they would rewrite the chain under the service's feet.
 */
import { Type } from '@sinclair/typebox';
import type { Deps } from '../../deps.ts';
import { DEV_MNEMONIC } from '../../chain/dev-accounts.ts';
import type { App } from './index.ts';

export const DEV_RPC_BODY_LIMIT = 1024 * 1024;
const MAX_BATCH = 100;
const ALLOWED_PREFIXES = ['eth_', 'net_', 'web3_'];
const ALLOWED_METHODS = new Set(['evm_mine', 'anvil_mine', 'anvil_setBalance']);
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

export function isAllowedDevRpcMethod(method: string): boolean {
  return ALLOWED_METHODS.has(method) || ALLOWED_PREFIXES.some((p) => method.startsWith(p));
}

export function devChainRoutes(app: App, deps: Deps): void {
  const chain = deps.chain;
  if (deps.config.chain !== 'dev' || chain?.dev === undefined) return;
  const dev = chain.dev;
  const publicRpcUrl = `${deps.config.siteUrl}/dev/rpc`;

  const forward = async (body: unknown): Promise<unknown> => {
    const res = await fetch(chain.rpcUrl, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify(body),
      signal: AbortSignal.timeout(UPSTREAM_TIMEOUT_MS),
    });
    return res.json() as Promise<unknown>;
  };

  app.options('/dev/rpc', { schema: { hide: true } }, async (_request, reply) => {
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
      schema: {
        tags: ['dev'],
        summary: 'JSON-RPC of the dev chain (CHAIN=dev only)',
        description:
          'A JSON-RPC 2.0 request or a batch (at most 100) forwarded to the embedded anvil node. Standard eth_, net_ ' +
          'and web3_ methods, evm_mine, anvil_mine and anvil_setBalance are forwarded; other methods answer error -32601.',
        body: Type.Unknown(),
        response: {
          200: Type.Unknown({ description: 'The JSON-RPC response or batch of responses' }),
          400: Type.Unknown({ description: 'A JSON-RPC error: the request is not JSON-RPC 2.0' }),
          503: Type.Unknown({ description: 'A JSON-RPC error: the dev chain is not answering' }),
        },
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
        else if (!isAllowedDevRpcMethod(item.method)) {
          answers.push(rpcError(item.id ?? null, -32601, `${item.method} is not available through /dev/rpc`));
        } else forwarded.push(item);
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
        answers.unshift(...(Array.isArray(upstream) ? upstream : [upstream]));
      }
      return answers;
    },
  );

  app.get(
    '/dev/chain',
    {
      schema: {
        tags: ['dev'],
        summary: 'How to connect to the dev chain (CHAIN=dev only)',
        response: {
          200: Type.Object({
            chainId: Type.Integer(),
            rpcUrl: Type.String({ description: 'JSON-RPC URL for wallets and scripts: {SITE_URL}/dev/rpc' }),
            usdcAddress: Type.String({ description: 'The test USDC (6 decimals)' }),
            accounts: Type.Array(Type.String(), { description: 'The ten funded accounts of the test mnemonic; the last deploys splits' }),
            mnemonic: Type.String({ description: 'The standard test mnemonic (public: test money only)' }),
          }),
        },
      },
    },
    async () => ({
      chainId: chain.chainId,
      rpcUrl: publicRpcUrl,
      usdcAddress: chain.usdc.address,
      accounts: dev.accounts,
      mnemonic: DEV_MNEMONIC,
    }),
  );
}
