/**
 * Small contracts the chain tests deploy to play a stranger or a buyer's wallet: compiled with
 * solc in the test, deployed once per test chain.
 */
import assert from 'node:assert/strict';
import solc from 'solc';
import { parseAbi, type Abi, type Address, type Hex } from 'viem';
import { devWallet, type TestChain } from './helpers.ts';

/** Compiles contract `name` from `source` (cancun, no optimizer); its ABI and creation code. */
export function compileContract(name: string, source: string): { abi: Abi; bytecode: Hex } {
  const file = `${name}.sol`;
  const out = JSON.parse(
    solc.compile(
      JSON.stringify({
        language: 'Solidity',
        sources: { [file]: { content: source } },
        settings: { evmVersion: 'cancun', outputSelection: { '*': { '*': ['abi', 'evm.bytecode.object'] } } },
      }),
    ),
  );
  const contract = out.contracts[file][name];
  return { abi: contract.abi, bytecode: `0x${contract.evm.bytecode.object}` };
}

/** Per chain, a contract deployed once (by the dev account that asked first). */
function oncePerChain(name: string, source: string) {
  const deployed = new WeakMap<TestChain, Promise<Address>>();
  return (tc: TestChain, from: number): Promise<Address> => {
    let address = deployed.get(tc);
    if (address === undefined) {
      address = (async () => {
        const hash = await devWallet(tc, from).deployContract({ abi: [], bytecode: compileContract(name, source).bytecode });
        return (await tc.chain.publicClient.waitForTransactionReceipt({ hash })).contractAddress!;
      })();
      deployed.set(tc, address);
    }
    return address;
  };
}

/** The contract that only emits ERC-20 Transfer logs (it moves nothing). */
const liar = oncePerChain(
  'Liar',
  `// SPDX-License-Identifier: MIT
pragma solidity ^0.8.20;
contract Liar {
  event Transfer(address indexed from, address indexed to, uint256 value);
  function claim(address to, uint256 value) external { emit Transfer(msg.sender, to, value); }
}`,
);
const LIAR_ABI = parseAbi(['function claim(address to, uint256 value)']);

/** A stranger's (dev account `from`) contract emits Transfer(stranger, to, value): a log, no money. */
export async function emitFakeTransfer(tc: TestChain, from: number, to: Hex, value: bigint): Promise<void> {
  const hash = await devWallet(tc, from).writeContract({ address: await liar(tc, from), abi: LIAR_ABI, functionName: 'claim', args: [to, value] });
  assert.equal((await tc.chain.publicClient.waitForTransactionReceipt({ hash })).status, 'success');
}

/**
 * A contract that pays several addresses in one transaction with transferFrom (Approval +
 * Transfer logs), deployed by dev account `from` the first time a test on `tc` asks.
 */
export const batchPayContract = oncePerChain(
  'BatchPay',
  `// SPDX-License-Identifier: MIT
pragma solidity ^0.8.20;
interface IERC20 { function transferFrom(address from, address to, uint256 value) external returns (bool); }
contract BatchPay {
  function pay(address token, address[] calldata to, uint256[] calldata amounts) external {
    for (uint256 i = 0; i < to.length; i++) require(IERC20(token).transferFrom(msg.sender, to[i], amounts[i]));
  }
}`,
);
export const BATCH_PAY_ABI = parseAbi(['function pay(address token, address[] to, uint256[] amounts)']);
