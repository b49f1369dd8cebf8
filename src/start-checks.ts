/**
 * What can be checked in a moment before the slow part of a start (the builds, the embedded
 * database, the dev chain): the HTTP port and the dev chain's port are free, and DATA_DIR is a
 * directory this user can write (or create) and no other process holds its embedded database. Each problem is one line naming the cause and the way
 * out. `npm start` runs them before its builds (scripts/prestart.ts) and src/main.ts again before it
 * opens anything, so `node dist/main.js` and `npm run dev` get them too.
 */
import { accessSync, closeSync, constants, openSync, statfsSync, statSync, unlinkSync } from 'node:fs';
import { createServer } from 'node:net';
import path from 'node:path';
import type { Config } from './config.ts';
import { DataDirLocked, dataDirHolder } from './db/data-dir-lock.ts';

/** The settings the checks read. */
export type StartCheckConfig = Pick<Config, 'host' | 'port' | 'dataDir' | 'chain' | 'rpcUrl' | 'devChainPort' | 'databaseUrl'>;

/** anvil listens on loopback (src/chain/dev-chain.ts). */
const DEV_CHAIN_HOST = '127.0.0.1';
/** A port check that takes longer (a HOST name that does not resolve) is left to the real listen. */
const PORT_CHECK_TIMEOUT_MS = 2_000;

/** Every problem found, one line each; empty when the start may go on. */
export async function startChecks(config: StartCheckConfig): Promise<string[]> {
  const problems: string[] = [];
  const dataDir = checkDataDir(config.dataDir);
  if (dataDir !== null) problems.push(dataDir);
  // The embedded database serves one process: another server or CLI on this DATA_DIR is met here,
  // before the builds, not after them.
  const holder = dataDir === null && config.databaseUrl === undefined ? dataDirHolder(path.resolve(config.dataDir)) : null;
  if (holder !== null) problems.push(new DataDirLocked(path.resolve(config.dataDir), holder).message);
  const http = await checkPort(config.host, config.port, httpPortAdvice(config.port));
  if (http !== null) problems.push(http);
  // CHAIN=dev with RPC_URL joins a dev chain run elsewhere: no anvil of its own to listen.
  if (config.chain === 'dev' && config.rpcUrl === undefined && config.devChainPort !== 0) {
    if (config.devChainPort === config.port && http === null) {
      problems.push(`PORT and DEV_CHAIN_PORT are both ${config.port}: set DEV_CHAIN_PORT to another port, or leave it unset for a free one`);
    } else {
      const devChain = await checkPort(DEV_CHAIN_HOST, config.devChainPort, {
        what: `Dev chain port ${config.devChainPort}`,
        inUse: "another Splitline's dev chain? set DEV_CHAIN_PORT=<another port>, or leave it unset for a free one",
        setting: 'DEV_CHAIN_PORT',
      });
      if (devChain !== null) problems.push(devChain);
    }
  }
  return problems;
}

interface PortAdvice {
  /** "Port 8080": how the line names the port. */
  what: string;
  /** The likely cause and the way out when the port is taken. */
  inUse: string;
  /** The variable that moves it. */
  setting: 'PORT' | 'DEV_CHAIN_PORT';
}

function httpPortAdvice(port: number): PortAdvice {
  return { what: `Port ${port}`, inUse: 'another Splitline? stop it, or set PORT=<another port>', setting: 'PORT' };
}

/** The line for a port this process could not listen on (EADDRINUSE and the like). */
export function portProblem(host: string, port: number, code: string | undefined, advice: PortAdvice = httpPortAdvice(port)): string {
  switch (code) {
    case 'EADDRINUSE':
      return `${advice.what} on ${host} is in use (${advice.inUse})`;
    case 'EACCES':
      return `${advice.what} on ${host} needs privileges this user lacks: set ${advice.setting} to 1024 or above`;
    case 'EADDRNOTAVAIL':
      return `HOST ${host} is not an address of this machine: set HOST=127.0.0.1 (this machine only) or HOST=0.0.0.0 (every interface)`;
    case 'ENOTFOUND':
    case 'EAI_AGAIN':
      return `HOST ${host} does not resolve to an address: set HOST=127.0.0.1 (this machine only) or HOST=0.0.0.0 (every interface)`;
    default:
      return `${advice.what} on ${host} cannot be listened on (${code ?? 'unknown error'}): set ${advice.setting}=<another port>`;
  }
}

/** Listens on `host:port` and closes again at once; the line naming why it could not, or null. Port 0 is always free. */
export async function checkPort(host: string, port: number, advice: PortAdvice = httpPortAdvice(port)): Promise<string | null> {
  if (port === 0) return null;
  const server = createServer();
  const attempt = new Promise<string | null>((resolve) => {
    server.once('error', (err: NodeJS.ErrnoException) => resolve(portProblem(host, port, err.code, advice)));
    server.listen({ host, port, exclusive: true }, () => server.close(() => resolve(null)));
  });
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<null>((resolve) => {
    timer = setTimeout(() => {
      server.close();
      resolve(null);
    }, PORT_CHECK_TIMEOUT_MS);
  });
  try {
    return await Promise.race([attempt, timeout]);
  } finally {
    clearTimeout(timer);
  }
}

/**
 * Kernel file systems that look like directories but store nothing (statfs f_type). Creating a
 * DATA_DIR under /proc never returned: the start hung without a word.
 */
const PSEUDO_FILE_SYSTEMS: ReadonlyMap<number, string> = new Map([
  [0x9fa0, 'proc'],
  [0x62656572, 'sysfs'],
  [0x27e0eb, 'cgroup'],
  [0x63677270, 'cgroup2'],
  [0x64626720, 'debugfs'],
  [0x74726163, 'tracefs'],
  [0x73636673, 'securityfs'],
  [0x1cd1, 'devpts'],
  [0xcafe4a11, 'bpf'],
  [0x62656570, 'configfs'],
  [0x6165676c, 'pstore'],
]);

const SET_DATA_DIR = 'set DATA_DIR to a directory on disk this user can write (it is created when missing)';

/** The line naming why DATA_DIR cannot hold the service's files, or null. Creates nothing it leaves behind. */
export function checkDataDir(dataDir: string): string | null {
  const dir = path.resolve(dataDir);
  // The directory itself, or the nearest ancestor that exists (where it would be created).
  let existing = dir;
  for (;;) {
    try {
      statSync(existing);
      break;
    } catch (err) {
      const code = (err as NodeJS.ErrnoException).code;
      if (code === 'ENOTDIR') return `DATA_DIR ${dir} cannot be created: a part of its path is a file, not a directory (${SET_DATA_DIR})`;
      if (code !== 'ENOENT') return `DATA_DIR ${dir} cannot be reached (${code ?? String(err)}): ${SET_DATA_DIR}`;
      existing = path.dirname(existing);
    }
  }
  const pseudo = PSEUDO_FILE_SYSTEMS.get(statfsSync(existing).type);
  if (pseudo !== undefined) {
    return `DATA_DIR ${dir} is on a ${pseudo} kernel file system, which stores nothing: ${SET_DATA_DIR}`;
  }
  if (!statSync(existing).isDirectory()) {
    return existing === dir
      ? `DATA_DIR ${dir} is not a directory: ${SET_DATA_DIR}`
      : `DATA_DIR ${dir} cannot be created: ${existing} is not a directory (${SET_DATA_DIR})`;
  }
  if (existing !== dir) {
    try {
      accessSync(existing, constants.W_OK | constants.X_OK);
      return null;
    } catch (err) {
      return `DATA_DIR ${dir} cannot be created: ${existing} is not writable by this user (${(err as NodeJS.ErrnoException).code}); ${SET_DATA_DIR}`;
    }
  }
  // Writing is the only sure test: a read-only mount, a full disk or an ACL all show here.
  const probe = path.join(dir, `.splitline-write-check-${process.pid}`);
  try {
    closeSync(openSync(probe, 'wx', 0o600));
    unlinkSync(probe);
    return null;
  } catch (err) {
    return `DATA_DIR ${dir} is not writable by this user (${(err as NodeJS.ErrnoException).code}): make it writable, or ${SET_DATA_DIR}`;
  }
}
