/**
 * The service in a process of its own, for the tests that need one. Started by the launcher that
 * the bench and the soak use too (scripts/service-launcher.ts, which says how it starts, waits and
 * stops): by default the compiled build exactly as `npm start` runs it (dist/, rebuilt first when
 * a source is newer than it, so a test still runs the code as edited); `program` runs something
 * else, such as the sources through tsx (the launcher's sourceProgram()). The build, not tsx: node
 * loading tsx and transpiling the sources made each start several seconds slower (about 18 s
 * against 13.5 s from a fresh DATA_DIR on a loaded 2-core machine), and CI starts the service some
 * twenty times in each pass; start.test.ts builds dist/ in the same pass anyway. On loopback and a
 * port the OS picks, its JSON log lines kept for the test to read. Every process started here is killed when the test process exits,
 * however it exits, and `stopAllServices()` (for a test's `after`) ends the ones still running.
 *
 * What only tests add: every answer read through `http()` is held to the service's published
 * document (./contract.ts).
 */
import type { PrivateKeyAccount } from 'viem/accounts';
import { ensureServerBuild, startArgs } from '../../scripts/ensure-server-build.ts';
import { launchService, type LaunchedService } from '../../scripts/service-launcher.ts';
import { contractFor, type Contract } from './contract.ts';
import { sign } from './session.ts';

export { ROOT, stopAllServices, type LogLine } from '../../scripts/service-launcher.ts';

export type Service = LaunchedService;

/**
 * The edge secret every request of http() carries: a service started with EDGE_SECRET set to it
 * shows /healthz's details (database, journal) to these tests; one without EDGE_SECRET ignores it.
 */
export const TEST_EDGE_SECRET = 'edge-secret-of-the-tests';

/** The node arguments of `npm start`, after building dist/ if it is stale (once per test process). */
let compiled: Promise<string[]> | undefined;
function compiledProgram(): Promise<string[]> {
  compiled ??= ensureServerBuild({ log: () => {} }).then(() => startArgs());
  return compiled;
}

/** Starts the service (the compiled build unless `program`) with `env` on top of a minimal base; resolves once it listens. */
export async function startService(
  name: string,
  env: Record<string, string>,
  opts: { timeoutMs?: number; nodeArgs?: string[]; program?: string[] } = {},
): Promise<Service> {
  const service = await launchService({
    name,
    env: { LOG_LEVEL: 'info', PUBLIC_RATE_LIMIT_PER_MINUTE: '1000000', ...env },
    program: opts.program ?? (await compiledProgram()),
    nodeArgs: opts.nodeArgs,
    timeoutMs: opts.timeoutMs,
  });
  // The document of this very process: a service started earlier on the same port may have
  // published another one.
  contracts.set(service.base, loadContract(service.base));
  await contracts.get(service.base);
  return service;
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
    const res = await fetch(`${base}/openapi.json`, { headers: { 'x-edge-secret': TEST_EDGE_SECRET }, signal: AbortSignal.timeout(30_000) });
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
      'x-edge-secret': TEST_EDGE_SECRET,
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
