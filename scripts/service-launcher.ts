/**
 * The one way Splitline (or a helper server) is started as a child process, shared by the tests
 * (test/helpers/service.ts re-exports it and adds what only tests need: the published-document
 * check of every answer), the bench (bench/run.ts, apk.ts, payments.ts) and the soak
 * (scripts/soak.ts). It lives in scripts/ beside the build it may need (ensure-server-build.ts):
 * the bench and the soak import tooling from scripts/ already, and neither should depend on the
 * test tree for something that is not a test.
 *
 * What it decides for every caller:
 *   - the program: the sources through tsx (`sourceProgram()`, what the tests and the soak run, so
 *     they test the code as edited), or the compiled build exactly as `npm start` runs it
 *     (`compiledProgram()`, what the bench measures), built first when dist/ is stale;
 *   - the environment: PATH, HOME, HOST=127.0.0.1 and PORT, then only what the caller passes. A
 *     stray EDGE_SECRET or PUBLIC_BASE_PATH in the shell would otherwise change every answer;
 *   - the port and readiness, one of two ways. `ready: 'announced'` (the default) starts on the
 *     caller's PORT or 0, lets the OS pick, and waits for the "Splitline http://..." line the
 *     service prints once it listens and its workers run: no race for a free port among tests
 *     running in parallel. `ready: { healthPath }` takes a port (a free one unless given) and polls
 *     the path until it answers 200: for output sent to a file, which this process does not read,
 *     and for servers that announce nothing (the bench's baseline);
 *   - the output: kept in memory, its JSON log lines parsed (`logs`, `waitForLog`), or appended to
 *     `logFile` directly by the child, so a long bench or soak relays nothing through this process
 *     and the file outlives it. Either way `tail()` gives the last lines, and every failure to
 *     start quotes them;
 *   - stopping: `stop()` is SIGTERM, then SIGKILL after a grace period; `stopAllServices()` does
 *     that to every process still running (for a test's `after`); a process that fails to start
 *     is killed at once; and any left when this process exits, however it exits, are killed.
 */
import { spawn, type ChildProcess, type StdioOptions } from 'node:child_process';
import { closeSync, openSync, readFileSync } from 'node:fs';
import { createServer } from 'node:net';
import path from 'node:path';
import { ensureServerBuild, startArgs } from './ensure-server-build.ts';

export const ROOT = path.resolve(import.meta.dirname, '..');

export interface LogLine {
  msg?: string;
  level?: number;
  time?: number;
  [k: string]: unknown;
}

export interface Exit {
  code: number | null;
  signal: NodeJS.Signals | null;
}

export interface LaunchOptions {
  /** Names the process in errors. */
  name: string;
  /** Node arguments naming what to run; `sourceProgram()` unless given. */
  program?: string[];
  /** Node options before the program, such as --cpu-prof or --expose-gc. */
  nodeArgs?: string[];
  /** On top of PATH, HOME, HOST=127.0.0.1 and PORT; nothing else of this process's environment is passed. */
  env?: Record<string, string | undefined>;
  /** The port: for `ready: 'announced'`, PORT from `env` or 0 unless given; otherwise a free port unless given. */
  port?: number;
  /** How to know it is up (see the module comment). */
  ready?: 'announced' | { healthPath: string };
  /** Where the child appends its output; kept in memory when absent. Needs `ready: { healthPath }`. */
  logFile?: string;
  /** Opens an IPC channel and passes each message the child sends (listening from the spawn on). */
  onMessage?: (message: unknown) => void;
  /** For the readiness (60 s). */
  timeoutMs?: number;
}

export interface LaunchedService {
  name: string;
  child: ChildProcess;
  pid: number;
  /** http://127.0.0.1:<port> */
  base: string;
  /** Where the output goes, when it goes to a file. */
  logFile: string | undefined;
  /** The JSON log lines so far, when the output is kept in memory (empty with a logFile). */
  logs: LogLine[];
  /** Settles when the process has exited. */
  exited: Promise<Exit>;
  /** The first log line matching `match` (already logged or still to come); output kept in memory only. */
  waitForLog(match: (l: LogLine) => boolean, timeoutMs: number): Promise<LogLine>;
  /** SIGTERM, then SIGKILL after `graceMs` (20 s). */
  stop(graceMs?: number): Promise<Exit>;
  /** kill -9. */
  kill(): Promise<void>;
  /** The whole output (its last 100-200 kB when kept in memory). */
  output(): string;
  /** The last `lines` lines of the output (30). */
  tail(lines?: number): string;
}

/** The service from its sources through tsx, with `preloads` (TypeScript modules too) imported first. */
export function sourceProgram(preloads: string[] = []): string[] {
  return ['--import', 'tsx', ...preloads.flatMap((p) => ['--import', p]), 'src/main.ts'];
}

/**
 * The node arguments that run Splitline as `npm start` does (compiled, with its V8 flags), after
 * building dist/ if the sources changed, as the prestart script would.
 */
export async function compiledProgram(): Promise<string[]> {
  await ensureServerBuild();
  return startArgs();
}

/** A port that was free a moment ago (the OS picks it). */
export function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const probe = createServer();
    probe.once('error', reject);
    probe.listen(0, '127.0.0.1', () => {
      const address = probe.address();
      const port = typeof address === 'object' && address !== null ? address.port : 0;
      probe.close(() => resolve(port));
    });
  });
}

/** Every child started here that has not exited, with the promise of its exit. */
const running = new Map<ChildProcess, Promise<Exit>>();
process.on('exit', () => {
  for (const c of running.keys()) c.kill('SIGKILL');
});

function alive(c: ChildProcess): boolean {
  return c.exitCode === null && c.signalCode === null;
}

function terminate(child: ChildProcess, exited: Promise<Exit>, graceMs: number): Promise<Exit> {
  if (!alive(child)) return exited;
  child.kill('SIGTERM');
  const force = setTimeout(() => child.kill('SIGKILL'), graceMs);
  return exited.finally(() => clearTimeout(force));
}

/**
 * Stops every process started here that still runs: SIGTERM, so each stops its dev chain and
 * closes its files before the caller removes its DATA_DIR, then SIGKILL after `graceMs`. (A killed
 * service leaves its anvil to the watchdog, which may still be writing the chain's state while the
 * directory is removed.)
 */
export async function stopAllServices(graceMs = 10_000): Promise<void> {
  await Promise.all([...running].map(([child, exited]) => terminate(child, exited, graceMs)));
}

function lastLines(text: string, lines: number): string {
  const trimmed = text.trimEnd();
  return trimmed === '' ? '(no output)' : trimmed.split('\n').slice(-lines).join('\n');
}

/** The output kept in memory: the text, the parsed JSON log lines, and the announced base URL. */
class KeptOutput {
  text = '';
  readonly logs: LogLine[] = [];
  private buffered = '';
  private readonly waiters: { match: (l: LogLine) => boolean; resolve: (l: LogLine) => void }[] = [];
  private announce: ((base: string) => void) | undefined;
  readonly announced = new Promise<string>((resolve) => (this.announce = resolve));

  keep(chunk: string): void {
    this.text += chunk;
    if (this.text.length > 200_000) this.text = this.text.slice(-100_000);
  }

  stdout(chunk: string): void {
    this.keep(chunk);
    this.buffered += chunk;
    const lines = this.buffered.split('\n');
    this.buffered = lines.pop()!;
    for (const line of lines) this.line(line);
  }

  private line(line: string): void {
    const url = /Splitline\s+(http:\/\/\S+?)(?:\/admin\/)?(?:\s|$)/.exec(line);
    if (url) this.announce?.(url[1]!);
    if (!line.startsWith('{')) return;
    let parsed: LogLine;
    try {
      parsed = JSON.parse(line) as LogLine;
    } catch (err) {
      parsed = { msg: `unparsed log line: ${line}`, err: String(err) };
    }
    this.logs.push(parsed);
    for (let i = this.waiters.length - 1; i >= 0; i--) {
      if (this.waiters[i]!.match(parsed)) this.waiters.splice(i, 1)[0]!.resolve(parsed);
    }
  }

  waitFor(name: string, match: (l: LogLine) => boolean, ms: number): Promise<LogLine> {
    const found = this.logs.find(match);
    if (found !== undefined) return Promise.resolve(found);
    return new Promise((resolve, reject) => {
      const waiter = { match, resolve: (l: LogLine) => (clearTimeout(t), resolve(l)) };
      const t = setTimeout(() => {
        this.waiters.splice(this.waiters.indexOf(waiter), 1);
        reject(new Error(`${name}: no matching log line within ${ms} ms`));
      }, ms);
      this.waiters.push(waiter);
    });
  }
}

/** Polls `url` until it answers 200; gives up (resolving false) once `gaveUp()` says so. */
async function healthy(url: string, gaveUp: () => boolean): Promise<boolean> {
  while (!gaveUp()) {
    const ok = await fetch(url, { signal: AbortSignal.timeout(5_000) }).then(
      (res) => res.status === 200,
      () => false,
    );
    if (ok) return true;
    await new Promise((r) => setTimeout(r, 200));
  }
  return false;
}

/** Starts the process and resolves once it is ready; rejects, having killed it, when it exits first or takes too long. */
export async function launchService(o: LaunchOptions): Promise<LaunchedService> {
  const ready = o.ready ?? 'announced';
  if (ready === 'announced' && o.logFile !== undefined) throw new Error(`${o.name}: an announced start reads the output, so it cannot go to a log file`);
  const port = ready === 'announced' ? o.port : (o.port ?? (await freePort()));
  const out = o.logFile === undefined ? 'pipe' : openSync(o.logFile, 'a');
  const stdio: StdioOptions = ['ignore', out, out, ...(o.onMessage === undefined ? [] : ['ipc' as const])];
  const child = spawn(process.execPath, [...(o.nodeArgs ?? []), ...(o.program ?? sourceProgram())], {
    cwd: ROOT,
    env: {
      PATH: process.env.PATH,
      HOME: process.env.HOME,
      HOST: '127.0.0.1',
      PORT: '0',
      ...o.env,
      ...(port === undefined ? {} : { PORT: String(port) }),
    },
    stdio,
  });
  if (typeof out === 'number') closeSync(out);
  const exited = new Promise<Exit>((resolve) =>
    child.once('exit', (code, signal) => {
      running.delete(child);
      resolve({ code, signal });
    }),
  );
  running.set(child, exited);
  if (o.onMessage !== undefined) child.on('message', o.onMessage);

  const kept = new KeptOutput();
  child.stdout?.setEncoding('utf8').on('data', (chunk: string) => kept.stdout(chunk));
  child.stderr?.setEncoding('utf8').on('data', (chunk: string) => kept.keep(chunk));
  const logFile = o.logFile;
  const output = () => {
    if (logFile === undefined) return kept.text;
    try {
      return readFileSync(logFile, 'utf8');
    } catch {
      return '';
    }
  };
  const tail = (lines = 30) => lastLines(output(), lines);

  const timeoutMs = o.timeoutMs ?? 60_000;
  let settled = false;
  let timer: NodeJS.Timeout | undefined;
  const what = ready === 'announced' ? 'announced that it listens' : `answered ${ready.healthPath} with 200`;
  let up: Promise<string>;
  if (ready === 'announced') up = kept.announced;
  else {
    const base = `http://127.0.0.1:${port}`;
    up = healthy(base + ready.healthPath, () => settled).then(() => base);
  }
  const url = await Promise.race([
    up,
    exited.then(({ code, signal }) => {
      throw new Error(`${o.name} exited (${signal ?? code}) before it ${what}:\n${tail(40)}`);
    }),
    new Promise<never>((_, reject) => {
      timer = setTimeout(() => reject(new Error(`${o.name} had not ${what} within ${timeoutMs / 1000} s:\n${tail(40)}`)), timeoutMs);
    }),
  ])
    .catch(async (err: unknown) => {
      // Not up in time: hung or already gone, with nothing in flight worth draining.
      child.kill('SIGKILL');
      await exited;
      throw err;
    })
    .finally(() => {
      settled = true;
      clearTimeout(timer);
    });

  return {
    name: o.name,
    child,
    pid: child.pid!,
    base: url,
    logFile,
    logs: kept.logs,
    exited,
    output,
    tail,
    waitForLog: (match, ms) => kept.waitFor(o.name, match, ms),
    stop: (graceMs = 20_000) => terminate(child, exited, graceMs),
    async kill() {
      if (alive(child)) child.kill('SIGKILL');
      await exited;
    },
  };
}
