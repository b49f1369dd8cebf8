/**
 * Process entry: configuration → dependencies → app → listen, with graceful shutdown.
 */
import { ConfigError, configWarnings, loadConfig } from './config.ts';
import type { Deps } from './deps.ts';
import { secureDataDir, SERVICE_UMASK } from './lib/data-dir.ts';
import { DataDirLocked } from './db/data-dir-lock.ts';
import { portProblem, startChecks } from './start-checks.ts';

async function main(): Promise<void> {
  // Before anything is written: every file the service (and the PGlite, anvil and build children
  // it starts, which inherit it) creates is its user's alone.
  process.umask(SERVICE_UMASK);
  let config;
  try {
    config = loadConfig();
  } catch (err) {
    if (err instanceof ConfigError) {
      console.error(err.message);
      process.exit(1);
    }
    throw err;
  }
  // Ports and DATA_DIR, before anything slow starts (npm start checked them before its builds too).
  const problems = await startChecks(config);
  if (problems.length > 0) {
    for (const line of problems) console.error(line);
    process.exit(1);
  }
  // The rest of the service loads only now: its modules take seconds to load on a small machine,
  // and a start that cannot go on says so at once.
  const [{ buildApp }, { createDeps }] = await Promise.all([import('./app.ts'), import('./deps.ts')]);
  // Tighten what an earlier version, another umask or a copy left readable by others.
  const tightened = secureDataDir(config.dataDir);
  const deps = await createDeps(config, { chain: true });
  for (const warning of configWarnings(config)) deps.logger.warn(warning);
  if (tightened.changed > 0 || tightened.failed.length > 0 || tightened.truncated) {
    deps.logger.warn(
      { dataDir: config.dataDir, tightened: tightened.changed, failed: tightened.failed, truncated: tightened.truncated },
      'DATA_DIR: removed group and other permissions from files and directories other users could reach',
    );
  }
  const app = await buildApp(deps);
  try {
    await app.listen({ port: config.port, host: config.host });
  } catch (err) {
    // Taken since the check above (another start racing this one): the same one line.
    const code = (err as NodeJS.ErrnoException).code;
    if (code === undefined || !['EADDRINUSE', 'EACCES', 'EADDRNOTAVAIL'].includes(code)) throw err;
    console.error(portProblem(config.host, config.port, code));
    await app.close();
    await deps.close();
    process.exit(1);
  }
  const address = app.server.address();
  const port = typeof address === 'object' && address !== null ? address.port : config.port;
  const local = `http://${config.host.includes(':') ? `[${config.host}]` : config.host}:${port}${config.publicBasePath}`;
  deps.journal.start();
  deps.startWorkers();
  deps.logger.info(
    {
      database: deps.database.describe,
      rateLimits: deps.limiter.kind === 'redis' ? 'Redis' : 'in memory',
      chain: config.chain,
    },
    'Splitline is running',
  );
  console.log(
    [
      '',
      `  Splitline  ${local}/admin/   (the merchant app: sign in with a browser wallet)`,
      `  API reference   ${local}/docs`,
      `  OpenAPI         ${local}/openapi.json`,
      `  Health          ${local}/healthz`,
      `  Payment pages   ${config.siteUrl}/pay/<receipt_id>`,
      `  Database        ${deps.database.describe}`,
      `  Rate limits     ${deps.limiter.kind === 'redis' ? 'Redis' : 'in memory'}`,
      ...chainLines(deps),
      '',
      ...nextStep(deps, local),
      '',
    ].join('\n'),
  );

  let stopping = false;
  const stop = async (signal: string) => {
    if (stopping) return;
    stopping = true;
    deps.logger.info({ signal }, 'shutting down: draining in-flight requests');
    const force = setTimeout(() => {
      deps.logger.error('shutdown took too long; exiting');
      process.exit(1);
    }, 15_000);
    force.unref();
    try {
      await app.close();
      await deps.close();
      process.exit(0);
    } catch (err) {
      deps.logger.error({ err }, 'shutdown failed');
      process.exit(1);
    }
  };
  process.on('SIGINT', () => void stop('SIGINT'));
  process.on('SIGTERM', () => void stop('SIGTERM'));
}

/** What a newcomer needs to pay on the chain: the dev chain's RPC, token and funded accounts. */
function chainLines(deps: Deps): string[] {
  const chain = deps.chain;
  if (chain === undefined) return [];
  if (chain.dev === undefined) return [`  Chain           ${chain.name} (${chain.chainId}), USDC ${chain.usdc.address}`];
  return [
    `  Dev chain       ${deps.config.siteUrl}/dev/rpc  (chain id ${chain.chainId}; details at /dev/chain)`,
    `  Test USDC       ${chain.usdc.address}  (1,000,000 in each of the ten test-mnemonic accounts)`,
    ...(deps.config.platformRecipientIsDevDefault
      ? [`  Platform fee    to the ninth test account ${deps.config.platformRecipientAddress} (set PLATFORM_RECIPIENT_ADDRESS to change)`]
      : []),
  ];
}

/**
 * Where the README's quick start goes on. On the dev chain: a key for a test account, through this
 * server (the CLI's `keys create` cannot open an embedded database the server holds).
 */
function nextStep(deps: Deps, local: string): string[] {
  if (deps.chain?.dev === undefined) return ['  Create a subscription key:  npm run cli -- keys create --wallet 0x…'];
  // The CLI finds the server through the same HOST and PORT; elsewhere it needs the address.
  const url = local === 'http://127.0.0.1:8080' ? '' : ` --url ${local}`;
  return [
    '  Next (README.md, "Quick start"), in a second terminal: a key for test account 0, its split saved:',
    `    KEY=$(npm run -s cli -- dev merchant${url})`,
  ];
}

main().catch((err: unknown) => {
  // A start-up refusal that names its cause and the way out is one line, not a stack trace.
  if (err instanceof DataDirLocked) console.error(err.message);
  else console.error(err);
  process.exit(1);
});
