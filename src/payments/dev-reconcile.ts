/**
 * Keeps the database consistent with the dev chain. The chain's state normally survives a
 * restart (anvil's state file), but it can be lost: DATA_DIR wiped while PostgreSQL kept its
 * data, a crash inside the dump interval, an unreadable state file. A merchant's stored split
 * address would then point at nothing, and test payments would vanish into it. So at start and
 * after every anvil restart, each stored split address without code on the dev chain gets its
 * PaymentSplitter deployed again with the stored recipients, and the new address is stored.
 */
import { and, eq, isNotNull } from 'drizzle-orm';
import type { Logger } from 'pino';
import { getAddress } from 'viem';
import type { Db } from '../db/client.ts';
import { splitConfigs, splitVersions } from '../db/schema.ts';
import type { ChainDeps } from '../chain/client.ts';
import { Deployer } from '../chain/deployer.ts';
import { deploySplit } from '../chain/split-contract.ts';
import { forgetUnpaidPayAddresses } from './pay-address.ts';

export interface RedeployedSplit {
  wallet: string;
  previous: string;
  address: string;
}

export async function redeployMissingDevSplits(p: { db: Db; chain: ChainDeps; logger: Logger; deployer?: Deployer }): Promise<RedeployedSplit[]> {
  const { chain, logger } = p;
  const walletClient = chain.walletClient;
  if (chain.dev === undefined || walletClient === undefined) return [];
  // Every version: receipts of an earlier one still pay into its contract.
  const rows = await p.db
    .select({ wallet: splitVersions.wallet, version: splitVersions.version, address: splitVersions.address, recipients: splitVersions.recipients })
    .from(splitVersions)
    .where(isNotNull(splitVersions.address));
  const redeployed: RedeployedSplit[] = [];
  for (const row of rows) {
    if (row.address === null) continue;
    const previous = row.address;
    const code = await chain.publicClient.getCode({ address: getAddress(row.address) });
    if (code !== undefined && code !== '0x') continue;
    const deployed = await deploySplit({ walletClient, publicClient: chain.publicClient, recipients: row.recipients, deployer: p.deployer ?? new Deployer(walletClient, chain.publicClient, { db: p.db, logger }) });
    const address = deployed.address.toLowerCase();
    await p.db.transaction(async (tx) => {
      // The current version lives in split_configs (its trigger writes split_versions); an earlier one only in split_versions.
      const current = await tx.update(splitConfigs).set({ address }).where(and(eq(splitConfigs.wallet, row.wallet), eq(splitConfigs.version, row.version))).returning();
      if (current.length === 0) await tx.update(splitVersions).set({ address }).where(and(eq(splitVersions.wallet, row.wallet), eq(splitVersions.version, row.version)));
      // Payment addresses are derived from the split: unpaid receipts get new ones.
      await forgetUnpaidPayAddresses(tx, row.wallet, previous);
    });
    logger.warn({ wallet: row.wallet, previous: row.address, address }, 'dev chain: split contract missing from the chain; deployed it again');
    redeployed.push({ wallet: row.wallet, previous: row.address, address });
  }
  return redeployed;
}

/** Runs the check now and after every anvil restart; a failure is logged, never fatal. */
export async function keepDevSplitsConsistent(p: { db: Db; chain: ChainDeps; logger: Logger; deployer?: Deployer }): Promise<void> {
  const run = async () => {
    await redeployMissingDevSplits(p).catch((err: unknown) =>
      p.logger.warn({ err }, 'dev chain: could not check stored split contracts against the chain'),
    );
  };
  p.chain.dev?.process?.onRestart(run);
  await run();
}
