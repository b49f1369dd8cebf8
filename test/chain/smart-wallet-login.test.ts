/**
 * Sign-in with a smart-contract wallet (EIP-1271): the contract, not a recovered key, says whether
 * a signature is valid, so the service asks it through the chain client.
 */
import assert from 'node:assert/strict';
import { createRequire } from 'node:module';
import { readFileSync } from 'node:fs';
import { after, before, test } from 'node:test';
import solc from 'solc';
import { createWalletClient, http, type Abi, type Hex } from 'viem';
import { devAccount } from '../../src/chain/dev-accounts.ts';
import type { TestApp } from '../helpers/app.ts';
import { challenge, newAccount, sign } from '../helpers/session.ts';
import { startChainApp, startTestChain, type TestChain } from './helpers.ts';

const require = createRequire(import.meta.url);
const SOURCE = `// SPDX-License-Identifier: MIT
pragma solidity ^0.8.20;
import "@openzeppelin/contracts/utils/cryptography/ECDSA.sol";
/// A minimal smart-contract wallet: valid signatures are its owner's.
contract TestSmartWallet {
    address public immutable owner;
    constructor(address owner_) { owner = owner_; }
    function isValidSignature(bytes32 hash, bytes memory signature) external view returns (bytes4) {
        (address signer, ECDSA.RecoverError err) = ECDSA.tryRecover(hash, signature);
        return err == ECDSA.RecoverError.NoError && signer == owner ? bytes4(0x1626ba7e) : bytes4(0xffffffff);
    }
}`;

function compileWallet(): { abi: Abi; bytecode: Hex } {
  const input = {
    language: 'Solidity',
    sources: { 'TestSmartWallet.sol': { content: SOURCE } },
    settings: { outputSelection: { '*': { '*': ['abi', 'evm.bytecode.object'] } } },
  };
  const findImport = (p: string) => {
    try {
      return { contents: readFileSync(require.resolve(p), 'utf8') };
    } catch (err) {
      return { error: `cannot resolve ${p}: ${(err as Error).message}` };
    }
  };
  const out = JSON.parse(solc.compile(JSON.stringify(input), { import: findImport }));
  const errors = (out.errors ?? []).filter((e: { severity: string }) => e.severity === 'error');
  if (errors.length > 0) throw new Error(JSON.stringify(errors));
  const c = out.contracts['TestSmartWallet.sol'].TestSmartWallet;
  return { abi: c.abi, bytecode: `0x${c.evm.bytecode.object}` };
}

let tc: TestChain;
let t: TestApp;
let wallet: Hex;
const owner = newAccount();

before(async () => {
  tc = await startTestChain();
  t = await startChainApp(tc.chain);
  const { abi, bytecode } = compileWallet();
  const deployer = createWalletClient({ chain: tc.chain.publicClient.chain, transport: http(tc.chain.rpcUrl), account: devAccount(3) });
  const hash = await deployer.deployContract({ abi, bytecode, args: [owner.address] });
  const receipt = await tc.chain.publicClient.waitForTransactionReceipt({ hash });
  wallet = receipt.contractAddress!;
});
after(async () => {
  await t?.close();
  await tc?.close();
});

test("a contract wallet signs in with its owner's signature, checked through EIP-1271", async () => {
  const { nonce, typedData } = await challenge(t, wallet);
  const signature = await sign(owner, typedData);
  const res = await t.call(null, 'POST', '/api/auth/login', { wallet, nonce, signature });
  assert.equal(res.status, 200, JSON.stringify(res.body));
  assert.equal(res.body.wallet, wallet.toLowerCase());
});

test('a signature the contract does not accept is refused', async () => {
  const { nonce, typedData } = await challenge(t, wallet);
  const signature = await sign(newAccount(), typedData);
  const res = await t.call(null, 'POST', '/api/auth/login', { wallet, nonce, signature });
  assert.equal(res.status, 401);
  assert.equal(res.body.error, 'unauthorized');
});
