/**
 * The merchant's split as the API serves it: its configuration and versions (src/domain/splits.ts,
 * split-setup.ts, split-versions.ts), its indexed transactions (src/domain/split-transactions.ts),
 * what its contracts hold (split-balances.ts) and its settlements (settlements.ts). Built once per
 * app (src/deps.ts) with its chain and deployer, so each route handler is one call with a params
 * object.
 */
import type { ChainDeps } from '../chain/client.ts';
import type { Deployer } from '../chain/deployer.ts';
import { splitChainOf } from '../chain/split-setup-chain.ts';
import type { Db } from '../db/client.ts';
import type { Config } from '../config.ts';
import type { RecipientBalances, Settlement, SplitAnswer, SplitBalances, SplitDeployed, SplitVersionCreated, SplitVersions } from '../contract/split.ts';
import { NoChain } from '../lib/errors.ts';
import { getSplitConfig } from '../domain/splits.ts';
import { setUpSplit, type DeployCaller, type PlatformShare, type SplitChain, type SplitSetupInput } from '../domain/split-setup.ts';
import { createSplitVersion, listSplitVersions, type SplitVersionInput } from '../domain/split-versions.ts';
import { listSplitTransactions, splitTransactionPages, type SplitTransactionView } from '../domain/split-transactions.ts';
import { merchantSplitBalances, type MerchantSplitBalances, type SplitBalances as Balances } from './split-balances.ts';
import { merchantSettlement, settlementCsv, type Settlement as SettlementData, type SettlementQuery } from './settlements.ts';

export interface SplitServiceOptions {
  db: Db;
  config: Pick<Config, 'platformRecipientAddress' | 'platformFeeBps' | 'splitDeploysPerDay' | 'splitDeploysApprovedOnly'>;
  /** Absent: balances answer 503 chain_unavailable, a given splitAddress is stored unverified and nothing deploys. */
  chain?: ChainDeps;
  /** Sends server-paid deployments with the app's nonce keeper (deps.deployer). */
  deployer?: Deployer;
  /** Whether the platform pays for this wallet's deployments (deps.auth, src/auth/sessions.ts). */
  approvals: { approvedForDeploys(wallet: string): Promise<boolean> };
  now?: () => number;
}

/** A new split, or a new version of one: the admin's recipients, and where the request comes from. */
export interface SplitDeployParams<Body> {
  wallet: string;
  body: Body;
  /** The client's budget address (src/gateway/client-address.ts budgetAddress). */
  source: string;
}

export class SplitService {
  private readonly now: () => number;
  private readonly platform: PlatformShare;
  private readonly splitChain: SplitChain | undefined;

  constructor(private readonly o: SplitServiceOptions) {
    this.now = o.now ?? Date.now;
    this.platform = { address: o.config.platformRecipientAddress, feeBps: o.config.platformFeeBps };
    this.splitChain = splitChainOf(o.chain, o.config.splitDeploysPerDay, o.deployer);
  }

  /** The chain's token, which the transactions and settlements name; null without a chain. */
  #token(): string | null {
    return this.o.chain?.usdc.address ?? null;
  }

  /** Who asks for a server-paid deployment; approval is asked only when the server would deploy. */
  #caller(p: { wallet: string; source: string }): DeployCaller {
    return { source: p.source, approvedOnly: this.o.config.splitDeploysApprovedOnly, approved: () => this.o.approvals.approvedForDeploys(p.wallet) };
  }

  /** GET /api/split/deploy: the current version; unconfigured is an answer, not an error. */
  async config(p: { wallet: string }): Promise<SplitAnswer> {
    return { split: await getSplitConfig(this.o.db, p.wallet) };
  }

  /** POST /api/split/deploy: the first call stores (and deploys or verifies) the split; later calls answer it. */
  async deploy(p: SplitDeployParams<SplitSetupInput>): Promise<SplitDeployed> {
    const result = await setUpSplit(this.o.db, p.wallet, p.body, this.platform, this.now(), this.splitChain, this.#caller(p));
    return result.idempotent ? { ok: true, split: result.split, idempotent: true } : { ok: true, split: result.split };
  }

  /** GET /api/admin/split/versions: every version, newest first. */
  async versions(p: { wallet: string }): Promise<SplitVersions> {
    return { versions: await listSplitVersions(this.o.db, p.wallet) };
  }

  /** POST /api/admin/split/versions: a new version, deployed or verified as the first split is. */
  async createVersion(p: SplitDeployParams<SplitVersionInput>): Promise<SplitVersionCreated> {
    const result = await createSplitVersion(this.o.db, p.wallet, p.body, this.platform, this.now(), this.splitChain, this.#caller(p));
    return result.idempotent ? { ok: true, version: result.version, idempotent: true } : { ok: true, version: result.version };
  }

  /** GET /api/split/transactions: the newest, capped. */
  async transactions(p: { wallet: string; address?: string }): Promise<SplitTransactionView[]> {
    return listSplitTransactions(this.o.db, p.wallet, p.address, this.#token());
  }

  /**
   * GET /api/split/transactions?format=csv: every matching transaction, a page at a time. The first
   * page is read before this returns, so an unreachable database is a 503 before anything is sent.
   */
  async exportTransactions(p: { wallet: string; address?: string }): Promise<AsyncGenerator<SplitTransactionView[]>> {
    const pages = splitTransactionPages(this.o.db, p.wallet, p.address, this.#token());
    const first = await pages.next();
    return (async function* () {
      if (first.done !== true) yield first.value;
      yield* pages;
    })();
  }

  /** GET /api/split/balances: each recipient's received, released and releasable, per version. */
  async recipientBalances(p: { wallet: string }): Promise<RecipientBalances> {
    const chain = this.#chain();
    const b = await merchantSplitBalances(this.o.db, chain, p.wallet);
    const rows = (v: Balances) =>
      v.recipients.map((r) => ({
        address: r.address,
        sharesBps: r.sharesBps,
        received: (r.released + r.releasable).toString(),
        released: r.released.toString(),
        releasable: r.releasable.toString(),
      }));
    return { split: b.address, token: b.token, decimals: chain.usdc.decimals, recipients: rows(b), version: b.version, versions: b.versions.map((v) => ({ version: v.version, split: v.address, recipients: rows(v) })) };
  }

  /** GET /api/admin/split/balances: what each version's contract holds, received and released. */
  async splitBalances(p: { wallet: string }): Promise<SplitBalances> {
    const chain = this.#chain();
    return splitBalancesBody(await merchantSplitBalances(this.o.db, chain, p.wallet), chain.usdc.decimals);
  }

  /** GET /api/split/settlements: the period's settlement, amounts as decimal strings of base units. */
  async settlement(p: { wallet: string; period: SettlementQuery }): Promise<Settlement> {
    return settlementBody(await this.#settle(p), this.#token());
  }

  /** GET /api/split/settlements?format=csv: the period's lines, and the file name that says which split and period. */
  async settlementCsv(p: { wallet: string; period: SettlementQuery }): Promise<{ fileName: string; csv: string }> {
    const s = await this.#settle(p);
    return { fileName: `settlement-${s.split ?? 'none'}-${s.from}-${s.to ?? 'now'}.csv`, csv: settlementCsv(s) };
  }

  #settle(p: { wallet: string; period: SettlementQuery }): Promise<SettlementData> {
    return merchantSettlement(this.o.db, p.wallet, p.period, this.o.config.platformRecipientAddress);
  }

  /** Balances are read from the contracts: an instance without a chain answers 503. */
  #chain(): ChainDeps {
    if (this.o.chain === undefined) throw new NoChain();
    return this.o.chain;
  }
}

function versionBalancesBody(b: Balances & { version: number }, decimals: number): Omit<SplitBalances, 'versions'> {
  return {
    version: b.version,
    address: b.address,
    token: b.token,
    decimals,
    totalReceived: b.totalReceived.toString(),
    totalReleased: b.totalReleased.toString(),
    balance: b.balance.toString(),
    recipients: b.recipients.map((r) => ({
      address: r.address,
      sharesBps: r.sharesBps,
      released: r.released.toString(),
      releasable: r.releasable.toString(),
    })),
  };
}

function splitBalancesBody(b: MerchantSplitBalances, decimals: number): SplitBalances {
  return { ...versionBalancesBody(b, decimals), versions: b.versions.map((v) => versionBalancesBody(v, decimals)) };
}

/** Amounts as decimal strings of base units, as the contract's Settlement has them. */
function settlementBody(s: SettlementData, token: string | null): Settlement {
  const units = (v: bigint) => v.toString();
  return {
    split: s.split,
    currency: s.currency,
    token,
    decimals: s.decimals,
    from: s.from,
    to: s.to,
    toBlock: s.toBlock === null ? null : units(s.toBlock),
    recipients: s.recipients.map((r) => ({ ...r, share: units(r.share), released: units(r.released), accrued: units(r.accrued), releasedToDate: units(r.releasedToDate) })),
    versions: s.versions,
    lines: s.lines.map((l) => ({
      split: l.split!,
      version: l.version!,
      receiptId: l.receiptId,
      transactionHash: l.transactionHash,
      logIndex: l.logIndex,
      blockNumber: units(l.blockNumber),
      timestamp: l.timestamp,
      gross: units(l.gross),
      shares: l.shares.map(units),
      platformFee: units(l.platformFee),
      unallocated: units(l.unallocated),
    })),
    totals: { gross: units(s.totals.gross), platformFee: units(s.totals.platformFee), unallocated: units(s.totals.unallocated), released: units(s.totals.released) },
  };
}
