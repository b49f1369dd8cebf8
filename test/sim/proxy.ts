/**
 * A hosted RPC provider in front of the simulation's node: a node:http JSON-RPC proxy on loopback
 * (batch-aware) that behaves as Infura, Alchemy and their load balancers do, each behaviour
 * switchable per test (`configure`):
 *
 *   getLogsMaxResults  an eth_getLogs answer over this many logs is refused as Infura refuses it:
 *                      -32005 "query returned more than 10000 results. Try with this block range
 *                      [0x..,0x..]." (the suggested range holds at most that many)
 *   getLogsMaxBlocks   a range over this many blocks is refused with Alchemy's -32602 "Log response
 *                      size exceeded..." and its suggested range
 *   latencyMs          each answer waits a uniform [min, max] ms first
 *   rateLimitPerSecond calls (a batch's calls each count) beyond it within a second get HTTP 429 with
 *                      -32005 "rate limited", and nothing of the request is served
 *   lag                a share of requests is answered by a node `minBlocks`-`maxBlocks` behind the
 *                      head: eth_blockNumber says its head, eth_getLogs is cut at it silently,
 *                      blocks above it are null, state reads above it fail "header not found",
 *                      the pending nonce is its own (older) count, receipts of transactions mined
 *                      above it are null and such transactions look pending (`methods` and
 *                      `limit` narrow it to some methods' first answers, for a test of one read)
 *   serverErrorShare   a share of requests is answered HTTP 503
 *   refuse             the first `limit` requests holding a call of one of `methods` are answered
 *                      HTTP `status` (503 or 429) and nothing of them is served (a test's one send)
 *
 * Every answer comes from anvil; the proxy only refuses, delays and rewrites. It counts calls and
 * bytes served per method (`stats`), for the bench's compute units and MB per day. With SIM_TRACE
 * set to a file, it also appends each call it answers there as a JSON line (time, method, params,
 * the lag of the node that answered, the error), to find which reads a payment's units go to.
 */
import { appendFileSync } from 'node:fs';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { setTimeout as pause } from 'node:timers/promises';
import { createRng } from '../../bench/rng.ts';

/** SIM_TRACE: a file each answered call is appended to (the module comment). */
const TRACE = process.env.SIM_TRACE === '' ? undefined : process.env.SIM_TRACE;

export interface LagBehaviour {
  /** Share of requests (0-1) answered by a lagging node. */
  share: number;
  minBlocks: number;
  maxBlocks: number;
  /** Only these methods are answered by the lagging node (a test's one read); all when absent. */
  methods?: readonly string[];
  /** Only the first this many answers of those methods are the lagging node's (then the head's). */
  limit?: number;
}

export interface RefuseBehaviour {
  status: 429 | 503;
  methods: readonly string[];
  limit: number;
}

export interface ProviderBehaviour {
  latencyMs: readonly [number, number] | null;
  rateLimitPerSecond: number | null;
  lag: LagBehaviour | null;
  serverErrorShare: number;
  refuse: RefuseBehaviour | null;
  getLogsMaxResults: number | null;
  getLogsMaxBlocks: number | null;
}

/** What DESIGN.md's "A real chain" names: every behaviour of an ordinary hosted provider on. */
export const MAINNET_PROVIDER: ProviderBehaviour = {
  latencyMs: [50, 150],
  rateLimitPerSecond: 25,
  lag: { share: 0.3, minBlocks: 1, maxBlocks: 3 },
  serverErrorShare: 0.01,
  refuse: null,
  getLogsMaxResults: 10_000,
  getLogsMaxBlocks: 2_000,
};

/** A provider that only passes answers through. */
export const PLAIN_PROVIDER: ProviderBehaviour = {
  latencyMs: null,
  rateLimitPerSecond: null,
  lag: null,
  serverErrorShare: 0,
  refuse: null,
  getLogsMaxResults: null,
  getLogsMaxBlocks: null,
};

export interface MethodStats {
  /** Calls answered (a refusal is an answer too). */
  calls: number;
  /** Bytes of those answers, as JSON. */
  bytes: number;
  /** Calls answered with a JSON-RPC error of the provider's own (a limit). */
  refused: number;
}

export interface ProviderStats {
  /** HTTP requests received. */
  requests: number;
  /** Requests turned away with HTTP 429, and the calls they held. */
  rateLimited: { requests: number; calls: number };
  /** Requests answered HTTP 503. */
  serverErrors: number;
  /** Requests answered by `refuse` (counted in serverErrors or rateLimited too). */
  refusedOnPurpose: number;
  /** Requests answered by a lagging node. */
  lagged: number;
  /** Calls of those requests that the lagging node answered (`methods` and `limit` narrow them). */
  laggedAnswers: number;
  getLogsRefused: { results: number; blocks: number };
  methods: Record<string, MethodStats>;
  /** Bytes of every answer served, as JSON. */
  bytes: number;
  since: number;
}

interface Call {
  jsonrpc?: string;
  id?: unknown;
  method: string;
  params?: unknown[];
}

interface Answer {
  jsonrpc: '2.0';
  id: unknown;
  result?: unknown;
  error?: { code: number; message: string; data?: unknown };
}

/** What one request sees: the real head and the head of the node that answers it. */
interface View {
  head: bigint;
  seen: bigint;
  lag: number;
}

/** An answer's JSON-RPC error: the provider's own refusal, or one anvil gave. */
class ProviderRefusal extends Error {
  constructor(
    readonly code: number,
    message: string,
    readonly data?: unknown,
  ) {
    super(message);
    this.name = 'ProviderRefusal';
  }
}

const hex = (n: bigint) => `0x${n.toString(16)}`;
/** Where state methods take their block parameter. */
const BLOCK_PARAM: Record<string, number> = {
  eth_getBalance: 1,
  eth_getCode: 1,
  eth_getTransactionCount: 1,
  eth_getStorageAt: 2,
  eth_call: 1,
  eth_estimateGas: 1,
  eth_createAccessList: 1,
};

export interface ProviderProxy {
  readonly url: string;
  behaviour(): ProviderBehaviour;
  configure(change: Partial<ProviderBehaviour>): void;
  stats(): ProviderStats;
  /** Starts counting afresh and returns what was counted until now. */
  resetStats(): ProviderStats;
  close(): Promise<void>;
}

function emptyStats(): ProviderStats {
  return { requests: 0, rateLimited: { requests: 0, calls: 0 }, serverErrors: 0, refusedOnPurpose: 0, lagged: 0, laggedAnswers: 0, getLogsRefused: { results: 0, blocks: 0 }, methods: {}, bytes: 0, since: Date.now() };
}

/** Calls per second over a one-second bucket that refills continuously. */
class RateLimiter {
  private tokens: number;
  private at = Date.now();
  constructor(private perSecond: number) {
    this.tokens = perSecond;
  }
  take(n: number, perSecond: number): boolean {
    if (perSecond !== this.perSecond) {
      this.perSecond = perSecond;
      this.tokens = Math.min(this.tokens, perSecond);
    }
    const now = Date.now();
    this.tokens = Math.min(this.perSecond, this.tokens + ((now - this.at) / 1000) * this.perSecond);
    this.at = now;
    if (this.tokens < n) return false;
    this.tokens -= n;
    return true;
  }
}

export async function startProviderProxy(opts: { upstream: string; behaviour?: Partial<ProviderBehaviour>; seed?: number }): Promise<ProviderProxy> {
  let behaviour: ProviderBehaviour = { ...MAINNET_PROVIDER, ...opts.behaviour };
  let stats = emptyStats();
  const rng = createRng(opts.seed ?? 8453);
  const random = () => rng.int(1_000_000) / 1_000_000;
  const limiter = new RateLimiter(behaviour.rateLimitPerSecond ?? 1);
  let upstreamId = 0;

  const upstream = async (method: string, params: unknown[]): Promise<Answer> => {
    const res = await fetch(opts.upstream, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ jsonrpc: '2.0', id: ++upstreamId, method, params }),
    });
    return (await res.json()) as Answer;
  };
  const upstreamResult = async <T>(method: string, params: unknown[]): Promise<T> => {
    const a = await upstream(method, params);
    if (a.error !== undefined) throw new ProviderRefusal(a.error.code, a.error.message, a.error.data);
    return a.result as T;
  };

  /** A block parameter as a number in this view: tags resolve against the answering node's head. */
  const resolve = (tag: unknown, view: View): bigint => {
    if (tag === undefined || tag === null || tag === 'latest' || tag === 'pending') return view.seen;
    if (tag === 'earliest') return 0n;
    if (tag === 'safe') return view.seen > 32n ? view.seen - 32n : 0n;
    if (tag === 'finalized') return view.seen > 64n ? view.seen - 64n : 0n;
    if (typeof tag === 'string') return BigInt(tag);
    if (typeof tag === 'object' && 'blockNumber' in tag) return resolve((tag).blockNumber, view);
    throw new ProviderRefusal(-32602, 'invalid block parameter');
  };

  const getLogs = async (filter: Record<string, unknown>, view: View): Promise<unknown> => {
    const b = behaviour;
    if (typeof filter.blockHash === 'string') {
      const block = await upstreamResult<{ number: string } | null>('eth_getBlockByHash', [filter.blockHash, false]);
      if (block === null || BigInt(block.number) > view.seen) throw new ProviderRefusal(-32000, 'unknown block');
      const logs = await upstreamResult<unknown[]>('eth_getLogs', [filter]);
      if (b.getLogsMaxResults !== null && logs.length > b.getLogsMaxResults) throw tooManyResults(b.getLogsMaxResults, BigInt(block.number), BigInt(block.number));
      return logs;
    }
    const from = resolve(filter.fromBlock, view);
    const askedTo = resolve(filter.toBlock, view);
    if (from > askedTo) return upstreamResult('eth_getLogs', [filter]);
    if (b.getLogsMaxBlocks !== null && askedTo - from + 1n > BigInt(b.getLogsMaxBlocks)) {
      stats.getLogsRefused.blocks++;
      throw new ProviderRefusal(
        -32602,
        `Log response size exceeded. You can make eth_getLogs requests with up to a 2K block range and no limit on the response size, or you can request any block range with a cap of 10K logs in the response. Based on your parameters, this block range should work: [${hex(from)}, ${hex(from + BigInt(b.getLogsMaxBlocks) - 1n)}]`,
      );
    }
    // A node answers what it has: a range beyond its head is cut there, silently.
    const to = askedTo > view.seen ? view.seen : askedTo;
    if (from > to) return [];
    const logs = await upstreamResult<{ blockNumber: string }[]>('eth_getLogs', [{ ...filter, fromBlock: hex(from), toBlock: hex(to) }]);
    if (b.getLogsMaxResults !== null && logs.length > b.getLogsMaxResults) {
      // The suggestion holds at most the limit: the blocks before the one where the count passes it.
      const over = BigInt(logs[b.getLogsMaxResults]!.blockNumber);
      throw tooManyResults(b.getLogsMaxResults, from, over > from ? over - 1n : from);
    }
    return logs;
  };
  const tooManyResults = (limit: number, from: bigint, to: bigint) => {
    stats.getLogsRefused.results++;
    return new ProviderRefusal(-32005, `query returned more than ${limit} results. Try with this block range [${hex(from)}, ${hex(to)}].`, { from: hex(from), to: hex(to), limit });
  };

  /** One call as the answering node would answer it. */
  const answerCall = async (call: Call, view: View): Promise<unknown> => {
    const params = call.params ?? [];
    if (call.method === 'eth_getLogs') return getLogs((params[0] ?? {}) as Record<string, unknown>, view);
    if (view.lag === 0) return upstreamResult(call.method, params);
    switch (call.method) {
      case 'eth_blockNumber':
        return hex(view.seen);
      case 'eth_getBlockByNumber': {
        const n = resolve(params[0], view);
        return n > view.seen ? null : upstreamResult(call.method, [hex(n), ...params.slice(1)]);
      }
      case 'eth_getBlockByHash': {
        const block = await upstreamResult<{ number: string } | null>(call.method, params);
        return block !== null && BigInt(block.number) > view.seen ? null : block;
      }
      case 'eth_getTransactionReceipt': {
        const receipt = await upstreamResult<{ blockNumber: string } | null>(call.method, params);
        return receipt !== null && BigInt(receipt.blockNumber) > view.seen ? null : receipt;
      }
      case 'eth_getTransactionByHash': {
        const tx = await upstreamResult<{ blockNumber: string | null } | null>(call.method, params);
        // The node has it from the network's gossip, but not yet in a block.
        if (tx !== null && tx.blockNumber !== null && BigInt(tx.blockNumber) > view.seen) return { ...tx, blockHash: null, blockNumber: null, transactionIndex: null };
        return tx;
      }
      case 'eth_feeHistory': {
        const newest = resolve(params[1], view);
        return upstreamResult(call.method, [params[0], hex(newest > view.seen ? view.seen : newest), ...params.slice(2)]);
      }
    }
    const at = BLOCK_PARAM[call.method];
    if (at === undefined) return upstreamResult(call.method, params);
    const tag = params[at];
    if (typeof tag === 'object' && tag !== null && 'blockHash' in tag) return upstreamResult(call.method, params);
    const n = resolve(tag, view);
    if (n > view.seen) throw new ProviderRefusal(-32000, 'header not found');
    const rewritten = [...params];
    while (rewritten.length < at) rewritten.push(undefined);
    rewritten[at] = hex(n);
    return upstreamResult(call.method, rewritten);
  };

  const answer = async (call: Call, lagging: View): Promise<Answer> => {
    const id = call.id ?? null;
    const methods = behaviour.lag?.methods;
    const limit = behaviour.lag?.limit;
    const lags = lagging.lag > 0 && (methods === undefined || methods.includes(call.method)) && (limit === undefined || stats.laggedAnswers < limit);
    if (lags) stats.laggedAnswers++;
    const view = lags ? lagging : { head: lagging.head, seen: lagging.head, lag: 0 };
    const count = (stats.methods[call.method] ??= { calls: 0, bytes: 0, refused: 0 });
    let a: Answer;
    try {
      a = { jsonrpc: '2.0', id, result: await answerCall(call, view) };
    } catch (err) {
      if (!(err instanceof ProviderRefusal)) throw err;
      a = { jsonrpc: '2.0', id, error: { code: err.code, message: err.message, ...(err.data === undefined ? {} : { data: err.data }) } };
      if (isOwnRefusal(err)) count.refused++;
    }
    count.calls++;
    count.bytes += Buffer.byteLength(JSON.stringify(a));
    if (TRACE !== undefined) appendFileSync(TRACE, `${JSON.stringify({ t: Date.now(), method: call.method, params: call.params, lag: view.lag, error: a.error?.message })}\n`);
    return a;
  };

  const view = async (): Promise<View> => {
    const head = BigInt(await upstreamResult<string>('eth_blockNumber', []));
    const lag = behaviour.lag;
    if (lag === null || random() >= lag.share) return { head, seen: head, lag: 0 };
    const k = lag.minBlocks + Math.floor(random() * (lag.maxBlocks - lag.minBlocks + 1));
    stats.lagged++;
    return { head, seen: head > BigInt(k) ? head - BigInt(k) : 0n, lag: k };
  };

  const handle = async (req: IncomingMessage, res: ServerResponse): Promise<void> => {
    const chunks: Buffer[] = [];
    for await (const chunk of req) chunks.push(chunk as Buffer);
    stats.requests++;
    let parsed: Call | Call[];
    try {
      parsed = JSON.parse(Buffer.concat(chunks).toString('utf8')) as Call | Call[];
    } catch {
      send(res, 400, { jsonrpc: '2.0', id: null, error: { code: -32700, message: 'parse error' } });
      return;
    }
    const calls = Array.isArray(parsed) ? parsed : [parsed];
    const b = behaviour;
    if (b.latencyMs !== null) await pause(b.latencyMs[0] + random() * (b.latencyMs[1] - b.latencyMs[0]));
    const refused = b.refuse !== null && stats.refusedOnPurpose < b.refuse.limit && calls.some((c) => b.refuse!.methods.includes(c.method)) ? b.refuse.status : null;
    if (refused !== null) stats.refusedOnPurpose++;
    if (refused === 503 || (b.serverErrorShare > 0 && random() < b.serverErrorShare)) {
      stats.serverErrors++;
      res.writeHead(503, { 'content-type': 'text/plain' }).end('upstream connect error or disconnect/reset before headers');
      return;
    }
    if (refused === 429 || (b.rateLimitPerSecond !== null && !limiter.take(calls.length, b.rateLimitPerSecond))) {
      stats.rateLimited.requests++;
      stats.rateLimited.calls += calls.length;
      const refusal = (c: Call): Answer => ({ jsonrpc: '2.0', id: c.id ?? null, error: { code: -32005, message: 'rate limited' } });
      send(res, 429, Array.isArray(parsed) ? parsed.map(refusal) : refusal(parsed));
      return;
    }
    const v = await view();
    const answers = await Promise.all(calls.map((c) => answer(c, v)));
    const body = Array.isArray(parsed) ? answers : answers[0]!;
    stats.bytes += send(res, 200, body);
  };

  const server: Server = createServer((req, res) => {
    handle(req, res).catch((err: unknown) => {
      if (!res.headersSent) res.writeHead(502, { 'content-type': 'text/plain' }).end(`proxy: ${err instanceof Error ? err.message : String(err)}`);
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    behaviour: () => behaviour,
    configure(change) {
      behaviour = { ...behaviour, ...change };
    },
    stats: () => stats,
    resetStats() {
      const old = stats;
      stats = emptyStats();
      return old;
    },
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}

/** The provider's own refusals (a limit), as opposed to errors anvil itself answered. */
function isOwnRefusal(err: ProviderRefusal): boolean {
  return err.code === -32005 || err.message.startsWith('Log response size exceeded') || err.message === 'header not found' || err.message === 'unknown block';
}

function send(res: ServerResponse, status: number, body: unknown): number {
  const text = JSON.stringify(body);
  res.writeHead(status, { 'content-type': 'application/json' }).end(text);
  return Buffer.byteLength(text);
}
