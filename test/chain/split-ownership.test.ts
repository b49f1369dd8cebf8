/**
 * A split contract belongs to one merchant, and only the PaymentSplitter the service deploys is a
 * split: tried as a wallet that registers another merchant's split, as two merchants racing for
 * one address, and as a merchant offering a contract that merely answers like a splitter.
 */
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { erc20Abi, type Hex } from 'viem';
import { devAccount } from '../../src/chain/dev-accounts.ts';
import { deploySplit } from '../../src/chain/split-contract.ts';
import { admin, signIn, type Session } from '../helpers/session.ts';
import { devWallet, CHAIN_WAIT_MS, PLATFORM, useChainApp } from './helpers.ts';
import { compileContract } from './test-contracts.ts';
import { until } from '../helpers/wait.ts';

const f = useChainApp({ CONFIRMATIONS: '1', PLATFORM_RECIPIENT_ADDRESS: PLATFORM }, { workers: true });

const recipientsOf = (s: Session) => [
  { address: s.wallet.toLowerCase(), sharesBps: 9950 },
  { address: PLATFORM, sharesBps: 50 },
];

describe('one owner per split', () => {
  test("registering another merchant's split is refused with 409, and its payments stay the owner's", async () => {
    const owner = await signIn(f.t);
    const res = await admin(f.t, owner, 'POST', '/api/split/deploy', { recipients: recipientsOf(owner) });
    assert.equal(res.status, 200);
    const split = res.body.split.address as Hex;
    const thief = await signIn(f.t);
    // The thief copies the public payees and shares exactly.
    const taken = await admin(f.t, thief, 'POST', '/api/split/deploy', { splitAddress: split, recipients: recipientsOf(owner) });
    assert.equal(taken.status, 409, JSON.stringify(taken.body));
    assert.equal(taken.body.error, 'conflict');
    const thiefKey = await f.t.key(thief.wallet);
    assert.equal((await f.t.call(thiefKey, 'GET', '/api/split/deploy')).body.split.address, null, 'the thief has no split');
    // A transfer into the split is the owner's split transaction, and never the thief's.
    const buyer = devWallet(f.tc, 0);
    const hash = await buyer.writeContract({ address: f.tc.chain.usdc.address, abi: erc20Abi, functionName: 'transfer', args: [split, 1_000_000n] });
    await f.tc.chain.publicClient.waitForTransactionReceipt({ hash });
    const ownerKey = await f.t.key(owner.wallet);
    await until(
      async () => {
        const rows = (await f.t.call(ownerKey, 'GET', '/api/split/transactions')).body as { transactionHash: string }[];
        return rows.some((r) => r.transactionHash === hash.toLowerCase());
      },
      CHAIN_WAIT_MS,
      'the owner to see the transfer',
    );
    assert.deepEqual((await f.t.call(thiefKey, 'GET', '/api/split/transactions')).body, []);
  });

  test('two merchants racing for one pre-deployed split: exactly one gets it', async () => {
    const a = await signIn(f.t);
    const b = await signIn(f.t);
    // One contract both could claim: it pays a third party and the platform.
    const shared = [
      { address: devAccount(6).address.toLowerCase(), sharesBps: 9950 },
      { address: PLATFORM, sharesBps: 50 },
    ];
    const deployed = await deploySplit({ walletClient: f.tc.chain.walletClient!, publicClient: f.tc.chain.publicClient, recipients: shared });
    // The recipients must include the merchant's own choice; the platform share is what is checked.
    const [ra, rb] = await Promise.all([
      admin(f.t, a, 'POST', '/api/split/deploy', { splitAddress: deployed.address, recipients: shared }),
      admin(f.t, b, 'POST', '/api/split/deploy', { splitAddress: deployed.address, recipients: shared }),
    ]);
    assert.deepEqual([ra.status, rb.status].sort(), [200, 409], `${JSON.stringify(ra.body)} ${JSON.stringify(rb.body)}`);
  });
});

describe('only the PaymentSplitter the service deploys is a split', () => {
  test('a look-alike contract that answers payee() and shares() is refused with 400', async () => {
    const s = await signIn(f.t);
    const payees = recipientsOf(s);
    // Answers like a PaymentSplitter with exactly the recipients, but any call could move its money anywhere.
    const source = `// SPDX-License-Identifier: MIT
pragma solidity ^0.8.20;
contract LookAlike {
  address[] private _payees;
  mapping(address => uint256) private _shares;
  constructor(address[] memory payees_, uint256[] memory shares_) {
    for (uint256 i = 0; i < payees_.length; i++) { _payees.push(payees_[i]); _shares[payees_[i]] = shares_[i]; }
  }
  function payee(uint256 i) external view returns (address) { return _payees[i]; }
  function shares(address a) external view returns (uint256) { return _shares[a]; }
  function totalShares() external pure returns (uint256) { return 10000; }
  function drain(address token, address to, uint256 amount) external {
    (bool ok, ) = token.call(abi.encodeWithSignature("transfer(address,uint256)", to, amount));
    require(ok);
  }
}`;
    const c = compileContract('LookAlike', source);
    const deployer = devWallet(f.tc, 7);
    const hash = await deployer.deployContract({
      abi: c.abi,
      bytecode: c.bytecode,
      args: [payees.map((p) => p.address), payees.map((p) => BigInt(p.sharesBps))],
    });
    const address = (await f.tc.chain.publicClient.waitForTransactionReceipt({ hash })).contractAddress!;
    const res = await admin(f.t, s, 'POST', '/api/split/deploy', { splitAddress: address, recipients: payees });
    assert.equal(res.status, 400, JSON.stringify(res.body));
    assert.equal(res.body.error, 'invalid_input');
    assert.match(res.body.message, /not the PaymentSplitter/);
    const key = await f.t.key(s.wallet);
    assert.equal((await f.t.call(key, 'GET', '/api/split/deploy')).body.split.address, null, 'nothing was stored');
  });

  test('a genuine pre-deployed PaymentSplitter with the right recipients is accepted', async () => {
    const s = await signIn(f.t);
    const deployed = await deploySplit({ walletClient: f.tc.chain.walletClient!, publicClient: f.tc.chain.publicClient, recipients: recipientsOf(s) });
    const res = await admin(f.t, s, 'POST', '/api/split/deploy', { splitAddress: deployed.address, recipients: recipientsOf(s) });
    assert.equal(res.status, 200, JSON.stringify(res.body));
    assert.equal(res.body.split.address, deployed.address.toLowerCase());
  });
});
