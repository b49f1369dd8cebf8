/**
 * Gas per gasless payment (DESIGN.md "Gasless payments"), a small part of the payment bench
 * (bench/payments.ts) run on its service: for each of a few receipts, a fresh buyer holding the
 * test USDC and no ETH signs an EIP-3009 TransferWithAuthorization of `payment.due` to
 * `payment.payTo` in the domain `payment.gasless` names, and posts it to
 * POST /api/pay/<id>/authorization. The service relays it through payAndSweep, one transaction
 * that pays the payment address and sweeps it into the split; the bench reads that transaction's
 * receipt (gas used, effective gas price) and waits for the receipt to be `completed`. The buyer's
 * ETH must still be 0 afterwards.
 *
 *   BENCH_GASLESS=n   gasless payments (default 5, 3 with BENCH_QUICK=1; 0 skips this part)
 */
import { randomBytes } from 'node:crypto';
import { createPublicClient, createWalletClient, defineChain, erc20Abi, http, type Hex } from 'viem';
import { generatePrivateKey, privateKeyToAccount } from 'viem/accounts';
import { foundry } from 'viem/chains';
import { devAccount } from '../src/chain/dev-accounts.ts';
import { transferAuthorizationTypedData } from '../src/chain/eip3009.ts';
import type { AuthorizationRelayed, PaymentView } from '../src/contract/pay.ts';
import type { CreatedReceipt } from '../src/contract/receipts.ts';

export interface GaslessSample {
  receiptId: string;
  transactionHash: string;
  /** Gas of the one relayed transaction (transferWithAuthorization and the sweep). */
  gasUsed: number;
  /** What it cost the service: gasUsed times the effective gas price, wei. */
  weiSpent: string;
  /** From posting the authorization to `completed` seen through GET /api/pay. */
  completedMs: number;
}

export interface GaslessReport {
  count: number;
  gasUsed: { p50: number; max: number; min: number };
  samples: GaslessSample[];
}

export function gaslessCount(env: NodeJS.ProcessEnv, quick: boolean): number {
  const raw = env.BENCH_GASLESS?.trim();
  const n = raw === undefined || raw === '' ? (quick ? 3 : 5) : Number(raw);
  if (!Number.isInteger(n) || n < 0 || n > 100) throw new Error(`BENCH_GASLESS must be a whole number from 0 to 100 (got "${raw}")`);
  return n;
}

interface Caller {
  <T>(base: { base: string; key?: string }, method: string, url: string, body?: unknown): Promise<{ status: number; json: T }>;
}

/** Pays `count` receipts without gas; `funder` is a dev account that gives each buyer its USDC. */
export async function benchGasless(o: { base: string; key: string; rpcUrl: string; count: number; funder: number; call: Caller }): Promise<GaslessReport> {
  const chain = defineChain({ ...foundry, rpcUrls: { default: { http: [o.rpcUrl] } } });
  const transport = http(o.rpcUrl);
  const client = createPublicClient({ chain, transport });
  const funder = createWalletClient({ chain, transport, account: devAccount(o.funder) });
  const samples: GaslessSample[] = [];
  const expect = async <T>(p: Promise<{ status: number; json: T }>, status: number, what: string): Promise<T> => {
    const r = await p;
    if (r.status !== status) throw new Error(`gasless ${what}: expected ${status}, got ${r.status} ${JSON.stringify(r.json)}`);
    return r.json;
  };
  for (let i = 0; i < o.count; i++) {
    const id = `bench-gasless-${i + 1}`;
    const created = await expect(
      o.call<CreatedReceipt>({ base: o.base, key: o.key }, 'POST', '/api/receipts', { id, lineItems: [{ label: 'Bench item', priceUsd: 2.5 }], totalUsd: 2.5 }),
      201,
      'receipt',
    );
    const search = new URL(created.paymentUrl).search;
    // The payment address is stored by the chain worker shortly after the receipt is made; until then no offer.
    let view: PaymentView | undefined;
    for (const deadline = Date.now() + 30_000; view?.payment?.gasless == null; ) {
      if (Date.now() > deadline) throw new Error(`${id}: payment.gasless still null after 30 s (${JSON.stringify(view?.payment)})`);
      if (view !== undefined) await new Promise((resolve) => setTimeout(resolve, 100));
      view = await expect(o.call<PaymentView>({ base: o.base }, 'GET', `/api/pay/${id}${search}`), 200, 'view');
    }
    const payment = view.payment;
    const buyer = privateKeyToAccount(generatePrivateKey());
    const funded = await funder.writeContract({ address: payment.tokenAddress as Hex, abi: erc20Abi, functionName: 'transfer', args: [buyer.address, BigInt(payment.due)] });
    await client.waitForTransactionReceipt({ hash: funded });
    const validBefore = Math.floor(Date.now() / 1000) + 1800;
    // eslint-disable-next-line @typescript-eslint/no-unnecessary-type-assertion
    const message = { from: buyer.address, to: payment.payTo as Hex, value: BigInt(payment.due), validAfter: 0n, validBefore: BigInt(validBefore), nonce: `0x${randomBytes(32).toString('hex')}` as Hex };
    const domain = { ...payment.gasless!, chainId: payment.chainId, verifyingContract: payment.tokenAddress as Hex };
    const signature = await buyer.signTypedData(transferAuthorizationTypedData(domain, message));
    const postedAt = Date.now();
    const { transactionHash } = await expect(
      o.call<AuthorizationRelayed>({ base: o.base }, 'POST', `/api/pay/${id}/authorization${search}`, {
        from: buyer.address,
        value: payment.due,
        validAfter: 0,
        validBefore,
        nonce: message.nonce,
        signature,
      }),
      202,
      'authorization',
    );
    const mined = await client.waitForTransactionReceipt({ hash: transactionHash as Hex });
    if (mined.status !== 'success') throw new Error(`${id}: the relayed transaction ${transactionHash} reverted`);
    let completedAt: number | undefined;
    for (const deadline = Date.now() + 30_000; completedAt === undefined; ) {
      const now = await expect(o.call<PaymentView>({ base: o.base }, 'GET', `/api/pay/${id}${search}`), 200, 'status');
      if (now.status === 'completed') completedAt = Date.now();
      else if (Date.now() > deadline) throw new Error(`${id} not completed within 30 s of its gasless payment (still ${now.status})`);
      else await new Promise((resolve) => setTimeout(resolve, 50));
    }
    const eth = await client.getBalance({ address: buyer.address });
    if (eth !== 0n) throw new Error(`${id}: the buyer holds ${eth} wei after paying without gas`);
    samples.push({
      receiptId: id,
      transactionHash,
      gasUsed: Number(mined.gasUsed),
      weiSpent: (mined.gasUsed * mined.effectiveGasPrice).toString(),
      completedMs: completedAt - postedAt,
    });
  }
  const gas = samples.map((s) => s.gasUsed).sort((a, b) => a - b);
  return { count: samples.length, gasUsed: { p50: gas[Math.ceil(gas.length / 2) - 1] ?? NaN, min: gas[0] ?? NaN, max: gas[gas.length - 1] ?? NaN }, samples };
}
