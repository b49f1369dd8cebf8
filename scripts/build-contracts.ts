/**
 * Compiles the dev chain's test USDC (src/chain/contracts/TestUSDC.sol) with the npm `solc`
 * package and writes its ABI and bytecode to src/chain/artifacts/TestUSDC.json. The artifact is
 * committed, so the service never needs a compiler at run time.
 *
 *   npm run build:contracts            rebuild the artifact
 *   npm run build:contracts -- --check exit 1 when the committed artifact is out of date
 */
import { createHash } from 'node:crypto';
import { readFileSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import solc from 'solc';

const require = createRequire(import.meta.url);
const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const SOURCE = 'src/chain/contracts/TestUSDC.sol';
const ARTIFACT = 'src/chain/artifacts/TestUSDC.json';
const CONTRACT = 'TestUSDC';
// Cancun is supported by anvil and by Base; pinning it keeps the bytecode independent of the
// compiler's default, which moves with each solc release.
const EVM_VERSION = 'cancun';

interface SolcOutput {
  errors?: { severity: 'error' | 'warning' | 'info'; formattedMessage: string }[];
  contracts?: Record<string, Record<string, { abi: unknown[]; evm: { bytecode: { object: string } } }>>;
}

function findImport(importPath: string): { contents: string } | { error: string } {
  try {
    return { contents: readFileSync(require.resolve(importPath), 'utf8') };
  } catch (err) {
    return { error: `cannot resolve ${importPath}: ${(err as Error).message}` };
  }
}

function compile(source: string): { abi: unknown[]; bytecode: string } {
  const input = {
    language: 'Solidity',
    sources: { [SOURCE]: { content: source } },
    settings: {
      evmVersion: EVM_VERSION,
      optimizer: { enabled: true, runs: 200 },
      // No metadata hash: the bytecode then depends only on the code, not on file paths.
      metadata: { bytecodeHash: 'none' },
      outputSelection: { '*': { '*': ['abi', 'evm.bytecode.object'] } },
    },
  };
  const output = JSON.parse(solc.compile(JSON.stringify(input), { import: findImport })) as SolcOutput;
  const errors = (output.errors ?? []).filter((e) => e.severity === 'error');
  if (errors.length > 0) throw new Error(errors.map((e) => e.formattedMessage).join('\n'));
  const contract = output.contracts?.[SOURCE]?.[CONTRACT];
  if (contract === undefined) throw new Error(`solc produced no ${CONTRACT}`);
  return { abi: contract.abi, bytecode: `0x${contract.evm.bytecode.object}` };
}

function main(): void {
  const check = process.argv.includes('--check');
  const source = readFileSync(path.join(root, SOURCE), 'utf8');
  const { abi, bytecode } = compile(source);
  const ozVersion = (JSON.parse(readFileSync(require.resolve('@openzeppelin/contracts/package.json'), 'utf8')) as { version: string }).version;
  const artifact = {
    contractName: CONTRACT,
    sourceName: SOURCE,
    sourceSha256: createHash('sha256').update(source).digest('hex'),
    compiler: { solc: solc.version(), evmVersion: EVM_VERSION, optimizerRuns: 200, openzeppelinContracts: ozVersion },
    abi,
    bytecode,
  };
  const text = JSON.stringify(artifact, null, 2) + '\n';
  const target = path.join(root, ARTIFACT);
  if (check) {
    const current = readFileSync(target, 'utf8');
    if (current !== text) {
      console.error(`${ARTIFACT} is out of date: run npm run build:contracts`);
      process.exit(1);
    }
    console.log(`${ARTIFACT} is up to date`);
    return;
  }
  writeFileSync(target, text);
  console.log(`wrote ${ARTIFACT} (${(bytecode.length - 2) / 2} bytes of bytecode)`);
}

try {
  main();
} catch (err) {
  console.error(err instanceof Error ? err.message : err);
  process.exit(1);
}
