/** The embedded dev chain (CHAIN=dev only): GET /dev/chain and POST /dev/rpc. */
import { Type, type Static } from '@sinclair/typebox';

export const DevChain = Type.Object({
  chainId: Type.Integer({ examples: [31337] }),
  rpcUrl: Type.String({ description: 'JSON-RPC URL for wallets and scripts: {SITE_URL}/dev/rpc' }),
  usdcAddress: Type.String({ description: 'The test USDC (6 decimals)' }),
  accounts: Type.Array(Type.String(), {
    description: 'The ten funded accounts of the test mnemonic; the last deploys splits',
    examples: [['0xf39fd6e51aad88f6f4ce6ab8827279cfffb92266']],
  }),
  mnemonic: Type.String({
    description: 'The standard test mnemonic (public: test money only)',
    examples: ['test test test test test test test test test test test junk'],
  }),
  testAccount: Type.Union(
    [Type.Object({ address: Type.String(), privateKey: Type.String({ description: '0x + 64 hex; public, test money only' }) }), Type.Null()],
    { description: 'The first account of the mnemonic, to import into a browser wallet (test money only)' },
  ),
}, { description: 'The dev chain and its funded test accounts' });
export type DevChain = Static<typeof DevChain>;

export const RpcRequest = Type.Unknown({
  description: 'A JSON-RPC 2.0 request, or an array of at most 100',
  examples: [{ jsonrpc: '2.0', id: 1, method: 'eth_blockNumber', params: [] }],
});

export const RpcAnswers = {
  200: Type.Unknown({ description: 'The JSON-RPC response or batch of responses', examples: [{ jsonrpc: '2.0', id: 1, result: '0x2a' }] }),
  400: Type.Unknown({
    description:
      'A JSON-RPC error: the request is not JSON-RPC 2.0; or {error, message} when the HTTP request is refused before it is read (malformed JSON, an unknown query parameter)',
    examples: [{ jsonrpc: '2.0', id: null, error: { code: -32600, message: 'Invalid JSON-RPC 2.0 request' } }],
  }),
  503: Type.Unknown({
    description: 'A JSON-RPC error: the dev chain is not answering',
    examples: [{ jsonrpc: '2.0', id: null, error: { code: -32603, message: 'The dev chain is not answering (it may be restarting); retry shortly' } }],
  }),
};
