/**
 * Forwarder factory versions through the service: new receipts are addressed through version 2
 * and record it; a receipt addressed through version 1 (stored before version 2 existed) keeps its
 * address and is swept through the version-1 factory; the admin sweep route hands over the sweep of
 * the receipt's token, another token or native ETH, and refuses what cannot work.
 */
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { and, eq } from 'drizzle-orm';
import { erc20Abi, getAddress, type Hex } from 'viem';
import { devAccount } from '../../src/chain/dev-accounts.ts';
import { factoryAddress, forwarderImplementation, paymentSalt, predictPaymentAddress } from '../../src/chain/payment-address.ts';
import { receipts } from '../../src/db/schema.ts';
import { sweepCall, SweepUnavailable } from '../../src/payments/pay-address.ts';
import { admin } from '../helpers/session.ts';
import { CHAIN_WAIT_MS, deployShop, devWallet, PLATFORM, postReceipt, type Shop, useChainApp } from './helpers.ts';
import { waitFor } from '../helpers/wait.ts';

const f = useChainApp({ CONFIRMATIONS: '1', PLATFORM_RECIPIENT_ADDRESS: PLATFORM }, { workers: true });

const wallet = (i: number) => devWallet(f.tc, i);
const pub = () => f.tc.chain.publicClient;
const usdc = () => f.tc.chain.usdc.address;
const balance = (of: Hex) => pub().readContract({ address: usdc(), abi: erc20Abi, functionName: 'balanceOf', args: [of] });
const ZERO = '0x0000000000000000000000000000000000000000';

const shop = (): Promise<Shop> => deployShop(f.t);

const createReceipt = (sh: Shop, id: string, totalUsd: number): Promise<string> => postReceipt(f.t, sh, id, totalUsd);

async function page(id: string, search: string) {
  const res = await f.t.call(null, 'GET', `/api/pay/${id}${search}`);
  assert.equal(res.status, 200, JSON.stringify(res.body));
  return res.body as { status: string; payment: { payTo: Hex } };
}

async function row(sh: Shop, id: string) {
  const [r] = await f.t.deps.database.db.select().from(receipts).where(and(eq(receipts.wallet, sh.wallet), eq(receipts.id, id)));
  assert.ok(r);
  return r;
}

async function send(i: number, tx: { to: Hex; data?: Hex; value?: bigint }) {
  const hash = await wallet(i).sendTransaction(tx);
  const mined = await pub().waitForTransactionReceipt({ hash });
  assert.equal(mined.status, 'success');
  return mined;
}

const detail = async (sh: Shop, id: string) => (await f.t.call(sh.key, 'GET', `/api/receipts/${id}`)).body as { status: string };
const completes = (sh: Shop, id: string) =>
  waitFor(async () => ((await detail(sh, id)).status === 'completed' ? true : undefined), CHAIN_WAIT_MS, `${id} to complete`);

describe('factory versions of payment addresses', () => {
  test('a new receipt is addressed through the version-2 factory, which its row records', async () => {
    const sh = await shop();
    const search = await createReceipt(sh, 'v2-a', 2);
    const { payment } = await page('v2-a', search);
    const expected = predictPaymentAddress({ factory: factoryAddress(2), split: sh.split, salt: paymentSalt(sh.wallet, 'v2-a') });
    assert.equal(payment.payTo, expected);
    const stored = await waitFor(async () => {
      const r = await row(sh, 'v2-a');
      return r.payAddress !== null ? r : undefined;
    }, CHAIN_WAIT_MS, 'the address to be stored');
    assert.equal(stored.payAddress, expected);
    assert.equal(stored.payFactory, factoryAddress(2).toLowerCase());
    await send(3, { to: usdc(), data: transferData(expected, 2_000_000n) });
    await completes(sh, 'v2-a');
    assert.equal(await balance(sh.split), 2_000_000n);
  });

  test('a receipt addressed through version 1 keeps its address, is paid there, and the worker sweeps it through version 1', async () => {
    const sh = await shop();
    await f.t.deps.chainWorker!.stop();
    let v1: Hex;
    try {
      await createReceipt(sh, 'v1-a', 3);
      // As a row stored before version 2: the version-1 address and no recorded factory.
      v1 = predictPaymentAddress({ factory: factoryAddress(1), split: sh.split, salt: paymentSalt(sh.wallet, 'v1-a') });
      await f.t.deps.database.db
        .update(receipts)
        .set({ payAddress: v1, payFactory: null })
        .where(and(eq(receipts.wallet, sh.wallet), eq(receipts.id, 'v1-a')));
    } finally {
      f.t.deps.chainWorker!.start();
    }
    await send(4, { to: usdc(), data: transferData(v1, 3_000_000n) });
    await completes(sh, 'v1-a');
    assert.equal(await balance(v1), 0n);
    assert.equal(await balance(sh.split), 3_000_000n);
    const code = await pub().getCode({ address: v1 });
    assert.ok(code !== undefined && code.includes(forwarderImplementation(factoryAddress(1)).slice(2).toLowerCase()), 'a version-1 forwarder was deployed there');

    // The sweep route: the receipt's token through version 1; ETH refused with a reason.
    const offer = await admin(f.t, sh.s, 'GET', '/api/admin/receipts/v1-a/sweep');
    assert.equal(offer.status, 200, JSON.stringify(offer.body));
    assert.equal(offer.body.transaction.to, factoryAddress(1).toLowerCase());
    for (const token of ['eth', ZERO]) {
      const refused = await admin(f.t, sh.s, 'GET', `/api/admin/receipts/v1-a/sweep?token=${token}`);
      assert.equal(refused.status, 400, JSON.stringify(refused.body));
      assert.equal(refused.body.error, 'invalid_input');
      assert.match(refused.body.message, /version-1 forwarder.*ETH/);
    }
  });

  test('sweepCall refuses what cannot work: no address, ETH at version 1, an address the factory does not make', () => {
    const factories = { paymentFactory: factoryAddress(2), paymentFactoryV1: factoryAddress(1) };
    const split: Hex = `0x${'12'.repeat(20)}`;
    const w = `0x${'34'.repeat(20)}`;
    const v1 = predictPaymentAddress({ factory: factoryAddress(1), split, salt: paymentSalt(w, 'x') });
    const v2 = predictPaymentAddress({ factory: factoryAddress(2), split, salt: paymentSalt(w, 'x') });
    const reason = (f: () => unknown) => {
      try {
        f();
      } catch (err) {
        assert.ok(err instanceof SweepUnavailable, String(err));
        return err.reason;
      }
      return 'built';
    };
    assert.equal(reason(() => sweepCall(factories, { wallet: w, id: 'x', payAddress: null, payFactory: null }, split, usdc())), 'no_address');
    assert.equal(reason(() => sweepCall(factories, { wallet: w, id: 'x', payAddress: v1, payFactory: null }, split, 'native')), 'native_v1');
    assert.equal(reason(() => sweepCall({ ...factories, paymentFactoryV1: undefined }, { wallet: w, id: 'x', payAddress: v1, payFactory: null }, split, usdc())), 'no_factory');
    // A version-2 address recorded as version 1 (or another split): never a sweep of some other address.
    assert.equal(reason(() => sweepCall(factories, { wallet: w, id: 'x', payAddress: v2, payFactory: null }, split, usdc())), 'address_mismatch');
    assert.equal(reason(() => sweepCall(factories, { wallet: w, id: 'x', payAddress: v1, payFactory: null }, `0x${'56'.repeat(20)}`, usdc())), 'address_mismatch');
    const call = sweepCall(factories, { wallet: w, id: 'x', payAddress: v2, payFactory: factoryAddress(2).toLowerCase() }, split, 'native');
    assert.equal(call.factory, factoryAddress(2));
    assert.equal(call.version, 2);
    assert.deepEqual(call.args, [getAddress(split), paymentSalt(w, 'x'), ZERO]);
    assert.equal(call.payTo.toLowerCase(), v2);
  });
});

describe('GET /api/admin/receipts/:id/sweep', () => {
  test('native ETH at a version-2 address: the call the merchant sends moves it into the split', async () => {
    const sh = await shop();
    const search = await createReceipt(sh, 'eth-a', 5);
    const { payment } = await page('eth-a', search);
    await send(5, { to: payment.payTo, value: 123_456_789n });
    for (const token of ['eth', ZERO]) {
      const offer = await admin(f.t, sh.s, 'GET', `/api/admin/receipts/eth-a/sweep?token=${token}`);
      assert.equal(offer.status, 200, JSON.stringify(offer.body));
      assert.equal(offer.body.token, ZERO);
      assert.equal(offer.body.waiting, '123456789');
      assert.equal(offer.body.payTo, payment.payTo);
      assert.equal(offer.body.transaction.to, factoryAddress(2).toLowerCase());
    }
    const offer = await admin(f.t, sh.s, 'GET', '/api/admin/receipts/eth-a/sweep?token=eth');
    await send(6, { to: offer.body.transaction.to, data: offer.body.transaction.data });
    assert.equal(await pub().getBalance({ address: payment.payTo }), 0n);
    assert.equal(await pub().getBalance({ address: sh.split }), 123_456_789n);
    const after = await admin(f.t, sh.s, 'GET', '/api/admin/receipts/eth-a/sweep?token=eth');
    assert.equal(after.body.waiting, '0');
  });

  test('an address that is not a token contract is 400 invalid_input, never a 500', async () => {
    const sh = await shop();
    await createReceipt(sh, 'tok-a', 1);
    const notTokens = [
      devAccount(7).address, // an account: no code
      sh.split, // a contract without balanceOf
      `0x${'00'.repeat(19)}01`, // a precompile
    ];
    for (const token of notTokens) {
      const res = await admin(f.t, sh.s, 'GET', `/api/admin/receipts/tok-a/sweep?token=${token}`);
      assert.equal(res.status, 400, `${token}: ${JSON.stringify(res.body)}`);
      assert.equal(res.body.error, 'invalid_input');
    }
    const malformed = await admin(f.t, sh.s, 'GET', '/api/admin/receipts/tok-a/sweep?token=ether');
    assert.equal(malformed.status, 400);
    const ok = await admin(f.t, sh.s, 'GET', `/api/admin/receipts/tok-a/sweep?token=${usdc()}`);
    assert.equal(ok.status, 200, JSON.stringify(ok.body));
    assert.equal(ok.body.token, usdc().toLowerCase());
  });
});

function transferData(to: Hex, amount: bigint): Hex {
  return `0xa9059cbb${to.slice(2).toLowerCase().padStart(64, '0')}${amount.toString(16).padStart(64, '0')}`;
}
