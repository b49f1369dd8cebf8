/**
 * PaymentSplitter on the real dev chain: deploy, read back, verify against recipients, and pay
 * USDC in then release each recipient's share.
 */
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { createWalletClient, erc20Abi, getAddress, http, type Address } from 'viem';
import type { ChainDeps, ChainWalletClient } from '../../src/chain/client.ts';
import { devAccount } from '../../src/chain/dev-accounts.ts';
import { SplitReadError, SplitReleaseError } from '../../src/chain/errors.ts';
import { deploySplit, readSplit, releasable, release, verifySplitMatches, paymentSplitterAbi, paymentSplitterArtifact } from '../../src/chain/split-contract.ts';
import { PLATFORM, startTestChain, type TestChain } from './helpers.ts';

let t: TestChain;
let chain: ChainDeps;
let deployer: ChainWalletClient;
before(async () => {
  t = await startTestChain();
  chain = t.chain;
  assert.ok(chain.walletClient);
  deployer = chain.walletClient;
});
after(async () => {
  await t.close();
});

const MERCHANT = getAddress(`0x${'a1'.repeat(20)}`);
const OTHER = getAddress(`0x${'b2'.repeat(20)}`);
const recipients = [
  { address: MERCHANT.toLowerCase(), sharesBps: 9950 },
  { address: PLATFORM, sharesBps: 50 },
];

const usdcBalance = (account: Address) =>
  chain.publicClient.readContract({ address: chain.usdc.address, abi: erc20Abi, functionName: 'balanceOf', args: [account] });

describe('deploySplit and readSplit', () => {
  test('deploys a PaymentSplitter whose payees and shares are the recipients and their basis points', async () => {
    const deployed = await deploySplit({ walletClient: deployer, publicClient: chain.publicClient, recipients });
    assert.match(deployed.address, /^0x[0-9a-fA-F]{40}$/);
    const split = await readSplit({ publicClient: chain.publicClient, address: deployed.address });
    assert.deepEqual(split.payees, [
      { address: MERCHANT, shares: 9950n },
      { address: getAddress(PLATFORM), shares: 50n },
    ]);
    assert.equal(split.totalShares, 10000n);
  });

  test('the typed ABI agrees with the artifact OpenZeppelin ships', () => {
    const signature = (e: { type: string; name?: string; inputs?: readonly { type: string }[] }) =>
      `${e.type} ${e.name}(${(e.inputs ?? []).map((i) => i.type).join(',')})`;
    const shipped = new Set(paymentSplitterArtifact.abi.map((e) => signature(e as Parameters<typeof signature>[0])));
    for (const entry of paymentSplitterAbi) assert.ok(shipped.has(signature(entry)), `${signature(entry)} is in the artifact`);
  });

  test('reading an address without code is a no_code error', async () => {
    await assert.rejects(readSplit({ publicClient: chain.publicClient, address: OTHER }), (err: unknown) => {
      assert.ok(err instanceof SplitReadError);
      assert.equal(err.reason, 'no_code');
      return true;
    });
  });
});

describe('verifySplitMatches', () => {
  let address: Address;
  before(async () => {
    address = (await deploySplit({ walletClient: deployer, publicClient: chain.publicClient, recipients })).address;
  });

  test('matches the same recipients, in any order and letter case', async () => {
    const match = await verifySplitMatches({ publicClient: chain.publicClient, address, recipients: [...recipients].reverse() });
    assert.equal(match.ok, true, JSON.stringify(match, (_k, v) => (typeof v === 'bigint' ? v.toString() : v)));
  });

  test('a different share is share_differs, naming the account and both numbers', async () => {
    const match = await verifySplitMatches({
      publicClient: chain.publicClient,
      address,
      recipients: [
        { address: MERCHANT, sharesBps: 9900 },
        { address: PLATFORM, sharesBps: 100 },
      ],
    });
    assert.equal(match.ok, false);
    assert.ok(!match.ok);
    assert.equal(match.reason, 'share_differs');
    assert.equal(match.account, MERCHANT);
    assert.equal(match.expectedShares, 9900n);
    assert.equal(match.actualShares, 9950n);
  });

  test('a recipient the contract does not pay is payee_missing', async () => {
    const match = await verifySplitMatches({
      publicClient: chain.publicClient,
      address,
      recipients: [
        { address: OTHER, sharesBps: 9950 },
        { address: PLATFORM, sharesBps: 50 },
      ],
    });
    assert.ok(!match.ok);
    assert.equal(match.reason, 'payee_missing');
    assert.equal(match.account, OTHER);
  });

  test('a payee that is not a recipient is extra_payee', async () => {
    const three = await deploySplit({
      walletClient: deployer,
      publicClient: chain.publicClient,
      recipients: [...recipients, { address: OTHER, sharesBps: 1 }],
    });
    const match = await verifySplitMatches({ publicClient: chain.publicClient, address: three.address, recipients });
    assert.ok(!match.ok);
    assert.equal(match.reason, 'extra_payee');
    assert.equal(match.account, OTHER);
  });

  test('an address without code is no_code; a contract that is not a splitter is not_a_splitter', async () => {
    const empty = await verifySplitMatches({ publicClient: chain.publicClient, address: OTHER, recipients });
    assert.ok(!empty.ok);
    assert.equal(empty.reason, 'no_code');
    const token = await verifySplitMatches({ publicClient: chain.publicClient, address: chain.usdc.address, recipients });
    assert.ok(!token.ok);
    assert.equal(token.reason, 'not_a_splitter');
  });
});

describe('paying into a split and releasing', () => {
  test('a USDC payment is releasable by share, and release pays the recipient exactly that', async () => {
    const split = (await deploySplit({ walletClient: deployer, publicClient: chain.publicClient, recipients })).address;
    const buyer = createWalletClient({ chain: chain.publicClient.chain, transport: http(chain.rpcUrl), account: devAccount(1) });
    const paid = 100_000_000n; // 100 USDC
    const hash = await buyer.writeContract({ address: chain.usdc.address, abi: erc20Abi, functionName: 'transfer', args: [split, paid] });
    assert.equal((await chain.publicClient.waitForTransactionReceipt({ hash })).status, 'success');

    const due = (account: string) => releasable({ publicClient: chain.publicClient, split, token: chain.usdc.address, account });
    assert.equal(await due(MERCHANT), 99_500_000n);
    assert.equal(await due(PLATFORM), 500_000n);

    const before = await usdcBalance(MERCHANT);
    const released = await release({ walletClient: deployer, publicClient: chain.publicClient, split, token: chain.usdc.address, account: MERCHANT });
    assert.equal(released.amount, 99_500_000n, 'the ERC20PaymentReleased amount');
    assert.equal((await usdcBalance(MERCHANT)) - before, 99_500_000n);
    assert.equal(await due(MERCHANT), 0n);
    assert.equal(await due(PLATFORM), 500_000n, "the platform's share waits for its own release");

    await assert.rejects(
      release({ walletClient: deployer, publicClient: chain.publicClient, split, token: chain.usdc.address, account: MERCHANT }),
      (err: unknown) => {
        assert.ok(err instanceof SplitReleaseError, String(err));
        assert.equal(err.account, MERCHANT);
        assert.equal(err.transactionHash, undefined, 'refused in simulation, before any transaction');
        assert.match(String((err.cause as Error).message), /not due payment/);
        return true;
      },
    );
  });
});
