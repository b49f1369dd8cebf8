/**
 * The service in a process of its own: by default its sources through tsx (`node --import tsx
 * src/main.ts`), so a test runs the code as edited without a build; `program` runs something else,
 * such as the compiled build as `npm start` runs it (test/start.test.ts). On loopback and a free
 * port, its JSON log lines kept for the test to read. Every process started here is killed when
 * the test process exits, however it exits, and `stopAllServices()` (for a test's `after`) ends
 * the ones still running.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import path from 'node:path';
import type { PrivateKeyAccount } from 'viem/accounts';
import { contractFor, type Contract } from './contract.ts';
import { sign } from './session.ts';

export const ROOT = path.resolve(import.meta.dirname, '../..');

export interface LogLine {
  msg?: string;
  level?: number;
  time?: number;
  [k: string]: unknown;
}

export interface Service {
  name: string;
  child: ChildProcess;
  pid: number;
  /** http://127.0.0.1:<port> */
  base: string;
  logs: LogLine[];
  /** Settles when the process has exited. */
  exited: Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
  /** The first log line matching `match` (already logged or still to come). */
  waitForLog(match: (l: LogLine) => boolean, timeoutMs: number): Promise<LogLine>;
  /** SIGTERM, then SIGKILL after `graceMs`. */
  stop(graceMs?: number): Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
  /** kill -9. */
  kill(): Promise<void>;
  output(): string;
}

const running = new Set<ChildProcess>();
process.on('exit', () => {
  for (const c of running) c.kill('SIGKILL');
});

function alive(c: ChildProcess): boolean {
  return c.exitCode === null && c.signalCode === null;
}

/** Starts the service (src/main.ts through tsx unless `program`) with `env` on top of a minimal base; resolves once it listens. */
export async function startService(
  name: string,
  env: Record<string, string>,
  opts: { timeoutMs?: number; nodeArgs?: string[]; program?: string[] } = {},
): Promise<Service> {
  const child = spawn(process.execPath, [...(opts.nodeArgs ?? []), ...(opts.program ?? ['--import', 'tsx', 'src/main.ts'])], {
    cwd: ROOT,
    env: {
      PATH: process.env.PATH,
      HOME: process.env.HOME,
      PORT: '0',
      HOST: '127.0.0.1',
      LOG_LEVEL: 'info',
      PUBLIC_RATE_LIMIT_PER_MINUTE: '1000000',
      ...env,
    },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  running.add(child);
  const logs: LogLine[] = [];
  const waiters: { match: (l: LogLine) => boolean; resolve: (l: LogLine) => void }[] = [];
  let text = '';
  const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((resolve) =>
    child.once('exit', (code, signal) => {
      running.delete(child);
      resolve({ code, signal });
    }),
  );
  const keep = (chunk: string) => {
    text += chunk;
    if (text.length > 200_000) text = text.slice(-100_000);
  };
  const base = new Promise<string>((resolve, reject) => {
    let buffered = '';
    child.stdout.setEncoding('utf8').on('data', (chunk: string) => {
      keep(chunk);
      buffered += chunk;
      const lines = buffered.split('\n');
      buffered = lines.pop()!;
      for (const line of lines) {
        const url = /Splitline\s+(http:\/\/\S+?)(?:\/admin\/)?(?:\s|$)/.exec(line);
        if (url) resolve(url[1]!);
        if (!line.startsWith('{')) continue;
        let parsed: LogLine;
        try {
          parsed = JSON.parse(line) as LogLine;
        } catch (err) {
          parsed = { msg: `unparsed log line: ${line}`, err: String(err) };
        }
        logs.push(parsed);
        for (let i = waiters.length - 1; i >= 0; i--) {
          if (waiters[i]!.match(parsed)) waiters.splice(i, 1)[0]!.resolve(parsed);
        }
      }
    });
    child.stderr.setEncoding('utf8').on('data', keep);
    void exited.then(({ code, signal }) => reject(new Error(`${name} exited (${signal ?? code}) before listening:\n${text.slice(-4000)}`)));
  });
  const timeoutMs = opts.timeoutMs ?? 60_000;
  let timer: NodeJS.Timeout | undefined;
  const url = await Promise.race([
    base,
    new Promise<never>((_, reject) => {
      timer = setTimeout(() => reject(new Error(`${name} did not listen within ${timeoutMs} ms:\n${text.slice(-4000)}`)), timeoutMs);
    }),
  ])
    .catch((err: unknown) => {
      child.kill('SIGKILL');
      throw err;
    })
    .finally(() => clearTimeout(timer));

  // The document of this very process: a service started earlier on the same port may have
  // published another one.
  contracts.set(url, loadContract(url));
  await contracts.get(url);
  const service: Service = {
    name,
    child,
    pid: child.pid!,
    base: url,
    logs,
    exited,
    output: () => text,
    waitForLog(match, ms) {
      const found = logs.find(match);
      if (found !== undefined) return Promise.resolve(found);
      return new Promise((resolve, reject) => {
        const waiter = { match, resolve: (l: LogLine) => (clearTimeout(t), resolve(l)) };
        const t = setTimeout(() => {
          waiters.splice(waiters.indexOf(waiter), 1);
          reject(new Error(`${name}: no matching log line within ${ms} ms`));
        }, ms);
        waiters.push(waiter);
      });
    },
    async stop(graceMs = 20_000) {
      if (alive(child)) {
        child.kill('SIGTERM');
        const t = setTimeout(() => child.kill('SIGKILL'), graceMs);
        const result = await exited;
        clearTimeout(t);
        return result;
      }
      return exited;
    },
    async kill() {
      if (alive(child)) child.kill('SIGKILL');
      await exited;
    },
  };
  return service;
}

/**
 * Stops every service process this test file started that still runs: SIGTERM, so each stops its
 * dev chain and closes its files before the test removes its DATA_DIR, then SIGKILL after
 * `graceMs`. (A killed service leaves its anvil to the watchdog, which may still be writing the
 * chain's state while the directory is removed.)
 */
export async function stopAllServices(graceMs = 10_000): Promise<void> {
  const all = [...running].filter(alive);
  for (const c of all) c.kill('SIGTERM');
  await Promise.all(
    all.map(
      (c) =>
        new Promise<void>((resolve) => {
          const force = setTimeout(() => c.kill('SIGKILL'), graceMs);
          const done = () => {
            clearTimeout(force);
            resolve();
          };
          if (!alive(c)) done();
          else c.once('exit', done);
        }),
    ),
  );
}

export interface HttpRes {
  status: number;
  body: any;
  headers: Headers;
  ms: number;
}

/** The published document of each service, by base URL; undefined when it could not be read. */
const contracts = new Map<string, Promise<Contract | undefined>>();

async function loadContract(base: string): Promise<Contract | undefined> {
  try {
    const res = await fetch(`${base}/openapi.json`, { signal: AbortSignal.timeout(30_000) });
    // Behind EDGE_SECRET, or a service already gone: its answers go unchecked.
    if (!res.ok) return undefined;
    return contractFor((await res.json()) as Record<string, unknown>);
  } catch {
    return undefined;
  }
}

async function contractAt(base: string): Promise<Contract | undefined> {
  if (!contracts.has(base)) contracts.set(base, loadContract(base));
  const contract = await contracts.get(base);
  if (contract === undefined) contracts.delete(base);
  return contract;
}

/** One JSON request over the network; its answer is held to the service's published document (./contract.ts). */
export async function http(
  base: string,
  method: string,
  url: string,
  opts: { key?: string; body?: unknown; headers?: Record<string, string>; timeoutMs?: number } = {},
): Promise<HttpRes> {
  const started = performance.now();
  const res = await fetch(base + url, {
    method,
    headers: {
      ...(opts.body === undefined ? {} : { 'content-type': 'application/json' }),
      ...(opts.key === undefined ? {} : { 'ocp-apim-subscription-key': opts.key }),
      ...opts.headers,
    },
    ...(opts.body === undefined ? {} : { body: JSON.stringify(opts.body) }),
    signal: AbortSignal.timeout(opts.timeoutMs ?? 30_000),
  });
  const text = await res.text();
  const ms = performance.now() - started;
  let body: unknown = text;
  if ((res.headers.get('content-type') ?? '').includes('json') && text !== '') body = JSON.parse(text);
  const contract = await contractAt(base);
  contract?.check({ method, url, status: res.status, header: (name) => res.headers.get(name) ?? undefined, text });
  return { status: res.status, body, headers: res.headers, ms };
}

export interface HttpSession {
  wallet: string;
  headers: Record<string, string>;
}

/** Signs in over HTTP (EIP-712) and returns the headers an admin-app request carries. */
export async function signInOverHttp(base: string, account: PrivateKeyAccount, siteOrigin: string): Promise<HttpSession> {
  const ch = await http(base, 'POST', '/api/auth/challenge', { body: { wallet: account.address } });
  if (ch.status !== 200) throw new Error(`challenge: ${ch.status} ${JSON.stringify(ch.body)}`);
  const signature = await sign(account, ch.body.typedData);
  const login = await http(base, 'POST', '/api/auth/login', { body: { wallet: account.address, nonce: ch.body.nonce, signature } });
  if (login.status !== 200) throw new Error(`login: ${login.status} ${JSON.stringify(login.body)}`);
  const cookie = login.headers.getSetCookie().find((c) => c.startsWith('cb_auth_token='));
  if (cookie === undefined) throw new Error('login set no session cookie');
  return {
    wallet: account.address.toLowerCase(),
    headers: { cookie: cookie.split(';')[0]!, 'x-csrf-token': String(login.body.csrfToken), origin: siteOrigin },
  };
}
