/**
 * Child processes under test: start, wait until healthy, sample memory, stop.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { openSync, readFileSync, closeSync } from 'node:fs';
import { createServer } from 'node:net';
import { fileURLToPath } from 'node:url';
import { ensureServerBuild, startArgs } from '../scripts/ensure-server-build.ts';

export const ROOT = fileURLToPath(new URL('..', import.meta.url));

export interface Server {
  name: string;
  url: string;
  pid: number;
  logFile: string;
  stop(): Promise<void>;
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

function exited(child: ChildProcess, ms: number): Promise<boolean> {
  if (child.exitCode !== null || child.signalCode !== null) return Promise.resolve(true);
  return new Promise((resolve) => {
    const timer = setTimeout(() => resolve(false), ms);
    child.once('exit', () => {
      clearTimeout(timer);
      resolve(true);
    });
  });
}

export function tail(file: string, lines = 30): string {
  try {
    return readFileSync(file, 'utf8').trimEnd().split('\n').slice(-lines).join('\n');
  } catch {
    return '(no output)';
  }
}

/**
 * The node arguments that run Splitline as `npm start` does (compiled, with its V8 flags), after
 * building dist/ if the sources changed, as the prestart script would: the bench measures what
 * production runs.
 */
export async function serviceArgs(): Promise<string[]> {
  await ensureServerBuild();
  return startArgs();
}

export interface StartOptions {
  name: string;
  /** A TypeScript script relative to the repository root, run with node --import tsx (the baseline server). */
  script?: string;
  /** Or the node arguments in full, such as serviceArgs(). */
  args?: string[];
  env: NodeJS.ProcessEnv;
  /** Extra node options, such as --cpu-prof. */
  nodeArgs?: string[];
  port: number;
  logFile: string;
  healthPath: string;
  timeoutMs?: number;
}

/** Starts a script, its output going to logFile, and resolves once healthPath answers 200. */
export async function startServer(o: StartOptions): Promise<Server> {
  const program = o.args ?? (o.script !== undefined ? ['--import', 'tsx', o.script] : undefined);
  if (program === undefined) throw new Error(`${o.name}: startServer needs a script or args`);
  const out = openSync(o.logFile, 'a');
  const child = spawn(process.execPath, [...(o.nodeArgs ?? []), ...program], {
    cwd: ROOT,
    env: { ...o.env, PORT: String(o.port) },
    stdio: ['ignore', out, out],
  });
  closeSync(out);
  const url = `http://127.0.0.1:${o.port}`;
  const stop = async () => {
    if (child.exitCode !== null || child.signalCode !== null) return;
    child.kill('SIGTERM');
    if (!(await exited(child, 15_000))) {
      child.kill('SIGKILL');
      await exited(child, 5_000);
    }
  };
  const deadline = Date.now() + (o.timeoutMs ?? 60_000);
  while (Date.now() < deadline) {
    if (child.exitCode !== null || child.signalCode !== null) {
      throw new Error(`${o.name} exited (${child.exitCode ?? child.signalCode}) before it was healthy:\n${tail(o.logFile)}`);
    }
    const healthy = await fetch(url + o.healthPath).then(
      (res) => res.status === 200,
      () => false,
    );
    if (healthy) return { name: o.name, url, pid: child.pid ?? 0, logFile: o.logFile, stop };
    await new Promise((r) => setTimeout(r, 200));
  }
  await stop();
  throw new Error(`${o.name} was not healthy within ${(o.timeoutMs ?? 60_000) / 1000} s:\n${tail(o.logFile)}`);
}

/** Reads a process's resident memory from /proc and keeps the peak, overall and per phase. */
export class RssSampler {
  private timer: NodeJS.Timeout | undefined;
  peakMb = 0;
  phasePeakMb = 0;

  constructor(private readonly pid: number) {}

  start(intervalMs = 200): void {
    this.sample();
    // Unref'd: a bench that fails half-way must not be kept alive by its sampler.
    this.timer = setInterval(() => this.sample(), intervalMs).unref();
  }

  /** Starts a new phase (a route's run) and returns the peak of the one before. */
  nextPhase(): number {
    this.sample();
    const peak = this.phasePeakMb;
    this.phasePeakMb = 0;
    return peak;
  }

  stop(): void {
    clearInterval(this.timer);
  }

  private sample(): void {
    let status: string;
    try {
      status = readFileSync(`/proc/${this.pid}/status`, 'utf8');
    } catch {
      return; // the process has gone; its peak stands
    }
    const kb = Number(/^VmRSS:\s+(\d+)\s+kB/m.exec(status)?.[1] ?? 0);
    const mb = kb / 1024;
    this.peakMb = Math.max(this.peakMb, mb);
    this.phasePeakMb = Math.max(this.phasePeakMb, mb);
  }
}
