/**
 * The only reader of process.env. Every setting is parsed and checked here, and every bad value
 * is reported at once, so a misconfigured deployment fails at start-up with a full list.
 */
import { isIP } from 'node:net';
import { isAddress, normalizeWallet } from './domain/wallet.ts';

export type ChainName = 'dev' | 'base' | 'base-sepolia';
export type ContainerType = 'platform' | 'partner';

export interface Config {
  port: number;
  host: string;
  siteUrl: string;
  publicBasePath: string;
  dataDir: string;
  databaseUrl: string | undefined;
  redisUrl: string | undefined;
  nodeEnv: string;
  jwtSecret: string | undefined;
  superadminWallets: string[];
  platformRecipientAddress: string | undefined;
  /** True when platformRecipientAddress is the dev chain's ninth test account (CHAIN=dev, none configured). */
  platformRecipientIsDevDefault: boolean;
  platformFeeBps: number;
  chain: ChainName;
  /** EIP-155 id of the chain: 31337 for the dev chain, 8453 Base, 84532 Base Sepolia. */
  chainId: number;
  /**
   * The node's JSON-RPC URL. With CHAIN=dev it names a dev chain that is already running (another
   * instance's, or a test's anvil), which the service then uses instead of starting its own.
   */
  rpcUrl: string | undefined;
  usdcAddress: string | undefined;
  /** How long one JSON-RPC request may take before it counts as failed (a stalled node). */
  rpcTimeoutMs: number;
  confirmations: number;
  /** MAX_LAG_BLOCKS: /healthz says degraded when the chain worker's last block is further than this behind the node's head. */
  maxLagBlocks: number;
  /**
   * MAX_FEE_GWEI: the highest max fee per gas (base fee plus tip) a sweep is ever sent or replaced
   * with. Above it sweeps wait, and /healthz and the admin app say so. In wei.
   */
  maxFeeWei: bigint;
  /**
   * SWEEP_DUST_USD: an underpaid receipt's money is swept only from this much on; less waits at
   * its payment address for the top-up (a receipt whose money covers its total is always swept).
   * In cents.
   */
  sweepDustCents: number;
  /**
   * The version-2 payment-forwarder factory new receipts are addressed through
   * (src/chain/contracts/PaymentForwarderV2.sol). Unset: the dev chain deploys it at start;
   * elsewhere the service deploys it once with SPLIT_DEPLOYER_KEY.
   */
  paymentFactoryAddress: `0x${string}` | undefined;
  /**
   * The version-1 factory that receipts addressed before version 2 were made by, which still
   * sweeps them. Unset: the one at its fixed CREATE2 address, if deployed there.
   */
  paymentFactoryV1Address: `0x${string}` | undefined;
  /**
   * ERC-20 tokens besides the accepted one whose balance at a payment address is checked (a hint,
   * the payment page, before expiry) and gives wrong_token; native ETH is always checked. Default:
   * USDT and DAI on Base, none elsewhere (src/payments/other-money.ts).
   */
  balanceTokens: `0x${string}`[] | undefined;
  /** Minutes a receipt may be paid in when its creation names no expiresInMinutes. */
  receiptTtlMinutes: number;
  /** A PostgreSQL statement unanswered this long fails; a write's commit then has an unknown outcome. */
  dbQueryTimeoutMs: number;
  /** How long a journaled status waits for its receipt (from another instance's journal) before it is rejected. */
  journalWaitMinutes: number;
  /** 0x-prefixed 32-byte key that deploys split contracts server-side (the dev chain has its own). */
  splitDeployerKey: `0x${string}` | undefined;
  /**
   * Split contracts the service deploys (and pays the gas of) in one UTC day, all merchants
   * together; 0: none. Each wallet also has its own daily cap (src/domain/split-setup.ts).
   */
  splitDeploysPerDay: number;
  /**
   * Server-paid split deployments only for wallets with the platform's approval (a superadmin,
   * an admin, or a wallet a superadmin granted `merchant`): true except on the dev chain, whose
   * gas is test ETH (SPLIT_DEPLOYS_APPROVED_ONLY).
   */
  splitDeploysApprovedOnly: boolean;
  /** Loopback port of the dev chain; 0 lets it pick a free one. */
  devChainPort: number;
  /** Seconds between dev chain blocks; 0 mines each transaction at once. */
  devChainBlockTime: number;
  /** Seconds per block of the chain (2 on Base; on the dev chain DEV_CHAIN_BLOCK_TIME, or 1). */
  chainBlockSeconds: number;
  /** Milliseconds between chain worker passes: the block time (100 on a dev chain that mines per transaction). */
  chainPollMs: number;
  /** Largest block range of one eth_getLogs; shrinks by itself when the provider refuses. */
  rpcLogsMaxRange: number;
  /** eth_getLogs calls one chain worker pass may make (catch-up is spread over passes). */
  rpcLogsCallsPerPass: number;
  /** Calls a second the RPC provider allows (RPC_RATE_LIMIT); null when not known. */
  rpcRateLimit: number | null;
  /** Newest blocks read one by one, pinned to their hash, because a load-balanced node may lag. */
  rpcLagHorizonBlocks: number;
  containerType: ContainerType;
  brandKey: string;
  brandName: string;
  storageConnectionString: string | undefined;
  apkContainer: string;
  apkBlobPrefix: string;
  /** Largest APK upload accepted, in bytes. */
  apkMaxBytes: number;
  edgeSecret: string | undefined;
  /**
   * TRUST_PROXY: the proxies whose X-Forwarded-For is believed, as Fastify's trustProxy takes them:
   * a hop count, or addresses and CIDR ranges. false (the default): none is, so the client address
   * is the connection's and a client cannot choose the address its rate limits count against.
   */
  trustProxy: false | number | string[];
  /**
   * Invalid subscription keys one client address may present per minute; beyond it, 429 before
   * any database lookup.
   */
  invalidKeyRateLimitPerMinute: number;
  /**
   * Longest a client may take to send one whole request (headers and body); then 408 and the
   * connection closes. The APK upload's body has apkUploadTimeoutMs instead, but may never go this
   * long without a byte.
   */
  requestTimeoutMs: number;
  /** Longest an APK upload may take, from its first byte to its last. */
  apkUploadTimeoutMs: number;
  /** Origins whose browser pages may call the developer API (key routes) cross-origin; empty: none. */
  corsOrigins: string[];
  webhookAllowPrivate: boolean;
  /** SPLITLINE_API_KEY: the subscription key the CLI's listen and trigger use without --api-key (the server ignores it). */
  cliApiKey: string | undefined;
  /** How long a resolved subscription key is trusted before it is looked up again. */
  keyCacheTtlMs: number;
  /** Rate-limit budget per client address for the credential-free tracking-status route. */
  publicRateLimitPerMinute: number;
  /**
   * Leader leases (chain worker, webhook dispatcher): a dead holder's work resumes elsewhere after
   * this. A webhook send never outlives the lease, so it is also the ceiling of a send's timeout.
   */
  leaseTtlMs: number;
  logLevel: string;
}

export const CHAIN_IDS: Record<ChainName, number> = { dev: 31337, base: 8453, 'base-sepolia': 84532 };

/**
 * The ninth account of the dev chain's test mnemonic (index 8): the platform recipient when
 * CHAIN=dev and PLATFORM_RECIPIENT_ADDRESS is not set, so a bare start can take a payment.
 * test/unit/dev-accounts.test.ts checks it against the mnemonic.
 */
export const DEV_PLATFORM_RECIPIENT = '0x23618e81e3f5cdf7f54c3d65f7fbc0abf5b21e8f';

export class ConfigError extends Error {
  constructor(readonly problems: string[]) {
    super(`Invalid configuration:\n  - ${problems.join('\n  - ')}`);
    this.name = 'ConfigError';
  }
}

type Env = Record<string, string | undefined>;

/** The shortest JWT_SECRET accepted in production: 256 bits, the HS256 key size. */
export const MIN_JWT_SECRET_BYTES = 32;
/** Fewer distinct bytes than this in a production JWT_SECRET is a pattern, not a secret. */
export const MIN_JWT_SECRET_DISTINCT_BYTES = 10;
/** The least entropy a production JWT_SECRET must show, in bits (its bytes' empirical Shannon entropy times their number). */
export const MIN_JWT_SECRET_ENTROPY_BITS = 100;

/**
 * What a secret's bytes show of its randomness: how many distinct byte values it has, and its
 * length times the empirical Shannon entropy of their frequencies. 32 bytes of `aaaa…` show 0
 * bits; `openssl rand -hex 32` (64 characters) about 240; `openssl rand -base64 32` about 220.
 * An upper bound of the real entropy (a long English phrase shows more than it holds), so it
 * refuses only what is certainly weak.
 */
export function secretStrength(secret: string): { distinctBytes: number; entropyBits: number } {
  const bytes = Buffer.from(secret, 'utf8');
  const counts = new Map<number, number>();
  for (const b of bytes) counts.set(b, (counts.get(b) ?? 0) + 1);
  let perByte = 0;
  for (const c of counts.values()) {
    const p = c / bytes.length;
    perByte -= p * Math.log2(p);
  }
  return { distinctBytes: counts.size, entropyBits: Math.floor(perByte * bytes.length) };
}

/** Why a production JWT_SECRET is refused, or null. */
function weakSecretProblem(secret: string): string | null {
  const bytes = Buffer.byteLength(secret, 'utf8');
  if (bytes < MIN_JWT_SECRET_BYTES) return `JWT_SECRET must be at least ${MIN_JWT_SECRET_BYTES} bytes when NODE_ENV=production (got ${bytes})`;
  const { distinctBytes, entropyBits } = secretStrength(secret);
  if (distinctBytes < MIN_JWT_SECRET_DISTINCT_BYTES || entropyBits < MIN_JWT_SECRET_ENTROPY_BITS) {
    return (
      `JWT_SECRET is too regular to be a secret when NODE_ENV=production (${distinctBytes} distinct bytes, about ${entropyBits} bits; ` +
      `at least ${MIN_JWT_SECRET_DISTINCT_BYTES} and ${MIN_JWT_SECRET_ENTROPY_BITS} needed): use a random one, e.g. openssl rand -base64 32`
    );
  }
  return null;
}

/**
 * Settings that start but deserve a line in the log: with NODE_ENV=production, an http: SITE_URL
 * while no proxy in front ends TLS (TRUST_PROXY unset): session cookies and payment pages would
 * travel in clear.
 */
export function configWarnings(config: Pick<Config, 'nodeEnv' | 'siteUrl' | 'trustProxy'>): string[] {
  const warnings: string[] = [];
  if (config.nodeEnv === 'production' && config.siteUrl.startsWith('http:') && config.trustProxy === false) {
    warnings.push(
      `SITE_URL is ${config.siteUrl}: with NODE_ENV=production, payment pages and the admin session should be served over https ` +
        '(set an https: SITE_URL, or TRUST_PROXY when a proxy in front ends TLS)',
    );
  }
  return warnings;
}

/**
 * TRUST_PROXY: unset or empty, none; a whole number from 1 to 20, that many hops from the right of
 * X-Forwarded-For; otherwise a comma list of IPv4/IPv6 addresses, CIDR ranges, or proxy-addr's
 * names loopback, linklocal and uniquelocal. `true` (every hop) is refused: it is the setting that
 * lets a client pick its own address.
 */
function parseTrustProxy(raw: string | undefined, problems: string[]): false | number | string[] {
  if (raw === undefined || raw === 'false' || raw === '0') return false;
  if (/^\d+$/.test(raw)) {
    const hops = Number(raw);
    if (hops >= 1 && hops <= 20) return hops;
    problems.push(`TRUST_PROXY as a hop count must be from 1 to 20 (got "${raw}")`);
    return false;
  }
  if (raw === 'true') {
    problems.push('TRUST_PROXY=true would believe every X-Forwarded-For hop, so any client could choose its address; give a hop count or the proxies\' addresses');
    return false;
  }
  const entries = raw.split(',').map((e) => e.trim()).filter((e) => e !== '');
  const bad = entries.filter((e) => !isProxyEntry(e));
  if (bad.length > 0 || entries.length === 0) {
    problems.push(`TRUST_PROXY must be a hop count or a comma list of addresses and CIDR ranges (bad: ${bad.map((b) => `"${b}"`).join(', ') || 'empty'})`);
    return false;
  }
  return entries;
}

function isProxyEntry(entry: string): boolean {
  if (['loopback', 'linklocal', 'uniquelocal'].includes(entry)) return true;
  const slash = entry.indexOf('/');
  const address = slash === -1 ? entry : entry.slice(0, slash);
  const family = isIP(address);
  if (family === 0) return false;
  if (slash === -1) return true;
  const bits = entry.slice(slash + 1);
  return /^\d{1,3}$/.test(bits) && Number(bits) <= (family === 4 ? 32 : 128);
}

export function loadConfig(env: Env = process.env): Config {
  const problems: string[] = [];
  const str = (name: string): string | undefined => {
    const v = env[name]?.trim();
    return v === undefined || v === '' ? undefined : v;
  };
  const int = (name: string, fallback: number, min: number, max: number): number => {
    const raw = str(name);
    if (raw === undefined) return fallback;
    const n = Number(raw);
    if (!Number.isInteger(n) || n < min || n > max) {
      problems.push(`${name} must be an integer from ${min} to ${max} (got "${raw}")`);
      return fallback;
    }
    return n;
  };
  const oneOf = <T extends string>(name: string, allowed: readonly T[], fallback: T): T => {
    const raw = str(name);
    if (raw === undefined) return fallback;
    if (!(allowed as readonly string[]).includes(raw)) {
      problems.push(`${name} must be one of ${allowed.join(', ')} (got "${raw}")`);
      return fallback;
    }
    return raw as T;
  };
  const bool = (name: string): boolean => {
    const raw = str(name);
    if (raw === undefined) return false;
    if (['1', 'true', 'yes'].includes(raw.toLowerCase())) return true;
    if (['0', 'false', 'no'].includes(raw.toLowerCase())) return false;
    problems.push(`${name} must be true or false (got "${raw}")`);
    return false;
  };
  /** A non-negative decimal with at most `places` places, as an integer count of 10^-places. */
  const decimal = (name: string, fallback: bigint, places: number, max: bigint): bigint => {
    const raw = str(name);
    if (raw === undefined) return fallback;
    const m = new RegExp(`^(\\d{1,12})(?:\\.(\\d{1,${places}}))?$`).exec(raw);
    const value = m === null ? -1n : BigInt(m[1]!) * 10n ** BigInt(places) + BigInt((m[2] ?? '').padEnd(places, '0') || '0');
    if (value < 0n || value > max) {
      problems.push(`${name} must be a number from 0 to ${max / 10n ** BigInt(places)} with at most ${places} decimals (got "${raw}")`);
      return fallback;
    }
    return value;
  };
  const url = (name: string, protocols: string[]): string | undefined => {
    const raw = str(name);
    if (raw === undefined) return undefined;
    try {
      const u = new URL(raw);
      if (!protocols.includes(u.protocol)) throw new Error('protocol');
      return raw;
    } catch {
      problems.push(`${name} must be a ${protocols.join(' or ')} URL`);
      return undefined;
    }
  };

  const port = int('PORT', 8080, 0, 65535);
  const host = str('HOST') ?? '127.0.0.1';
  const siteUrl = (url('SITE_URL', ['http:', 'https:']) ?? `http://localhost:${port}`).replace(/\/+$/, '');

  let publicBasePath = str('PUBLIC_BASE_PATH') ?? '';
  if (publicBasePath !== '') {
    publicBasePath = '/' + publicBasePath.replace(/^\/+|\/+$/g, '');
    if (!/^(\/[A-Za-z0-9._~-]+)+$/.test(publicBasePath)) {
      problems.push('PUBLIC_BASE_PATH must be a path such as /portalpay');
      publicBasePath = '';
    }
  }

  const nodeEnv = str('NODE_ENV') ?? 'development';
  const jwtSecret = str('JWT_SECRET');
  if (nodeEnv === 'production' && jwtSecret === undefined) {
    problems.push('JWT_SECRET is required when NODE_ENV=production');
  }

  const wallets = (name: string): string[] =>
    (str(name) ?? '')
      .split(',')
      .map((w) => w.trim())
      .filter((w) => w !== '')
      .flatMap((w) => {
        if (isAddress(w)) return [normalizeWallet(w)];
        problems.push(`${name} holds "${String(w)}", which is not a 0x-prefixed 40-hex wallet`);
        return [];
      });

  const platformRecipient = str('PLATFORM_RECIPIENT_ADDRESS');
  if (platformRecipient !== undefined && !isAddress(platformRecipient)) {
    problems.push('PLATFORM_RECIPIENT_ADDRESS must be a 0x-prefixed 40-hex wallet');
  }

  const chain = oneOf('CHAIN', ['dev', 'base', 'base-sepolia'] as const, 'dev');
  const rpcUrl = url('RPC_URL', ['http:', 'https:', 'ws:', 'wss:']);
  const devChainBlockTime = int('DEV_CHAIN_BLOCK_TIME', 0, 0, 3600);
  const chainBlockSeconds = chain === 'dev' ? Math.max(1, devChainBlockTime) : 2;
  if (chain !== 'dev' && rpcUrl === undefined) problems.push(`RPC_URL is required when CHAIN=${chain}`);
  const usdc = str('USDC_ADDRESS');
  if (usdc !== undefined && !isAddress(usdc)) problems.push('USDC_ADDRESS must be a 0x-prefixed 40-hex address');
  // The test USDC is deployed by whoever runs the dev chain; a service joining it must be told where.
  if (chain === 'dev' && rpcUrl !== undefined && usdc === undefined) {
    problems.push('USDC_ADDRESS is required when CHAIN=dev uses an existing dev chain through RPC_URL');
  }
  const factory = str('PAYMENT_FACTORY_ADDRESS');
  if (factory !== undefined && !isAddress(factory)) problems.push('PAYMENT_FACTORY_ADDRESS must be a 0x-prefixed 40-hex address');
  const factoryV1 = str('PAYMENT_FACTORY_V1_ADDRESS');
  if (factoryV1 !== undefined && !isAddress(factoryV1)) problems.push('PAYMENT_FACTORY_V1_ADDRESS must be a 0x-prefixed 40-hex address');
  const balanceTokensText = str('BALANCE_TOKENS');
  const balanceTokens = balanceTokensText === undefined ? undefined : balanceTokensText.split(',').map((t) => t.trim()).filter((t) => t !== '');
  if (balanceTokens !== undefined && (balanceTokens.length > 10 || balanceTokens.some((t) => !isAddress(t)))) {
    problems.push('BALANCE_TOKENS must be a comma-separated list of at most 10 0x-prefixed 40-hex addresses');
  }
  const deployerKey = str('SPLIT_DEPLOYER_KEY');
  if (deployerKey !== undefined && !/^0x[0-9a-fA-F]{64}$/.test(deployerKey)) {
    problems.push('SPLIT_DEPLOYER_KEY must be a 0x-prefixed 64-hex private key');
  }

  const brandKey = str('BRAND_KEY') ?? 'splitline';
  if (!/^[a-z0-9-]{1,64}$/.test(brandKey)) problems.push('BRAND_KEY must match [a-z0-9-]{1,64}');

  const corsOrigins = (str('CORS_ORIGINS') ?? '')
    .split(',')
    .map((o) => o.trim())
    .filter((o) => o !== '')
    .flatMap((o) => {
      // Exactly an origin (scheme, host, optional port): it is compared verbatim with the Origin header.
      const u = URL.canParse(o) ? new URL(o) : null;
      if (u !== null && (u.protocol === 'http:' || u.protocol === 'https:') && u.origin === o) return [o];
      problems.push(`CORS_ORIGINS holds "${o}", which is not an origin such as https://console.example.com`);
      return [];
    });

  const requestTimeoutMs = int('REQUEST_TIMEOUT_MS', 30_000, 100, 600_000);
  const apkUploadTimeoutMs = int('APK_UPLOAD_TIMEOUT_MS', 15 * 60_000, 100, 24 * 3_600_000);
  if (apkUploadTimeoutMs < requestTimeoutMs) {
    problems.push(`APK_UPLOAD_TIMEOUT_MS (${apkUploadTimeoutMs}) must be at least REQUEST_TIMEOUT_MS (${requestTimeoutMs})`);
  }

  const trustProxy = parseTrustProxy(str('TRUST_PROXY'), problems);
  const webhookAllowPrivate = bool('WEBHOOK_ALLOW_PRIVATE');
  if (nodeEnv === 'production') {
    // Settings that are fine on a laptop and unsafe with real money: refused together, each named.
    if (chain === 'dev') problems.push('CHAIN=dev (the default: a local test chain) is refused when NODE_ENV=production; set CHAIN=base or base-sepolia');
    if (webhookAllowPrivate) problems.push('WEBHOOK_ALLOW_PRIVATE=true is refused when NODE_ENV=production: webhooks could reach the private network');
    const weak = jwtSecret === undefined ? null : weakSecretProblem(jwtSecret);
    if (weak !== null) problems.push(weak);
  }

  const databaseUrl = url('DATABASE_URL', ['postgres:', 'postgresql:']);
  const redisUrl = url('REDIS_URL', ['redis:', 'rediss:']);

  const config: Config = {
    port,
    host,
    siteUrl,
    publicBasePath,
    dataDir: str('DATA_DIR') ?? './data',
    databaseUrl,
    redisUrl,
    nodeEnv,
    jwtSecret,
    superadminWallets: wallets('SUPERADMIN_WALLETS'),
    platformRecipientAddress:
      platformRecipient !== undefined && isAddress(platformRecipient)
        ? normalizeWallet(platformRecipient)
        : platformRecipient === undefined && chain === 'dev'
          ? DEV_PLATFORM_RECIPIENT
          : undefined,
    platformRecipientIsDevDefault: platformRecipient === undefined && chain === 'dev',
    platformFeeBps: int('PLATFORM_FEE_BPS', 50, 0, 10000),
    chain,
    chainId: CHAIN_IDS[chain],
    rpcUrl,
    usdcAddress: usdc !== undefined && isAddress(usdc) ? normalizeWallet(usdc) : undefined,
    rpcTimeoutMs: int('RPC_TIMEOUT_MS', 10_000, 100, 120_000),
    confirmations: int('CONFIRMATIONS', chain === 'dev' ? 1 : 3, 1, 1000),
    // 30 blocks: a minute on Base; a worker further behind delays every payment's completion.
    maxLagBlocks: int('MAX_LAG_BLOCKS', 30, 1, 1_000_000),
    maxFeeWei: decimal('MAX_FEE_GWEI', 50n * 10n ** 9n, 9, 100_000n * 10n ** 9n),
    sweepDustCents: Number(decimal('SWEEP_DUST_USD', 100n, 2, 1_000_000n * 100n)),
    paymentFactoryAddress: factory !== undefined && isAddress(factory) ? (normalizeWallet(factory) as `0x${string}`) : undefined,
    paymentFactoryV1Address: factoryV1 !== undefined && isAddress(factoryV1) ? (normalizeWallet(factoryV1) as `0x${string}`) : undefined,
    balanceTokens: balanceTokens?.filter((t) => isAddress(t)).map((t) => normalizeWallet(t) as `0x${string}`),
    receiptTtlMinutes: int('RECEIPT_TTL_MINUTES', 60, 1, 43_200),
    dbQueryTimeoutMs: int('DB_QUERY_TIMEOUT_MS', 15_000, 100, 600_000),
    journalWaitMinutes: int('JOURNAL_WAIT_MINUTES', 1440, 0, 43_200),
    splitDeployerKey: deployerKey !== undefined && /^0x[0-9a-fA-F]{64}$/.test(deployerKey) ? (deployerKey as `0x${string}`) : undefined,
    // The dev chain's gas is test ETH: no platform budget there unless one is set.
    splitDeploysPerDay: int('SPLIT_DEPLOYS_PER_DAY', chain === 'dev' ? 1_000_000 : 100, 0, 1_000_000),
    splitDeploysApprovedOnly: str('SPLIT_DEPLOYS_APPROVED_ONLY') === undefined ? chain !== 'dev' : bool('SPLIT_DEPLOYS_APPROVED_ONLY'),
    devChainPort: int('DEV_CHAIN_PORT', 0, 0, 65535),
    devChainBlockTime,
    chainBlockSeconds,
    chainPollMs: int('CHAIN_POLL_MS', chain === 'dev' && devChainBlockTime === 0 ? 100 : chainBlockSeconds * 1000, 10, 600_000),
    rpcLogsMaxRange: int('RPC_LOGS_MAX_RANGE', 2000, 1, 1_000_000),
    rpcLogsCallsPerPass: int('RPC_LOGS_CALLS_PER_PASS', 32, 1, 10_000),
    rpcRateLimit: int('RPC_RATE_LIMIT', 0, 0, 100_000) || null,
    rpcLagHorizonBlocks: int('RPC_LAG_HORIZON_BLOCKS', 64, 1, 100_000),
    containerType: oneOf('CONTAINER_TYPE', ['platform', 'partner'] as const, 'platform'),
    brandKey,
    brandName: str('BRAND_NAME') ?? 'Splitline',
    storageConnectionString: str('STORAGE_CONNECTION_STRING'),
    apkContainer: str('APK_CONTAINER') ?? 'apks',
    apkBlobPrefix: (str('APK_BLOB_PREFIX') ?? 'brands').replace(/^\/+|\/+$/g, ''),
    apkMaxBytes: int('APK_MAX_BYTES', 512 * 1024 * 1024, 1024, 4 * 1024 * 1024 * 1024),
    edgeSecret: str('EDGE_SECRET'),
    trustProxy,
    invalidKeyRateLimitPerMinute: int('INVALID_KEY_RATE_LIMIT_PER_MINUTE', 30, 1, 1_000_000),
    requestTimeoutMs,
    apkUploadTimeoutMs,
    corsOrigins,
    webhookAllowPrivate,
    cliApiKey: str('SPLITLINE_API_KEY'),
    keyCacheTtlMs: int('KEY_CACHE_TTL_MS', 5000, 0, 60000),
    publicRateLimitPerMinute: int('PUBLIC_RATE_LIMIT_PER_MINUTE', 120, 1, 1_000_000),
    leaseTtlMs: int('LEASE_TTL_MS', 15_000, 3_000, 600_000),
    logLevel: oneOf('LOG_LEVEL', ['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'] as const, 'info'),
  };
  if (problems.length > 0) throw new ConfigError(problems);
  return config;
}
