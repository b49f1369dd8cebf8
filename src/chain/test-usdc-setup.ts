/**
 * Makes sure the dev chain holds the test USDC, and records where. The record
 * (<dataDir>/devchain/deployment.json) is checked against the chain at every start: a recorded
 * address without the token's code (the state file was lost, reset or unreadable) means the
 * token is deployed again and the new address recorded.
 *
 * On an empty chain the deployer's first transaction is this deployment, so the token lands at
 * the same address every time (CREATE address of the deployer at nonce 0): clients and wallets
 * that remembered it stay right even after the chain is rebuilt.
 */
import { existsSync, readFileSync, renameSync, writeFileSync } from 'node:fs';
import { getAddress, getContractAddress, isAddress, type Account, type Address, type Chain, type PublicClient, type Transport, type WalletClient } from 'viem';
import type { Logger } from 'pino';
import { DEV_USDC_PER_ACCOUNT } from './dev-accounts.ts';
import { isContractRefusal, TestUsdcError } from './errors.ts';
import { deployTestUsdc, readTokenInfo, type TokenInfo } from './test-usdc.ts';

export interface TestUsdcRecord {
  chainId: number;
  usdcAddress: Address;
  deployer: Address;
  /** Null when the token was found on the chain rather than deployed by this record's writer. */
  transactionHash: string | null;
  blockNumber: string | null;
  deployedAt: string;
}

export interface EnsureTestUsdcParams {
  walletClient: WalletClient<Transport, Chain, Account>;
  publicClient: PublicClient<Transport, Chain>;
  holders: readonly Address[];
  recordPath: string;
  logger: Logger;
}

export function readTestUsdcRecord(recordPath: string): TestUsdcRecord | undefined {
  if (!existsSync(recordPath)) return undefined;
  try {
    const parsed = JSON.parse(readFileSync(recordPath, 'utf8')) as Partial<TestUsdcRecord>;
    return typeof parsed.usdcAddress === 'string' && isAddress(parsed.usdcAddress) ? (parsed as TestUsdcRecord) : undefined;
  } catch (err) {
    throw new TestUsdcError('check', undefined, { cause: err });
  }
}

function writeRecord(recordPath: string, record: TestUsdcRecord): void {
  const temp = `${recordPath}.tmp`;
  writeFileSync(temp, JSON.stringify(record, null, 2) + '\n', { mode: 0o600 });
  renameSync(temp, recordPath);
}

/** The token at `address` when it is a 6-decimal USDC; null when there is none there. */
async function usableToken(publicClient: PublicClient<Transport, Chain>, address: Address): Promise<TokenInfo | null> {
  try {
    const info = await readTokenInfo({ publicClient, address });
    return info !== null && info.decimals === 6 && info.symbol === 'USDC' ? info : null;
  } catch (err) {
    if (err instanceof TestUsdcError && isContractRefusal(err.cause)) return null;
    throw err;
  }
}

export async function ensureTestUsdc(p: EnsureTestUsdcParams): Promise<TokenInfo> {
  const log = p.logger;
  const deployer = p.walletClient.account.address;
  const record = readTestUsdcRecord(p.recordPath);
  const candidates = [record?.usdcAddress, getContractAddress({ from: deployer, nonce: 0n })].filter(
    (a): a is Address => a !== undefined,
  );
  for (const candidate of new Set(candidates.map((a) => getAddress(a)))) {
    const found = await usableToken(p.publicClient, candidate);
    if (found === null) continue;
    if (record?.usdcAddress === undefined || getAddress(record.usdcAddress) !== found.address) {
      writeRecord(p.recordPath, { chainId: p.publicClient.chain.id, usdcAddress: found.address, deployer, transactionHash: null, blockNumber: null, deployedAt: new Date().toISOString() });
    }
    log.info({ usdc: found.address }, 'dev chain: test USDC found');
    return found;
  }
  if (record !== undefined) {
    log.warn({ recorded: record.usdcAddress }, 'dev chain: the recorded test USDC has no code on the chain (state lost or reset); deploying it again');
  }
  log.info({ holders: p.holders.length, deployer }, 'dev chain: deploying test USDC and funding the dev accounts');
  const deployed = await deployTestUsdc({ ...p, amountEach: DEV_USDC_PER_ACCOUNT });
  writeRecord(p.recordPath, {
    chainId: p.publicClient.chain.id,
    usdcAddress: deployed.address,
    deployer,
    transactionHash: deployed.transactionHash,
    blockNumber: deployed.blockNumber.toString(),
    deployedAt: new Date().toISOString(),
  });
  log.info({ usdc: deployed.address, eachAccount: '1000000 USDC' }, 'dev chain: test USDC deployed');
  return { address: deployed.address, decimals: 6, symbol: 'USDC' };
}
