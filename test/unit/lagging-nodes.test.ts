/**
 * Reads pinned to a block behind a provider whose nodes lag (src/chain/lagging-nodes.ts), through
 * viem's own client and HTTP transport against a JSON-RPC endpoint that answers as scripted: a
 * node without the block answers Geth's "header not found", which is asked again; a revert or an
 * HTTP failure is not. A signed transaction whose send the provider failed or limited is sent
 * again, the same bytes (src/chain/refusals.ts).
 */
import assert from 'node:assert/strict';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { after, before, describe, test } from 'node:test';
import { createPublicClient, encodeAbiParameters, erc20Abi, http } from 'viem';
import { fromAnyNode, isBlockMissing, LAG_RETRIES } from '../../src/chain/lagging-nodes.ts';
import { RESEND_PAUSES_MS, sendSigned } from '../../src/chain/refusals.ts';

type Scripted = { error: { code: number; message: string; data?: string } } | { status: number } | { result: string };

let server: Server;
let script: Scripted[] = [];
let asked: { method: string; params: unknown[] }[] = [];
let url = '';

before(async () => {
  server = createServer((req, res) => {
    let body = '';
    req.on('data', (c: Buffer) => (body += c.toString()));
    req.on('end', () => {
      const call = JSON.parse(body) as { id: number; method: string; params: unknown[] };
      asked.push({ method: call.method, params: call.params });
      const next = script.shift() ?? { result: '0x' };
      if ('status' in next) {
        res.writeHead(next.status).end('upstream failed');
        return;
      }
      res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify({ jsonrpc: '2.0', id: call.id, ...next }));
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
});
after(() => new Promise<void>((resolve) => server.close(() => resolve())));

const client = () => createPublicClient({ transport: http(url, { retryCount: 0 }) });
const TOKEN = '0x00000000000000000000000000000000000000aa';
const HOLDER = '0x00000000000000000000000000000000000000bb';
const balanceAt = (blockNumber: bigint) =>
  fromAnyNode(() => client().readContract({ address: TOKEN, abi: erc20Abi, functionName: 'balanceOf', args: [HOLDER], blockNumber }));
const HEADER_NOT_FOUND = { error: { code: -32000, message: 'header not found' } };
const amount = (n: bigint) => ({ result: encodeAbiParameters([{ type: 'uint256' }], [n]) });

describe('reads pinned to a block, behind lagging nodes', () => {
  test('a node without the block is asked again, and the answer of one that has it is the value', async () => {
    script = [HEADER_NOT_FOUND, HEADER_NOT_FOUND, amount(4_400_000n)];
    asked = [];
    assert.equal(await balanceAt(19n), 4_400_000n);
    assert.equal(asked.length, 3);
    // Every ask is pinned to the block, never `latest` (where a lagging node answers its older head).
    for (const a of asked) assert.equal(a.params[1], '0x13');
  });

  test(`after ${LAG_RETRIES} re-asks the lag is thrown, for the next pass to try`, async () => {
    script = Array.from({ length: LAG_RETRIES + 2 }, () => HEADER_NOT_FOUND);
    asked = [];
    await assert.rejects(balanceAt(19n), (err) => isBlockMissing(err));
    assert.equal(asked.length, 1 + LAG_RETRIES);
  });

  test('a revert is an answer about the call: thrown at once', async () => {
    script = [{ error: { code: 3, message: 'execution reverted', data: '0x' } }, amount(1n)];
    asked = [];
    await assert.rejects(balanceAt(19n), (err) => !isBlockMissing(err));
    assert.equal(asked.length, 1);
  });

  test('a transport failure (HTTP 502) is not lag: thrown at once', async () => {
    script = [{ status: 502 }, amount(1n)];
    asked = [];
    await assert.rejects(balanceAt(19n), (err) => !isBlockMissing(err));
    assert.equal(asked.length, 1);
  });

  test('other providers’ words for a missing block count as lag too', () => {
    for (const message of ['unknown block', 'block not found', 'block 0x13 not found']) {
      assert.equal(isBlockMissing(Object.assign(new Error(message), { code: -32000 })), true, message);
    }
    assert.equal(isBlockMissing(Object.assign(new Error('nonce too low'), { code: -32000 })), false);
    assert.equal(isBlockMissing(new Error('header not found')), false, 'without an RPC code it is not the node’s answer');
  });
});

describe('a signed transaction sent through a provider that fails or limits requests', () => {
  const RAW = '0x02f86b82210501843b9aca00843b9aca0082520894000000000000000000000000000000000000000080c001a0aa000000000000000000000000000000000000000000000000000000000000aaa0bb000000000000000000000000000000000000000000000000000000000000bb';
  const HASH = { result: `0x${'ab'.repeat(32)}` };
  const send = () => sendSigned(client(), RAW);

  test('a 503, then the node takes it: the same bytes were sent twice', async () => {
    script = [{ status: 503 }, HASH];
    asked = [];
    assert.equal((await send()).refusal, null);
    assert.deepEqual(
      asked.map((a) => a.params[0]),
      [RAW, RAW],
    );
  });

  test('a 429, then "nonce too low": the first reached a node after all, so the transaction is out there (known)', async () => {
    script = [{ status: 429 }, { error: { code: -32000, message: 'nonce too low' } }];
    asked = [];
    assert.equal((await send()).refusal, 'known');
    assert.equal(asked.length, 2);
  });

  test(`failed every time: sent ${1 + RESEND_PAUSES_MS.length} times in all, and 'unknown' (it may still be out there)`, async () => {
    script = [{ status: 503 }, { status: 429 }, { status: 502 }, HASH];
    asked = [];
    assert.equal((await send()).refusal, 'unknown');
    assert.equal(asked.length, 1 + RESEND_PAUSES_MS.length);
  });

  test("the node's own refusal is an answer: not sent again", async () => {
    script = [{ error: { code: -32000, message: 'insufficient funds for gas * price + value' } }, HASH];
    asked = [];
    assert.equal((await send()).refusal, 'funds');
    script = [{ error: { code: -32000, message: 'nonce too low' } }, HASH];
    assert.equal((await send()).refusal, 'nonce_used', 'on the first send it means another transaction used the nonce');
    assert.equal(asked.length, 2);
  });
});
