/**
 * Operator CLI: manages subscriptions and their keys in the configured database, reconciles split
 * contracts against what the service indexed, and (dev chain) walks the README's quick start.
 *
 *   npm run cli -- keys create --wallet 0x… [--product full] [--scopes a,b] [--name …] [--rate-limit N]
 *   npm run cli -- keys list [--wallet 0x…]
 *   npm run cli -- keys rotate <subscriptionId> [--slot primary|secondary]
 *   npm run cli -- keys revoke <subscriptionId>
 *   npm run cli -- products
 *   npm run cli -- reconcile [--wallet 0x…]
 *   npm run cli -- dev merchant [--account N] [--url …]
 *   npm run cli -- dev pay <paymentUrl | receiptId --key …> [--account N] [--url …]
 *   npm run cli -- listen --forward-to <url> [--api-key …] [--base-url …] [--events a,b] [--secret whsec_…] [--since <eventId>]
 *   npm run cli -- trigger <event> [--api-key …] [--base-url …] [--account N]
 *
 * Exit codes: 0 success, 1 bad input or a failed operation (or, for reconcile, a difference),
 * 2 usage error (unknown command or option).
 */
import { parseArgs } from 'node:util';
import type { ChainDeps } from './chain/client.ts';
import { ConfigError, loadConfig, type Config } from './config.ts';
import type { Database } from './db/client.ts';
import { DataDirLocked } from './db/data-dir-lock.ts';
import { AppError } from './lib/errors.ts';
import { isAddress } from './domain/wallet.ts';
import { PRODUCTS, SCOPES, isScope } from './gateway/scopes.ts';
import type { CreateSubscriptionParams, KeySlot, SubscriptionView } from './gateway/subscriptions.ts';
import type { ReconcileReport, SplitReconciliation, Totals } from './payments/reconcile.ts';
import { SERVICE_UMASK } from './lib/data-dir.ts';

// What a command needs beyond reading its command line (the database, viem, the chain, the dev
// commands' HTTP client) is imported when that command runs: a typo, --help or products answers
// without loading them (about half a second of start-up each time).

// The CLI opens the same DATA_DIR as the server (an embedded database it may create): what it
// writes there is the service user's alone, as the server's is.
process.umask(SERVICE_UMASK);

const USAGE = `Splitline operator CLI: subscriptions and their keys, split reconciliation, dev chain payments.

Usage: npm run cli -- <command> [options]

Commands:
  keys create --wallet 0x… [--product full|checkout|readonly] [--scopes a,b] [--name text] [--rate-limit N]
                 Issue a subscription with a primary and a secondary key (printed once).
  keys list [--wallet 0x…]
                 List subscriptions (key prefixes only; keys are stored as hashes).
  keys rotate <subscriptionId> [--slot primary|secondary]
                 Replace one key (primary by default); the other keeps working.
  keys revoke <subscriptionId>
                 Revoke the subscription and both its keys.
  products       List the products and the scopes they grant.
  reconcile [--wallet 0x…]
                 For every merchant's split contract (or the one merchant's), compare what the
                 chain says it received (token balance + totalReleased) and released
                 (totalReleased) with the sum of the indexed split transactions, at the block the
                 chain worker has indexed through. One line per split; exit 1 on any difference.
  dev merchant [--account N] [--url http://host:port]
                 Through the running server (CHAIN=dev): sign in as test account N (default 0),
                 save its split (all but the platform fee to itself) and issue a subscription
                 key. The key alone goes to stdout: KEY=$(npm run -s cli -- dev merchant)
  dev pay <paymentUrl> | dev pay <receiptId> --key <key>  [--account N] [--url …]
                 Pay what the receipt still needs in test USDC from test account N (default 1)
                 through the server's /dev/rpc, and wait until it is settled (exit 0: completed).
  listen --forward-to <url> [--api-key key] [--base-url http://host:port] [--events a,b]
         [--secret whsec_…] [--since <eventId>]
                 Follow the server's events (GET /api/events) with a subscription key and POST each
                 new one to <url>, oldest first, exactly once per run, with the body and
                 webhook-id/-timestamp/-signature headers of a real delivery, signed with the
                 secret printed first (generated, or --secret), so your handler's Standard
                 Webhooks verify code runs unchanged. By default only events created after it
                 starts; --since <eventId> forwards those after that event first. One line per
                 forwarded event with the status your handler answered. A service that is down or
                 answers 503, and a handler that is down or answers 5xx/408/429, are retried with
                 backoff (events wait in order; none is dropped); other answers are final.
                 Ctrl-C stops it.
  trigger <event> [--api-key key] [--base-url http://host:port] [--account N]
                 Dev chain only: make <event> really happen. receipt.payment_received and
                 receipt.completed: a 1 USD receipt created with the key and paid in full in test
                 USDC from test account N (default 1); waits until the event is in GET /api/events.
                 Refuses (exit 1, nothing created) on a server not running the dev chain.
  help           Show this text.

Options:
  --json         Machine-readable output on stdout.
  -h, --help     Show this text.

Database: the CLI uses the same settings as the server (DATABASE_URL, else the embedded
PGlite database in DATA_DIR, default ./data) and names the one it opened on stderr. The embedded
database serves one process at a time: run the CLI while the server is stopped, or point both at
PostgreSQL with DATABASE_URL. A running server notices a revocation or rotation within
KEY_CACHE_TTL_MS (default 5 s). The dev commands open no database: they use the server's HTTP
API, at HOST and PORT (the server's settings) or --url. listen and trigger likewise, at --base-url,
with the key from --api-key or SPLITLINE_API_KEY.

Chain (reconcile): the CLI joins the running service's chain and never starts one, so RPC_URL
is required. CHAIN=base or base-sepolia with RPC_URL reads that chain; with CHAIN=dev, RPC_URL
names the dev chain the server runs (the anvil URL, or {SITE_URL}/dev/rpc) and USDC_ADDRESS its
test USDC. The chain worker indexes from where it started (block 0 on the dev chain, about a
day back elsewhere): splits must be indexed from their deployment, or their earlier transfers
show as a difference.

Exit codes: 0 success (reconcile: every split matches), 1 bad input, failed operation or a
reconcile difference, 2 unknown command or option.`;

const OPTIONS = {
  wallet: { type: 'string' },
  product: { type: 'string' },
  scopes: { type: 'string' },
  name: { type: 'string' },
  'rate-limit': { type: 'string' },
  slot: { type: 'string' },
  url: { type: 'string' },
  key: { type: 'string' },
  account: { type: 'string' },
  'api-key': { type: 'string' },
  'base-url': { type: 'string' },
  'forward-to': { type: 'string' },
  events: { type: 'string' },
  secret: { type: 'string' },
  since: { type: 'string' },
  json: { type: 'boolean', default: false },
  help: { type: 'boolean', short: 'h', default: false },
} as const;

type Values = ReturnType<typeof parseArgs<{ options: typeof OPTIONS; allowPositionals: true }>>['values'];

/** Bad input from the person at the keyboard: exit 1 with the message. */
class InputError extends Error {}
/** A command line that cannot be understood: exit 2 with the usage text. */
class UsageError extends Error {}

interface Output {
  json: boolean;
  print(human: string, data: unknown): void;
}

function output(json: boolean): Output {
  return {
    json,
    print(human, data) {
      process.stdout.write(json ? JSON.stringify(data, null, 2) + '\n' : human + '\n');
    },
  };
}

function describeSubscription(s: SubscriptionView): string {
  const keys = s.keys.map((k) => `${k.slot} ${k.prefix}…`).join(', ') || 'none';
  return [
    `${s.id}  ${s.status}${s.revokedAt !== null ? ` (revoked ${new Date(s.revokedAt).toISOString()})` : ''}`,
    `  wallet   ${s.wallet}`,
    `  name     ${s.name}`,
    `  product  ${s.product}, ${s.rateLimitPerMinute} requests/minute`,
    `  scopes   ${s.scopes.join(', ') || '(none)'}`,
    `  keys     ${keys}`,
    `  created  ${new Date(s.createdAt).toISOString()}`,
  ].join('\n');
}

function requireWallet(value: string | undefined, required: boolean): string | undefined {
  if (value === undefined) {
    if (required) throw new InputError('--wallet is required (a 0x-prefixed, 40-hex address)');
    return undefined;
  }
  if (!isAddress(value)) throw new InputError(`--wallet "${String(value)}" is not a 0x-prefixed, 40-hex address`);
  return value;
}

function parseRateLimit(value: string | undefined): number | undefined {
  if (value === undefined) return undefined;
  const n = Number(value);
  if (!/^\d+$/.test(value) || !Number.isSafeInteger(n) || n < 1) {
    throw new InputError(`--rate-limit must be a whole number of requests per minute (got "${value}")`);
  }
  return n;
}

function parseScopes(value: string | undefined): string[] | undefined {
  if (value === undefined) return undefined;
  const scopes = value.split(',').map((s) => s.trim()).filter((s) => s !== '');
  if (scopes.length === 0) throw new InputError(`--scopes needs at least one of: ${SCOPES.join(', ')}`);
  return scopes;
}

function parseSlot(value: string | undefined): KeySlot {
  if (value === undefined) return 'primary';
  if (value !== 'primary' && value !== 'secondary') {
    throw new InputError(`--slot must be primary or secondary (got "${value}")`);
  }
  return value;
}

function onlyPositional(rest: string[], what: string): string {
  if (rest.length === 0) throw new InputError(`${what} is required`);
  if (rest.length > 1) throw new UsageError(`Unexpected arguments: ${rest.slice(1).join(' ')}`);
  return rest[0] as string;
}

function noPositionals(rest: string[]): void {
  if (rest.length > 0) throw new UsageError(`Unexpected arguments: ${rest.join(' ')}`);
}

function showProducts(out: Output): void {
  const products = Object.values(PRODUCTS).map((p) => ({
    name: p.name,
    description: p.description,
    scopes: [...p.scopes],
    rateLimitPerMinute: p.rateLimitPerMinute,
  }));
  const human = products
    .map((p) => `${p.name}  (${p.rateLimitPerMinute} requests/minute)\n  ${p.description}\n  scopes: ${p.scopes.join(', ')}`)
    .join('\n\n');
  out.print(`${human}\n\nAll scopes: ${SCOPES.join(', ')}`, { products, scopes: [...SCOPES] });
}

/** The options each command takes; --json and --help apply everywhere. */
const ALLOWED: Record<string, (keyof typeof OPTIONS)[]> = {
  'keys create': ['wallet', 'product', 'scopes', 'name', 'rate-limit'],
  'keys list': ['wallet'],
  'keys rotate': ['slot'],
  'keys revoke': [],
  reconcile: ['wallet'],
  'dev merchant': ['url', 'account'],
  'dev pay': ['url', 'key', 'account'],
  listen: ['api-key', 'base-url', 'forward-to', 'events', 'secret', 'since'],
  trigger: ['api-key', 'base-url', 'account'],
};

function checkOptions(command: string, allowed: (keyof typeof OPTIONS)[], values: Values): void {
  for (const [name, value] of Object.entries(values)) {
    if (name === 'json' || name === 'help' || value === undefined) continue;
    if (!(allowed as string[]).includes(name)) throw new UsageError(`--${name} does not apply to "${command}"`);
  }
}

type Action =
  | { kind: 'create'; params: CreateSubscriptionParams }
  | { kind: 'list'; wallet: string | undefined }
  | { kind: 'rotate'; id: string; slot: KeySlot }
  | { kind: 'revoke'; id: string };

/** Reads and checks a keys command completely before the database is opened, so typos fail fast. */
function planKeys(sub: string, rest: string[], values: Values): Action {
  const allowed = ALLOWED[`keys ${sub}`];
  if (allowed === undefined) {
    throw new UsageError(sub === '' ? 'keys needs a subcommand: create, list, rotate or revoke' : `Unknown command: keys ${sub}`);
  }
  checkOptions(`keys ${sub}`, allowed, values);
  switch (sub) {
    case 'create': {
      noPositionals(rest);
      const product = values.product;
      if (product !== undefined && PRODUCTS[product] === undefined) {
        throw new InputError(`Unknown product "${product}"; products: ${Object.keys(PRODUCTS).join(', ')}`);
      }
      const scopes = parseScopes(values.scopes);
      const unknown = (scopes ?? []).filter((s) => !isScope(s));
      if (unknown.length > 0) throw new InputError(`Unknown scopes: ${unknown.join(', ')}; scopes: ${SCOPES.join(', ')}`);
      return {
        kind: 'create',
        params: {
          wallet: requireWallet(values.wallet, true) as string,
          product,
          scopes,
          name: values.name,
          rateLimitPerMinute: parseRateLimit(values['rate-limit']),
        },
      };
    }
    case 'list':
      noPositionals(rest);
      return { kind: 'list', wallet: requireWallet(values.wallet, false) };
    case 'rotate':
      return {
        kind: 'rotate',
        id: onlyPositional(rest, 'The subscription id (keys rotate <subscriptionId>)'),
        slot: parseSlot(values.slot),
      };
    default:
      return { kind: 'revoke', id: onlyPositional(rest, 'The subscription id (keys revoke <subscriptionId>)') };
  }
}

async function runKeys(db: Database, action: Action, out: Output): Promise<void> {
  const { createSubscription, listSubscriptions, revokeSubscription, rotateKey } = await import('./gateway/subscriptions.ts');
  switch (action.kind) {
    case 'create': {
      const { primaryKey, secondaryKey, ...subscription } = await createSubscription(db.db, {
        ...action.params,
        // The operator, with the database in hand, grants what a superadmin may.
        grantedBySuperadmin: true,
      });
      const note = 'Store these keys now: they are kept only as hashes and cannot be shown again.';
      out.print(
        [
          'Created subscription:',
          describeSubscription(subscription),
          '',
          `  Primary key:    ${primaryKey}`,
          `  Secondary key:  ${secondaryKey}`,
          '',
          note,
          'Send one as the Ocp-Apim-Subscription-Key header.',
        ].join('\n'),
        { subscription, primaryKey, secondaryKey, note },
      );
      return;
    }
    case 'list': {
      const subs = await listSubscriptions(db.db, action.wallet);
      const human = subs.length === 0 ? 'No subscriptions.' : subs.map(describeSubscription).join('\n\n');
      out.print(human, { subscriptions: subs });
      return;
    }
    case 'rotate': {
      const { id, slot } = action;
      const { key } = await rotateKey(db.db, id, slot);
      const note = 'Store this key now: it cannot be shown again. The previous key of this slot no longer works.';
      out.print(`New ${slot} key for ${id}:\n\n  ${key}\n\n${note}`, { subscriptionId: id, slot, key, note });
      return;
    }
    case 'revoke': {
      const { revokedHashes } = await revokeSubscription(db.db, action.id);
      out.print(
        `Revoked ${action.id} (${revokedHashes.length} active key(s) disabled). A running server refuses them within KEY_CACHE_TTL_MS.`,
        { subscriptionId: action.id, status: 'revoked', keysRevoked: revokedHashes.length },
      );
      return;
    }
  }
}

async function run(argv: string[]): Promise<number> {
  let values: Values;
  let positionals: string[];
  try {
    ({ values, positionals } = parseArgs({ args: argv, options: OPTIONS, allowPositionals: true, strict: true }));
  } catch (err) {
    process.stderr.write(`${err instanceof Error ? err.message : String(err)}\n\n${USAGE}\n`);
    return 2;
  }
  const out = output(values.json);
  const [command = 'help', sub = '', ...rest] = positionals;

  if (values.help || command === 'help') {
    process.stdout.write(USAGE + '\n');
    return 0;
  }

  let db: Database | undefined;
  let chain: ChainDeps | undefined;
  try {
    if (command === 'products') {
      noPositionals(sub === '' ? rest : [sub, ...rest]);
      checkOptions('products', [], values);
      showProducts(out);
      return 0;
    }
    if (command === 'reconcile') {
      noPositionals(sub === '' ? rest : [sub, ...rest]);
      checkOptions('reconcile', ALLOWED.reconcile ?? [], values);
      const wallet = requireWallet(values.wallet, false);
      const config = loadConfig();
      chain = await joinChain(config);
      db = await openCliDatabase(config);
      const [{ reconcileSplits }, { formatUnits }] = await Promise.all([import('./payments/reconcile.ts'), import('viem')]);
      const report = await reconcileSplits({ db: db.db, chain, wallet });
      printReconcile(out, report, formatUnits);
      return report.ok ? 0 : 1;
    }
    if (command === 'dev') return await runDev(sub, rest, values, out);
    if (command === 'listen') return await runListen(sub === '' ? rest : [sub, ...rest], values, out);
    if (command === 'trigger') return await runTrigger(sub === '' ? rest : [sub, ...rest], values, out);
    if (command !== 'keys') throw new UsageError(`Unknown command: ${command}`);
    const action = planKeys(sub, rest, values);
    const config = loadConfig();
    try {
      db = await openCliDatabase(config);
    } catch (err) {
      // The quick start's server holds the embedded database; a key can still be had through it.
      if (err instanceof DataDirLocked && config.chain === 'dev') {
        err.message += ' On the dev chain, npm run cli -- dev merchant issues a key through the running server.';
      }
      throw err;
    }
    await runKeys(db, action, out);
    return 0;
  } catch (err) {
    if (err instanceof UsageError) {
      process.stderr.write(`${err.message}\n\n${USAGE}\n`);
      return 2;
    }
    const failure = await expectedFailure(err);
    if (failure !== undefined) {
      process.stderr.write(`error: ${failure.message}\n`);
      if (out.json) process.stdout.write(JSON.stringify({ error: failure.code, message: failure.message }) + '\n');
      return 1;
    }
    throw err;
  } finally {
    // PGlite keeps the event loop alive until closed, so the process would never exit.
    await db?.close();
    await chain?.close();
  }
}

/**
 * A failure the CLI reports in one line (exit 1), with its machine-readable code; undefined for
 * anything else (a bug: its stack trace is printed). The chain's and the dev commands' error
 * classes are loaded here only when the error is none of the others: those modules are then
 * loaded already, because only their code throws them.
 */
async function expectedFailure(err: unknown): Promise<{ message: string; code: string } | undefined> {
  if (err instanceof InputError) return { message: err.message, code: 'invalid_input' };
  if (err instanceof AppError) return { message: err.message, code: err.code };
  if (err instanceof DataDirLocked) return { message: err.message, code: 'data_dir_locked' };
  if (err instanceof ConfigError) return { message: err.message, code: 'invalid_config' };
  const [{ BaseError }, { ChainError }, { DevCommandError }] = await Promise.all([import('viem'), import('./chain/errors.ts'), import('./cli-dev.ts')]);
  if (err instanceof BaseError) return { message: `the chain did not answer: ${err.shortMessage}`, code: 'chain_unavailable' };
  if (err instanceof ChainError) return { message: err.message, code: 'chain_unavailable' };
  if (err instanceof DevCommandError) return { message: err.message, code: 'invalid_input' };
  return undefined;
}

/**
 * The configured database, named on stderr (which one a command changed is never a guess). A
 * DATA_DIR a running server holds is refused at once (DataDirLocked, one line).
 */
async function openCliDatabase(config: Config): Promise<Database> {
  const { openDatabase } = await import('./db/client.ts');
  const db = await openDatabase({
    databaseUrl: config.databaseUrl,
    dataDir: config.dataDir,
    poolSize: 2,
    onCreate: (location) => process.stderr.write(`Creating the embedded database in ${location} (first use of this DATA_DIR; a few seconds)...\n`),
  });
  process.stderr.write(`Database: ${db.describe}\n`);
  return db;
}

/** `dev merchant` and `dev pay`: through the running server's HTTP API, never the database. */
async function runDev(sub: string, rest: string[], values: Values, out: Output): Promise<number> {
  const allowed = ALLOWED[`dev ${sub}`];
  if (allowed === undefined) throw new UsageError(sub === '' ? 'dev needs a subcommand: merchant or pay' : `Unknown command: dev ${sub}`);
  checkOptions(`dev ${sub}`, allowed, values);
  const { DEFAULT_BUYER_ACCOUNT, DEFAULT_MERCHANT_ACCOUNT, devMerchant, devPay, serverUrl, testAccount } = await import('./cli-dev.ts');
  // Progress goes to stderr: stdout is the result alone (the key, for KEY=$(…)).
  const log = (line: string) => process.stderr.write(`${line}\n`);
  if (sub === 'merchant') {
    noPositionals(rest);
    const { index, account } = testAccount(values.account, DEFAULT_MERCHANT_ACCOUNT);
    const result = await devMerchant({ base: serverUrl(loadConfig(), values.url), index, account, log });
    out.print(result.primaryKey, result);
    return 0;
  }
  const target = onlyPositional(rest, 'The receipt to pay (dev pay <paymentUrl>, or dev pay <receiptId> --key <key>)');
  const { index, account } = testAccount(values.account, DEFAULT_BUYER_ACCOUNT);
  const result = await devPay({ base: serverUrl(loadConfig(), values.url), target, key: values.key, index, account, log });
  const exception = result.exception === null ? '' : ` (${result.exception})`;
  const tx = result.transactionHash === null ? '' : `, transaction ${result.transactionHash}`;
  out.print(`Receipt ${result.receiptId} is ${result.status}${exception}${tx}`, result);
  return result.status === 'completed' ? 0 : 1;
}

/** `listen`: follows the events API until Ctrl-C (SIGINT) or SIGTERM, then exits 0. */
async function runListen(rest: string[], values: Values, out: Output): Promise<number> {
  noPositionals(rest);
  checkOptions('listen', ALLOWED.listen ?? [], values);
  const [{ listen, parseEventTypes, parseForwardTo, parseSecret, requireKey }, { serverUrl }] = await Promise.all([import('./cli-webhooks.ts'), import('./cli-dev.ts')]);
  const forwardTo = parseForwardTo(values['forward-to']);
  const types = parseEventTypes(values.events);
  const secret = parseSecret(values.secret);
  const config = loadConfig();
  const key = requireKey(values['api-key'] ?? config.cliApiKey, 'listen');
  const base = serverUrl(config, values['base-url'], '--base-url');
  const stop = new AbortController();
  const onSignal = () => stop.abort();
  process.once('SIGINT', onSignal);
  process.once('SIGTERM', onSignal);
  const line = (text: string) => process.stdout.write(text + '\n');
  line(out.json ? JSON.stringify({ secret }) : `Webhook signing secret: ${secret}  (verify the forwarded events with it)`);
  try {
    const { forwarded } = await listen({
      base,
      key,
      forwardTo,
      secret,
      types,
      since: values.since,
      intervalMs: 1000,
      signal: stop.signal,
      out: (human, data) => line(out.json ? JSON.stringify(data) : human),
      log: (text) => process.stderr.write(`${text}\n`),
    });
    process.stderr.write(`Stopped; ${forwarded} event(s) forwarded.\n`);
    return 0;
  } finally {
    process.off('SIGINT', onSignal);
    process.off('SIGTERM', onSignal);
  }
}

/** `trigger <event>`: on the dev chain, makes the event happen for real and prints it. */
async function runTrigger(rest: string[], values: Values, out: Output): Promise<number> {
  checkOptions('trigger', ALLOWED.trigger ?? [], values);
  if (rest.length > 1) throw new UsageError(`Unexpected arguments: ${rest.slice(1).join(' ')}`);
  const [{ parseTriggerEvent, requireKey, trigger }, { DEFAULT_BUYER_ACCOUNT, serverUrl, testAccount }] = await Promise.all([import('./cli-webhooks.ts'), import('./cli-dev.ts')]);
  const type = parseTriggerEvent(rest[0]);
  const config = loadConfig();
  const key = requireKey(values['api-key'] ?? config.cliApiKey, 'trigger');
  const { index, account } = testAccount(values.account, DEFAULT_BUYER_ACCOUNT);
  const base = serverUrl(config, values['base-url'], '--base-url');
  const result = await trigger({ base, key, type, index, account, log: (text) => process.stderr.write(`${text}\n`) });
  out.print(`${result.event.type} ${result.event.id} (receipt ${result.receiptId})`, result);
  return 0;
}

/**
 * The running service's chain, joined (never started: an embedded dev chain belongs to the server).
 * Without the deployer key, so reconciling never sends a transaction on a public chain.
 */
async function joinChain(config: Config): Promise<ChainDeps> {
  if (config.rpcUrl === undefined) {
    throw new InputError(
      "reconcile reads the running service's chain: set RPC_URL (with CHAIN=dev also USDC_ADDRESS, the dev chain's test USDC)",
    );
  }
  // The report is the output; the chain's info lines would only clutter stderr.
  const [{ createLogger }, { startChain }] = await Promise.all([import('./logger.ts'), import('./chain/client.ts')]);
  const logger = createLogger(config.logLevel === 'info' ? 'warn' : config.logLevel, process.stderr);
  return startChain({ config: { ...config, splitDeployerKey: undefined }, logger });
}

function jsonTotals(t: Totals) {
  return { received: t.received.toString(), released: t.released.toString() };
}

type FormatUnits = (value: bigint, decimals: number) => string;

function describeTotal(what: keyof Totals, r: SplitReconciliation, decimals: number, formatUnits: FormatUnits): string {
  const chain = formatUnits(r.chain[what], decimals);
  const indexed = formatUnits(r.indexed[what], decimals);
  const diff = r.difference[what];
  if (diff === 0n) return `${what} ${chain} = ${indexed} indexed`;
  return `${what} ${chain} on chain, ${indexed} indexed (difference ${diff > 0n ? '+' : ''}${formatUnits(diff, decimals)})`;
}

function printReconcile(out: Output, report: ReconcileReport, formatUnits: FormatUnits): void {
  const decimals = report.tokenDecimals;
  const differing = report.splits.filter((r) => !r.matches).length;
  const lines = report.splits.map(
    (r) =>
      `${r.matches ? 'OK  ' : 'DIFF'}  merchant ${r.merchant}  split ${r.split}  ` +
      `${describeTotal('received', r, decimals, formatUnits)}; ${describeTotal('released', r, decimals, formatUnits)}`,
  );
  const where =
    report.indexedThrough === null
      ? `at block ${report.blockNumber} (the chain worker has not run on this database)`
      : `at block ${report.blockNumber}, which the chain worker has indexed through`;
  const summary =
    report.splits.length === 0
      ? 'No merchant has a split contract.'
      : differing === 0
        ? `All ${report.splits.length} split(s) match.`
        : `${differing} of ${report.splits.length} split(s) differ.`;
  out.print([`${report.tokenSymbol} ${report.token} ${where}:`, ...lines, summary].join('\n'), {
    ok: report.ok,
    token: report.token,
    tokenSymbol: report.tokenSymbol,
    tokenDecimals: report.tokenDecimals,
    blockNumber: report.blockNumber.toString(),
    indexedThrough: report.indexedThrough?.toString() ?? null,
    splits: report.splits.map((r) => ({
      merchant: r.merchant,
      split: r.split,
      matches: r.matches,
      chain: jsonTotals(r.chain),
      indexed: { ...jsonTotals(r.indexed), payments: r.indexed.payments, releases: r.indexed.releases },
      difference: jsonTotals(r.difference),
    })),
  });
}

run(process.argv.slice(2)).then(
  (code) => {
    process.exitCode = code;
  },
  (err: unknown) => {
    process.stderr.write(`error: ${err instanceof Error ? (err.stack ?? err.message) : String(err)}\n`);
    process.exitCode = 1;
  },
);
