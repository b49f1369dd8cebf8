/**
 * The embedded dev chain: a local anvil node on loopback that the service starts, supervises and
 * stops. The binary ships in the npm package @foundry-rs/anvil-linux-amd64, so nothing is
 * downloaded at install or run time.
 *
 * State: anvil loads and dumps <dataDir>/devchain/state.json (`--state`), also every few seconds
 * (`--state-interval`), so the chain survives a restart and a crash loses only the last seconds.
 * An unreadable state file is moved aside and the chain starts empty; the caller then rebuilds
 * what the service needs on it (src/chain/dev-setup.ts).
 *
 * No orphans: anvil runs under a small sh watchdog that holds our stdin pipe; when this process
 * goes away for any reason, even SIGKILL, the pipe closes and the watchdog stops anvil.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { chmodSync, existsSync, mkdirSync, renameSync, statSync } from 'node:fs';
import { createRequire } from 'node:module';
import path from 'node:path';
import type { Logger } from 'pino';
import { DEV_ACCOUNT_COUNT, DEV_MNEMONIC } from './dev-accounts.ts';
import { DevChainStartError } from './errors.ts';
import { processAlive } from '../lib/process-alive.ts';

export const DEV_CHAIN_ID = 31337;
const ANVIL_PACKAGE = '@foundry-rs/anvil-linux-amd64';
const PID_LINE = /^splitline-anvil-pid (\d+)$/;
const LISTENING = /Listening on ([0-9.]+):(\d+)/;
const OUTPUT_LINES_KEPT = 40;

// Runs anvil in the background and stops it when stdin reaches end of file: our end of that pipe
// closes when this process exits, however it exits. Exits with anvil's status.
const WATCHDOG = [
  'exec 3<&0',
  '"$@" </dev/null &',
  'child=$!',
  'echo "splitline-anvil-pid $child"',
  '( read -r _ <&3; kill -TERM "$child" 2>/dev/null ) &',
  'watcher=$!',
  'wait "$child"',
  'status=$?',
  'kill "$watcher" 2>/dev/null',
  'exit $status',
].join('\n');

export interface DevChainOptions {
  /** The service's DATA_DIR: state goes to <dataDir>/devchain/state.json. */
  dataDir: string;
  /** Loopback port; 0 or undefined lets anvil pick a free one (kept across restarts). */
  port?: number;
  /** Seconds between blocks; 0 or undefined mines each transaction at once. */
  blockTimeSeconds?: number;
  logger: Logger;
  stateIntervalSeconds?: number;
  startTimeoutMs?: number;
  stopTimeoutMs?: number;
  /** Unexpected exits tolerated within restartWindowMs before supervision gives up. */
  maxRestarts?: number;
  restartWindowMs?: number;
}

export interface DevChain {
  readonly chainId: number;
  /** The node's own JSON-RPC URL on loopback (the public face is {SITE_URL}/dev/rpc). */
  readonly rpcUrl: string;
  readonly port: number;
  /** anvil's process id, or undefined between a crash and its restart. */
  readonly pid: number | undefined;
  readonly statePath: string;
  /** True when this start found no usable state file, so the chain began empty. */
  readonly startedFresh: boolean;
  /** Called after anvil was restarted following an unexpected exit. */
  onRestart(listener: () => Promise<void>): void;
  stop(): Promise<void>;
}

/** The anvil binary inside its npm package, made executable if npm dropped the mode bit. */
export function anvilBinary(): string {
  if (process.platform !== 'linux' || process.arch !== 'x64') {
    throw new DevChainStartError(ANVIL_PACKAGE, `the packaged anvil runs on Linux x64 only (this is ${process.platform} ${process.arch}); use CHAIN=base-sepolia with RPC_URL`, '');
  }
  const require = createRequire(import.meta.url);
  let binary: string;
  try {
    binary = path.join(path.dirname(require.resolve(`${ANVIL_PACKAGE}/package.json`)), 'bin', 'anvil');
  } catch (err) {
    throw new DevChainStartError(ANVIL_PACKAGE, 'the package is not installed (npm ci)', '', { cause: err });
  }
  try {
    // npm may unpack the binary without its execute bit.
    const mode = statSync(binary).mode;
    if ((mode & 0o111) !== 0o111) chmodSync(binary, mode | 0o755);
  } catch (err) {
    throw new DevChainStartError(binary, 'the binary is missing or cannot be made executable', '', { cause: err });
  }
  return binary;
}

export interface RunningAnvil {
  child: ChildProcess;
  anvilPid: number;
  port: number;
  exited: Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
  /** anvil's last lines of output, for the log when it dies. */
  output: OutputTail;
}

class OutputTail {
  private lines: string[] = [];
  add(line: string): void {
    this.lines.push(line);
    if (this.lines.length > OUTPUT_LINES_KEPT) this.lines.shift();
  }
  toString(): string {
    return this.lines.join('\n');
  }
}

function anvilArgs(opts: DevChainOptions, port: number, statePath: string): string[] {
  const args = [
    '--host', '127.0.0.1',
    '--port', String(port),
    '--chain-id', String(DEV_CHAIN_ID),
    '--mnemonic', DEV_MNEMONIC,
    '--accounts', String(DEV_ACCOUNT_COUNT),
    '--state', statePath,
    '--state-interval', String(opts.stateIntervalSeconds ?? 2),
  ];
  if (opts.blockTimeSeconds !== undefined && opts.blockTimeSeconds > 0) args.push('--block-time', String(opts.blockTimeSeconds));
  return args;
}

/** Spawns anvil under the watchdog and resolves once it listens (also the simulation's anvil, test/sim). */
export function spawnAnvil(binary: string, args: string[], timeoutMs: number): Promise<RunningAnvil> {
  const child = spawn('/bin/sh', ['-c', WATCHDOG, 'splitline-anvil', binary, ...args], {
    stdio: ['pipe', 'pipe', 'pipe'],
    // Its own process group, so a terminal's Ctrl-C reaches only us and we stop anvil in order.
    detached: true,
  });
  const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((resolve) => {
    child.once('exit', (code, signal) => resolve({ code, signal }));
  });
  const tail = new OutputTail();
  return new Promise<RunningAnvil>((resolve, reject) => {
    let anvilPid: number | undefined;
    let port: number | undefined;
    let settled = false;
    const fail = (reason: string, cause?: unknown) => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      killGroup(child, anvilPid);
      reject(new DevChainStartError(binary, reason, tail.toString(), { cause }));
    };
    const timer = setTimeout(() => fail(`it did not listen within ${timeoutMs} ms`), timeoutMs);
    const onLine = (line: string) => {
      const pidMatch = PID_LINE.exec(line);
      if (pidMatch !== null) anvilPid = Number(pidMatch[1]);
      else tail.add(line);
      const listening = LISTENING.exec(line);
      if (listening !== null) port = Number(listening[2]);
      if (!settled && anvilPid !== undefined && port !== undefined) {
        settled = true;
        clearTimeout(timer);
        resolve({ child, anvilPid, port, exited, output: tail });
      }
    };
    readLines(child.stdout, onLine);
    readLines(child.stderr, onLine);
    child.once('error', (err) => fail(`it could not be spawned: ${err.message}`, err));
    void exited.then(({ code, signal }) => fail(`it exited during start-up (${signal ?? `code ${code}`})`));
  });
}

function readLines(stream: NodeJS.ReadableStream | null, onLine: (line: string) => void): void {
  if (stream === null) return;
  let buffered = '';
  stream.setEncoding('utf8');
  stream.on('data', (chunk: string) => {
    buffered += chunk;
    let nl: number;
    while ((nl = buffered.indexOf('\n')) >= 0) {
      onLine(buffered.slice(0, nl).trimEnd());
      buffered = buffered.slice(nl + 1);
    }
  });
}

function signal(pid: number, sig: NodeJS.Signals): void {
  try {
    process.kill(pid, sig);
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== 'ESRCH') throw err;
  }
}

function killGroup(child: ChildProcess, anvilPid: number | undefined): void {
  if (child.pid !== undefined && child.exitCode === null && child.signalCode === null) signal(-child.pid, 'SIGKILL');
  if (anvilPid !== undefined) signal(anvilPid, 'SIGKILL');
}

class Supervisor implements DevChain {
  readonly chainId = DEV_CHAIN_ID;
  readonly statePath: string;
  startedFresh = false;
  port = 0;
  private running: RunningAnvil | undefined;
  private stopping: Promise<void> | undefined;
  private restartTimes: number[] = [];
  private listeners: (() => Promise<void>)[] = [];
  private readonly onProcessExit = () => {
    // Last resort on a synchronous exit path: anvil dumps its state on SIGTERM and exits itself.
    if (this.running !== undefined) signal(this.running.anvilPid, 'SIGTERM');
  };

  constructor(
    private readonly binary: string,
    private readonly opts: DevChainOptions,
  ) {
    this.statePath = path.join(opts.dataDir, 'devchain', 'state.json');
  }

  get rpcUrl(): string {
    return `http://127.0.0.1:${this.port}`;
  }

  get pid(): number | undefined {
    return this.running?.anvilPid;
  }

  onRestart(listener: () => Promise<void>): void {
    this.listeners.push(listener);
  }

  async start(): Promise<void> {
    mkdirSync(path.dirname(this.statePath), { recursive: true, mode: 0o700 });
    this.opts.logger.info({ statePath: this.statePath }, 'dev chain: starting anvil');
    await this.boot(this.opts.port ?? 0);
    process.on('exit', this.onProcessExit);
    this.opts.logger.info({ rpcUrl: this.rpcUrl, anvilPid: this.pid, chainId: this.chainId }, 'dev chain: anvil is listening');
  }

  /** Starts anvil on its state file; an unreadable file is moved aside and the chain starts empty. */
  private async boot(port: number): Promise<void> {
    this.startedFresh = !existsSync(this.statePath);
    let running: RunningAnvil;
    try {
      running = await this.spawn(port);
    } catch (err) {
      if (!(err instanceof DevChainStartError) || this.startedFresh || !/--state|parse json/i.test(err.output)) throw err;
      const aside = `${this.statePath}.unreadable-${Date.now()}`;
      renameSync(this.statePath, aside);
      this.opts.logger.warn({ movedTo: aside, reason: err.reason }, 'dev chain: the state file is unreadable; starting an empty chain');
      this.startedFresh = true;
      running = await this.spawn(port);
    }
    this.running = running;
    this.port = running.port;
    void running.exited.then((exit) => this.onExit(running, exit));
  }

  private spawn(port: number): Promise<RunningAnvil> {
    return spawnAnvil(this.binary, anvilArgs(this.opts, port, this.statePath), this.opts.startTimeoutMs ?? 30_000);
  }

  private onExit(ended: RunningAnvil, exit: { code: number | null; signal: NodeJS.Signals | null }): void {
    // anvil itself may outlive a wrapper killed from outside: make sure it is gone before any restart.
    if (processAlive(ended.anvilPid)) signal(ended.anvilPid, 'SIGKILL');
    if (this.running !== ended || this.stopping !== undefined) return;
    this.running = undefined;
    this.opts.logger.error({ ...exit, anvilPid: ended.anvilPid, output: ended.output.toString() }, 'dev chain: anvil exited unexpectedly');
    this.scheduleRestart();
  }

  private scheduleRestart(): void {
    const log = this.opts.logger;
    const now = Date.now();
    const window = this.opts.restartWindowMs ?? 10 * 60_000;
    this.restartTimes = this.restartTimes.filter((t) => now - t < window);
    const max = this.opts.maxRestarts ?? 5;
    if (this.restartTimes.length >= max) {
      log.error({ restarts: this.restartTimes.length }, 'dev chain: anvil keeps failing; no more restarts (restart the service)');
      return;
    }
    this.restartTimes.push(now);
    const delay = 250 * 2 ** (this.restartTimes.length - 1);
    log.warn({ restartInMs: delay, attempt: this.restartTimes.length, of: max }, 'dev chain: restarting anvil');
    setTimeout(() => void this.restart(), delay).unref();
  }

  private async restart(): Promise<void> {
    if (this.stopping !== undefined) return;
    const log = this.opts.logger;
    try {
      // The same port, so every client's URL stays valid.
      await this.boot(this.port);
    } catch (err) {
      log.error({ err }, 'dev chain: restart failed');
      this.scheduleRestart();
      return;
    }
    if (this.stopping !== undefined) return;
    log.info({ rpcUrl: this.rpcUrl, anvilPid: this.pid, fresh: this.startedFresh }, 'dev chain: anvil restarted');
    for (const listener of this.listeners) {
      await listener().catch((err: unknown) => log.error({ err }, 'dev chain: a restart step failed'));
    }
  }

  stop(): Promise<void> {
    this.stopping ??= this.shutdown();
    return this.stopping;
  }

  private async shutdown(): Promise<void> {
    process.off('exit', this.onProcessExit);
    const running = this.running;
    if (running === undefined) return;
    const log = this.opts.logger;
    log.info({ anvilPid: running.anvilPid }, 'dev chain: stopping anvil (its state is saved on the way out)');
    signal(running.anvilPid, 'SIGTERM');
    const timeoutMs = this.opts.stopTimeoutMs ?? 10_000;
    let timer: NodeJS.Timeout | undefined;
    const timedOut = new Promise<'timeout'>((resolve) => {
      timer = setTimeout(() => resolve('timeout'), timeoutMs);
    });
    const outcome = await Promise.race([running.exited.then(() => 'exited' as const), timedOut]);
    clearTimeout(timer);
    if (outcome === 'timeout') {
      log.warn({ anvilPid: running.anvilPid, timeoutMs }, 'dev chain: anvil did not stop in time; killing it');
      killGroup(running.child, running.anvilPid);
      await running.exited;
    }
    running.child.stdin?.destroy();
    this.running = undefined;
  }
}

/** Starts the dev chain and resolves once anvil answers on loopback. */
export async function startDevChain(opts: DevChainOptions): Promise<DevChain> {
  const chain = new Supervisor(anvilBinary(), opts);
  await chain.start();
  return chain;
}
