/**
 * Compiles the project's own contracts with the npm `solc` package and writes each one's ABI and
 * bytecode to src/chain/artifacts/<Contract>.json. The artifacts are committed, so the service
 * never needs a compiler at run time.
 *
 *   TestUSDC                 the dev chain's test token (src/chain/contracts/TestUSDC.sol)
 *   PaymentForwarder         a receipt's payment address, deployed as a clone (PaymentForwarder.sol)
 *   PaymentForwarderFactory  deploys and sweeps the forwarders (PaymentForwarder.sol); version 1, kept
 *                            for receipts addressed through it
 *   PaymentForwarderV2, PaymentForwarderFactoryV2
 *                            version 2 (PaymentForwarderV2.sol): also sweeps native ETH, and relays
 *                            EIP-3009 authorizations (payAndSweep)
 *
 *   npm run build:contracts            rebuild the artifacts
 *   npm run build:contracts -- --check exit 1 when a committed artifact is out of date
 */
import { createHash } from 'node:crypto';
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import solcPackage from 'solc';

const require = createRequire(import.meta.url);
const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
// Cancun is supported by anvil and by Base; pinning it keeps the bytecode independent of the
// compiler's default, which moves with each solc release.
const EVM_VERSION = 'cancun';
const OPTIMIZER_RUNS = 200;

interface Target {
  source: string;
  contract: string;
  artifact: string;
  /** Also record the runtime code (immutables appear zero-filled there, as solc emits them). */
  deployedBytecode?: boolean;
}

const TARGETS: readonly Target[] = [
  { source: 'src/chain/contracts/TestUSDC.sol', contract: 'TestUSDC', artifact: 'src/chain/artifacts/TestUSDC.json' },
  {
    source: 'src/chain/contracts/PaymentForwarder.sol',
    contract: 'PaymentForwarder',
    artifact: 'src/chain/artifacts/PaymentForwarder.json',
    deployedBytecode: true,
  },
  {
    source: 'src/chain/contracts/PaymentForwarder.sol',
    contract: 'PaymentForwarderFactory',
    artifact: 'src/chain/artifacts/PaymentForwarderFactory.json',
    deployedBytecode: true,
  },
  {
    source: 'src/chain/contracts/PaymentForwarderV2.sol',
    contract: 'PaymentForwarderV2',
    artifact: 'src/chain/artifacts/PaymentForwarderV2.json',
    deployedBytecode: true,
  },
  {
    source: 'src/chain/contracts/PaymentForwarderV2.sol',
    contract: 'PaymentForwarderFactoryV2',
    artifact: 'src/chain/artifacts/PaymentForwarderFactoryV2.json',
    deployedBytecode: true,
  },
];

interface CompiledContract {
  abi: unknown[];
  evm: { bytecode: { object: string }; deployedBytecode?: { object: string } };
}

interface SolcOutput {
  errors?: { severity: 'error' | 'warning' | 'info'; formattedMessage: string }[];
  contracts?: Record<string, Record<string, CompiledContract>>;
}

/** The two calls this script makes, typed here: the package's own declarations type them as any. */
const solc = solcPackage as {
  compile(input: string, callbacks: { import: (path: string) => { contents: string } | { error: string } }): string;
  version(): string;
};

function findImport(importPath: string): { contents: string } | { error: string } {
  try {
    return { contents: readFileSync(require.resolve(importPath), 'utf8') };
  } catch (err) {
    return { error: `cannot resolve ${importPath}: ${(err as Error).message}` };
  }
}

/** Every contract of one source file. Each file is compiled on its own, as it always was. */
function compile(sourceName: string, source: string): Record<string, CompiledContract> {
  const input = {
    language: 'Solidity',
    sources: { [sourceName]: { content: source } },
    settings: {
      evmVersion: EVM_VERSION,
      optimizer: { enabled: true, runs: OPTIMIZER_RUNS },
      // No metadata hash: the bytecode then depends only on the code, not on file paths.
      metadata: { bytecodeHash: 'none' },
      outputSelection: { '*': { '*': ['abi', 'evm.bytecode.object', 'evm.deployedBytecode.object'] } },
    },
  };
  const output = JSON.parse(solc.compile(JSON.stringify(input), { import: findImport })) as SolcOutput;
  const errors = (output.errors ?? []).filter((e) => e.severity === 'error');
  if (errors.length > 0) throw new Error(errors.map((e) => e.formattedMessage).join('\n'));
  const contracts = output.contracts?.[sourceName];
  if (contracts === undefined) throw new Error(`solc produced nothing for ${sourceName}`);
  return contracts;
}

function artifactText(target: Target, source: string, compiled: CompiledContract, ozVersion: string): string {
  const artifact: Record<string, unknown> = {
    contractName: target.contract,
    sourceName: target.source,
    sourceSha256: createHash('sha256').update(source).digest('hex'),
    compiler: { solc: solc.version(), evmVersion: EVM_VERSION, optimizerRuns: OPTIMIZER_RUNS, openzeppelinContracts: ozVersion },
    abi: compiled.abi,
    bytecode: `0x${compiled.evm.bytecode.object}`,
  };
  if (target.deployedBytecode === true) {
    const deployed = compiled.evm.deployedBytecode?.object;
    if (deployed === undefined) throw new Error(`solc produced no deployed bytecode for ${target.contract}`);
    artifact.deployedBytecode = `0x${deployed}`;
  }
  return JSON.stringify(artifact, null, 2) + '\n';
}

function main(): void {
  const check = process.argv.includes('--check');
  const ozVersion = (JSON.parse(readFileSync(require.resolve('@openzeppelin/contracts/package.json'), 'utf8')) as { version: string }).version;
  const compiled = new Map<string, { source: string; contracts: Record<string, CompiledContract> }>();
  let stale = 0;
  for (const target of TARGETS) {
    let unit = compiled.get(target.source);
    if (unit === undefined) {
      const source = readFileSync(path.join(root, target.source), 'utf8');
      unit = { source, contracts: compile(target.source, source) };
      compiled.set(target.source, unit);
    }
    const contract = unit.contracts[target.contract];
    if (contract === undefined) throw new Error(`solc produced no ${target.contract} in ${target.source}`);
    const text = artifactText(target, unit.source, contract, ozVersion);
    const file = path.join(root, target.artifact);
    if (check) {
      if (!existsSync(file) || readFileSync(file, 'utf8') !== text) {
        console.error(`${target.artifact} is out of date: run npm run build:contracts`);
        stale++;
      } else {
        console.log(`${target.artifact} is up to date`);
      }
      continue;
    }
    writeFileSync(file, text);
    console.log(`wrote ${target.artifact} (${(contract.evm.bytecode.object.length) / 2} bytes of bytecode)`);
  }
  if (stale > 0) process.exit(1);
}

try {
  main();
} catch (err) {
  console.error(err instanceof Error ? err.message : err);
  process.exit(1);
}
