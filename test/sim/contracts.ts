/**
 * The simulation's own contract, SimTraffic: what fills a mainnet-shaped block cheaply.
 *
 *   spam(n, seed)              n foreign `Transfer` logs emitted by the contract itself, between
 *                              pseudo-random addresses: another token's traffic, no money moved
 *   flood(targets, n, value)   n fake `Transfer` logs into `targets` in turn: a stranger's attack on
 *                              the worker (payment addresses among the targets)
 *   pay(token, n, seed)        n real transfers of `token` from the contract's balance to
 *                              pseudo-random addresses: the accepted token's ordinary traffic
 *   scatter(token, targets, v) a real transfer of `v` to each target: dust sent to many addresses
 *
 * Compiled with the npm `solc` as scripts/build-contracts.ts compiles the project's contracts, once
 * per machine: the artifact is cached in the temporary directory under the source's hash.
 */
import { createHash } from 'node:crypto';
import { existsSync, readFileSync, renameSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import solcPackage from 'solc';
import { parseAbi, type Hex } from 'viem';

export const SIM_TRAFFIC_SOURCE = `// SPDX-License-Identifier: MIT
pragma solidity ^0.8.20;
interface IERC20Transfer { function transfer(address to, uint256 value) external returns (bool); }
contract SimTraffic {
  event Transfer(address indexed from, address indexed to, uint256 value);
  function spam(uint256 n, uint256 seed) external {
    for (uint256 i = 0; i < n; i++) {
      uint256 h = uint256(keccak256(abi.encode(seed, i)));
      emit Transfer(address(uint160(h)), address(uint160(h >> 96)), h % 1e12);
    }
  }
  function flood(address[] calldata targets, uint256 n, uint256 value) external {
    uint256 count = targets.length;
    for (uint256 i = 0; i < n; i++) {
      emit Transfer(address(uint160(uint256(keccak256(abi.encode(i, value))))), targets[i % count], value);
    }
  }
  function scatter(address token, address[] calldata targets, uint256 value) external {
    for (uint256 i = 0; i < targets.length; i++) require(IERC20Transfer(token).transfer(targets[i], value));
  }
  function pay(address token, uint256 n, uint256 seed) external {
    for (uint256 i = 0; i < n; i++) {
      uint256 h = uint256(keccak256(abi.encode(seed, i, token)));
      require(IERC20Transfer(token).transfer(address(uint160(h)), 1 + (h >> 160) % 1e9));
    }
  }
}
`;

export const simTrafficAbi = parseAbi([
  'event Transfer(address indexed from, address indexed to, uint256 value)',
  'function spam(uint256 n, uint256 seed)',
  'function flood(address[] targets, uint256 n, uint256 value)',
  'function pay(address token, uint256 n, uint256 seed)',
  'function scatter(address token, address[] targets, uint256 value)',
]);

const solc = solcPackage as { compile(input: string): string; version(): string };

/** SimTraffic's creation code, compiled once per machine. */
export function simTrafficBytecode(): Hex {
  const key = createHash('sha256').update(solc.version()).update(SIM_TRAFFIC_SOURCE).digest('hex').slice(0, 16);
  const cached = path.join(tmpdir(), `splitline-sim-traffic-${key}.hex`);
  if (existsSync(cached)) return readFileSync(cached, 'utf8') as Hex;
  const out = JSON.parse(
    solc.compile(
      JSON.stringify({
        language: 'Solidity',
        sources: { 'SimTraffic.sol': { content: SIM_TRAFFIC_SOURCE } },
        settings: { evmVersion: 'cancun', optimizer: { enabled: true, runs: 200 }, outputSelection: { '*': { '*': ['evm.bytecode.object'] } } },
      }),
    ),
  ) as { errors?: { severity: string; formattedMessage: string }[]; contracts: Record<string, Record<string, { evm: { bytecode: { object: string } } }>> };
  const errors = (out.errors ?? []).filter((e) => e.severity === 'error');
  if (errors.length > 0) throw new Error(`SimTraffic does not compile:\n${errors.map((e) => e.formattedMessage).join('\n')}`);
  const bytecode: Hex = `0x${out.contracts['SimTraffic.sol']!.SimTraffic!.evm.bytecode.object}`;
  // Renamed into place, so a concurrent reader never sees half a file.
  writeFileSync(`${cached}.${process.pid}`, bytecode);
  renameSync(`${cached}.${process.pid}`, cached);
  return bytecode;
}
