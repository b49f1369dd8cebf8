/**
 * The service's dependencies, built from configuration. Tests build the same set with their own
 * configuration, so every test runs the real parts.
 */
import path from 'node:path';
import { Redis } from 'ioredis';
import type { Logger } from 'pino';
import type { Config } from './config.ts';
import { openDatabase, type Database } from './db/client.ts';
import { KeyResolver } from './gateway/key-resolver.ts';
import { MemoryRateLimiter, RedisRateLimiter, type RateLimiter } from './gateway/rate-limit.ts';
import { Journal } from './journal/journal.ts';
import { returnUrlPolicy } from './domain/return-url.ts';
import { ReceiptService } from './domain/receipt-service.ts';
import { OrderService } from './domain/orders.ts';
import { ShopService } from './domain/shop-service.ts';
import { RefundService } from './domain/refund-service.ts';
import { InventoryService } from './domain/inventory-service.ts';
import { PayoutSettingsService } from './payments/payouts.ts';
import { EventService } from './domain/event-service.ts';
import { WebhookEndpointService } from './webhooks/endpoint-service.ts';
import { SubscriptionService } from './gateway/subscription-service.ts';
import { SplitService } from './payments/split-service.ts';
import { SweepService } from './payments/sweep-service.ts';
import { TerminalService } from './domain/terminal.ts';
import { UserDirectory } from './domain/user-directory.ts';
import { createStores, type Stores } from './db/stores.ts';
import { AuthService } from './auth/sessions.ts';
import { Purger } from './auth/purge.ts';
import { loadJwtKey } from './auth/secret.ts';
import { createSignatureVerifier } from './auth/signature.ts';
import type { BlobStore } from './storage/blob-store.ts';
import { createBlobStore } from './storage/index.ts';
import { ChainWorker } from './payments/worker.ts';
import { RelayGasMeter } from './payments/relay-gas.ts';
import { TokenDomains } from './payments/gasless.ts';
import { PaymentPage } from './payments/payment-page.ts';
import { WebhookDispatcher } from './webhooks/dispatcher.ts';
import { webhookTargetPolicy } from './webhooks/ssrf.ts';
import { createLogger } from './logger.ts';
import { startChain, type ChainDeps } from './chain/client.ts';
import { Deployer, deployerOf } from './chain/deployer.ts';
import { PayoutWorker } from './payments/payout-worker.ts';
import { keepDevSplitsConsistent, redeployMissingDevSplits } from './payments/dev-reconcile.ts';

export interface Deps {
  config: Config;
  logger: Logger;
  database: Database;
  /** The stores of the database's tables: their statements, batches and write-id claims (src/db/stores.ts). */
  stores: Stores;
  limiter: RateLimiter;
  keys: KeyResolver;
  journal: Journal;
  /** Receipts for the API: the database, else the journal (src/domain/receipt-service.ts). */
  receipts: ReceiptService;
  /** Orders for the API: the rules of src/domain/orders.ts, placed in batches by stores.orders. */
  orders: OrderService;
  /**
   * Users for the API: the directory searches read, who is live, the signed-in wallet's profile,
   * and the writes that refresh the directory (src/domain/user-directory.ts).
   */
  users: UserDirectory;
  /** The merchant's split: configuration, versions, transactions, balances, settlements (src/payments/split-service.ts). */
  splits: SplitService;
  /** Manual sweeps and whether sweeps wait, for the admin app (src/payments/sweep-service.ts). */
  sweeps: SweepService;
  /** The shop configuration: read with a key, saved from the admin app (src/domain/shop-service.ts). */
  shop: ShopService;
  /** Refunds from the admin app: recorded (checked on the chain when they name a transaction) and listed (src/domain/refund-service.ts). */
  refunds: RefundService;
  /** Inventory for the API: listed and upserted by sku (src/domain/inventory-service.ts). */
  inventory: InventoryService;
  /** POS terminal sales from the admin app (src/domain/terminal.ts TerminalService). */
  terminal: TerminalService;
  /** The signed-in merchant's automatic payout settings (src/payments/payouts.ts PayoutSettingsService). */
  payouts: PayoutSettingsService;
  /** The events API: the outbox read back, a page at a time (src/domain/event-service.ts). */
  events: EventService;
  /** The signed-in merchant's webhook endpoints and their deliveries (src/webhooks/endpoint-service.ts). */
  webhookEndpoints: WebhookEndpointService;
  /** Subscription keys from the admin app, dropped from the key cache when rotated or revoked (src/gateway/subscription-service.ts). */
  subscriptions: SubscriptionService;
  auth: AuthService;
  blobs: BlobStore;
  /** Sends due webhooks while this instance holds the webhooks lease. */
  webhooks: WebhookDispatcher;
  /** Deletes expired sign-in challenges and ended sessions on a timer (src/auth/purge.ts). */
  purger: Purger;
  /** Verifies payments and indexes split transactions while this instance holds the chain lease. */
  chainWorker?: ChainWorker;
  /** Automatic payouts (src/payments/payout-worker.ts); absent without a chain or a deployer to pay the gas. */
  payoutWorker?: PayoutWorker;
  /** Counts the gas this instance's gasless relays spend (src/payments/relay-gas.ts); with a chain. */
  relayGas?: RelayGasMeter;
  /** The tokens' EIP-712 domains gasless payments read, once per token (src/payments/gasless.ts). */
  tokenDomains: TokenDomains;
  /** The payment page's API: what a payment URL shows, its statuses, hints and gasless payments (src/payments/payment-page.ts). */
  paymentPage: PaymentPage;
  /** Starts the background workers (main.ts does; tests start what they exercise). */
  startWorkers(): void;
  /** The chain, when started (DepsOptions.chain); absent in tests that do not need one. */
  chain?: ChainDeps;
  /**
   * Sends the deployer's transactions other than sweeps (split deployments, gasless relays) with
   * the nonce keeper of this database (src/chain/deployer.ts); absent without a key for gas.
   */
  deployer?: Deployer;
  close(): Promise<void>;
}

export interface DepsOptions {
  logger?: Logger;
  /** PGlite location override (tests use 'memory://'). */
  pgliteDir?: string;
  /** Prefix for Redis keys, so tests sharing one Redis stay apart. */
  redisPrefix?: string;
  /** The clock of the subscription-key cache (tests move it instead of waiting out the TTL). */
  keyClock?: () => number;
  /** How often expired challenges and sessions are purged (tests shorten it). */
  purgeIntervalMs?: number;
  /** How often the journal looks for the database while writes wait (tests shorten it). */
  journalReplayIntervalMs?: number;
  /**
   * true: start the configured chain (CHAIN=dev boots anvil) and stop it on close; main.ts does.
   * A ChainDeps: use that one, owned by the caller (a test file sharing one anvil among apps).
   * Absent or false: no chain, which keeps the many test apps fast.
   */
  chain?: boolean | ChainDeps;
}

export function connectRedis(url: string): Redis {
  return new Redis(url, {
    // Fail fast instead of queueing while Redis is away; the rate limiter then fails open.
    enableOfflineQueue: false,
    maxRetriesPerRequest: 1,
    commandTimeout: 500,
    lazyConnect: false,
    // No auto-pipelining: the rate limiter already sends one write per event-loop turn, and
    // ioredis would wrap each of those in a pipeline of its own.
  });
}

/** How long a start waits for Redis before serving with the limiter failing open. */
const REDIS_READY_WAIT_MS = 3_000;

/** Whether the connection is ready within `ms`; an unreachable Redis answers false at the deadline. */
function redisReady(redis: Redis, ms: number): Promise<boolean> {
  if (redis.status === 'ready') return Promise.resolve(true);
  return new Promise((resolve) => {
    const timer = setTimeout(() => {
      redis.off('ready', onReady);
      resolve(false);
    }, ms);
    const onReady = () => {
      clearTimeout(timer);
      resolve(true);
    };
    redis.once('ready', onReady);
  });
}

export async function createDeps(config: Config, opts: DepsOptions = {}): Promise<Deps> {
  const logger = opts.logger ?? createLogger(config.logLevel);
  const database = await openDatabase({
    databaseUrl: config.databaseUrl,
    dataDir: opts.pgliteDir ?? config.dataDir,
    queryTimeoutMs: config.dbQueryTimeoutMs,
    onCreate: (location) => logger.info({ location }, 'creating the embedded database (first start in this DATA_DIR; a few seconds)'),
    // PostgreSQL unreachable: start anyway, degraded, and migrate once it answers (src/db/client.ts).
    degradedStart: { logger },
  });
  const stores = createStores(database.db);
  let limiter: RateLimiter;
  if (config.redisUrl !== undefined) {
    const redis = connectRedis(config.redisUrl);
    let lastWarn = 0;
    redis.on('error', (err) => {
      if (Date.now() - lastWarn > 30_000) {
        lastWarn = Date.now();
        logger.warn({ err: err.message }, 'redis unavailable; rate limits fail open');
      }
    });
    // Commands are refused until the connection is up (no offline queue), so a request served
    // before then would go uncounted: the first requests after a start would escape the limits.
    if (!(await redisReady(redis, REDIS_READY_WAIT_MS))) {
      logger.warn({ waitedMs: REDIS_READY_WAIT_MS }, 'redis not ready at start; rate limits fail open until it is');
    }
    limiter = new RedisRateLimiter(redis, `${opts.redisPrefix ?? 'splitline'}:rl:`, (err) =>
      logger.debug({ err }, 'rate limiter failed open'),
    );
  } else {
    limiter = new MemoryRateLimiter();
  }
  // Keys the database confirmed, remembered as hashes across restarts: a start while it is
  // unreachable still knows its callers (src/gateway/key-resolver.ts).
  const keys = await KeyResolver.open(database.db, { ttlMs: config.keyCacheTtlMs, file: path.join(config.dataDir, 'keys-seen.json'), logger, now: opts.keyClock });
  const journal = await Journal.open(config.dataDir, {
    database,
    receipts: stores.receipts,
    claims: stores.claims,
    logger,
    siteUrl: config.siteUrl,
    brandName: config.brandName,
    replayIntervalMs: opts.journalReplayIntervalMs,
    dependencyWaitMs: config.journalWaitMinutes * 60_000,
  });
  const ownChain = opts.chain === true ? await startChain({ config, logger, db: database.db }) : undefined;
  const chain = ownChain ?? (typeof opts.chain === 'object' ? opts.chain : undefined);
  const deployer = deployerOf(chain, { db: database.db, maxFeeWei: config.maxFeeWei, logger });
  if (chain?.dev !== undefined) {
    await keepDevSplitsConsistent({ db: database.db, chain, logger, deployer });
    // Started while PostgreSQL was unreachable, the check above could not read the splits.
    void database.degradedStart?.then(() =>
      redeployMissingDevSplits({ db: database.db, chain, logger, deployer }).catch((err: unknown) =>
        logger.warn({ err }, 'dev chain: could not check stored split contracts against the chain'),
      ),
    );
  }
  const secret = loadJwtKey(config);
  const auth = new AuthService({
    db: database.db,
    key: secret,
    chainId: config.chainId,
    siteUrl: config.siteUrl,
    superadmins: config.superadminWallets,
    verify: createSignatureVerifier(chain?.publicClient),
  });
  const receipts = new ReceiptService({
    db: database.db,
    store: stores.receipts,
    claims: stores.claims,
    journal,
    siteUrl: config.siteUrl,
    brandName: config.brandName,
    receiptTtlMinutes: config.receiptTtlMinutes,
    payTokenSecret: secret,
    usdcAddress: chain?.usdc.address,
    returnUrlPolicy: returnUrlPolicy(config),
  });
  const orders = new OrderService({
    returnUrlPolicy: returnUrlPolicy(config),
    orders: stores.orders,
    siteUrl: config.siteUrl,
    fallbackBrand: config.brandName,
    platformRecipientAddress: config.platformRecipientAddress,
    receiptTtlMinutes: config.receiptTtlMinutes,
  });
  const purger = new Purger({ db: database.db, auth, claims: stores.claims, logger, intervalMs: opts.purgeIntervalMs });
  const blobs = await createBlobStore(config);
  const webhooks = new WebhookDispatcher({
    db: database.db,
    logger,
    ...webhookTargetPolicy(config),
    leaseTtlMs: config.leaseTtlMs,
  });
  const chainWorker =
    chain === undefined
      ? undefined
      : new ChainWorker({
          db: database.db,
          chain,
          logger,
          confirmations: config.confirmations,
          maxFeeWei: config.maxFeeWei,
          sweepDustCents: config.sweepDustCents,
          balanceTokens: config.balanceTokens,
          platformRecipient: config.platformRecipientAddress,
          leaseTtlMs: config.leaseTtlMs,
          intervalMs: config.chainPollMs,
          blockTimeSeconds: config.chainBlockSeconds,
          scanLimits: {
            maxRange: BigInt(config.rpcLogsMaxRange),
            callsPerPass: config.rpcLogsCallsPerPass,
            horizon: BigInt(config.rpcLagHorizonBlocks),
          },
        });
  const payoutWorker =
    chain === undefined || deployer === undefined ? undefined : new PayoutWorker({ db: database.db, chain, deployer, logger, leaseTtlMs: config.leaseTtlMs });
  const relayGas = chain === undefined ? undefined : new RelayGasMeter({ db: database.db, chain, logger });
  const users = new UserDirectory(database.db);
  const tokenDomains = new TokenDomains();
  const paymentPage = new PaymentPage({ db: database.db, limiter, brandName: config.brandName, tokenDomains, chain, deployer, chainWorker, relayGas });
  return {
    config,
    logger,
    database,
    stores,
    limiter,
    keys,
    journal,
    receipts,
    orders,
    users,
    splits: new SplitService({ db: database.db, config, chain, deployer, approvals: auth }),
    sweeps: new SweepService({ db: database.db, chain }),
    shop: new ShopService({ db: database.db, brandName: config.brandName }),
    refunds: new RefundService({ db: database.db, claims: stores.claims, chain, confirmations: config.confirmations }),
    inventory: new InventoryService({ db: database.db, claims: stores.claims }),
    terminal: new TerminalService({
      db: database.db,
      receipts: stores.receipts,
      claims: stores.claims,
      siteUrl: config.siteUrl,
      receiptTtlMinutes: config.receiptTtlMinutes,
    }),
    payouts: new PayoutSettingsService({ db: database.db, automatic: payoutWorker !== undefined }),
    events: new EventService({ db: database.db }),
    webhookEndpoints: new WebhookEndpointService({ db: database.db, policy: webhookTargetPolicy(config) }),
    subscriptions: new SubscriptionService({ db: database.db, keys }),
    auth,
    chain,
    deployer,
    blobs,
    webhooks,
    chainWorker,
    payoutWorker,
    relayGas,
    tokenDomains,
    paymentPage,
    purger,
    startWorkers() {
      webhooks.start();
      chainWorker?.start();
      payoutWorker?.start();
      purger.start();
    },
    async close() {
      await purger.stop();
      await chainWorker?.stop();
      await payoutWorker?.stop();
      await relayGas?.close();
      await webhooks.stop();
      await journal.close();
      await keys.close();
      await blobs.close();
      await limiter.close();
      await database.close();
      await ownChain?.close();
    },
  };
}
