/**
 * Drives one route with autocannon: a pre-flight request that must answer as expected, an
 * unmeasured warm-up, then the measured run.
 */
import autocannon from 'autocannon';

export interface Call {
  method: 'GET' | 'POST';
  path: string;
  body?: unknown;
}

export interface Scenario {
  label: string;
  expectStatus: number;
  headers: Record<string, string>;
  /** The next request to send; called for every request, so ids and queries can vary. */
  next(): Call;
  /** What is wrong with a pre-flight response body, or undefined when it is right. */
  check(body: unknown): string | undefined;
}

export interface Measured {
  reqPerSec: number;
  p50Ms: number;
  p99Ms: number;
  requests: number;
  non2xx: number;
  /** Responses with any status other than the expected one (2xx included). */
  unexpected: number;
  /** Requests without an answer within TIMEOUT_SEC: a server too slow for the load. */
  timeouts: number;
  /** Connection errors other than timeouts: a server that refused or dropped connections. */
  errors: number;
  statusCounts: Record<string, number>;
}

export interface LoadSettings {
  connections: number;
  durationSec: number;
  warmupSec: number;
}

/** A field of a parsed JSON body, or undefined when the body is not an object. */
export function field(body: unknown, name: string): unknown {
  return typeof body === 'object' && body !== null ? (body as Record<string, unknown>)[name] : undefined;
}

function parseJson(text: string): unknown {
  try {
    return JSON.parse(text);
  } catch {
    return text;
  }
}

export type Preflight = { ok: true } | { ok: false; notRegistered: boolean; message: string };

/**
 * Sends a few requests (enough to cover a rotation of variants); a route that is not registered
 * yet is told apart from one that fails.
 */
export async function preflight(baseUrl: string, s: Scenario, count = 4): Promise<Preflight> {
  for (let i = 0; i < count; i++) {
    const result = await preflightOne(baseUrl, s);
    if (!result.ok) return result;
  }
  return { ok: true };
}

async function preflightOne(baseUrl: string, s: Scenario): Promise<Preflight> {
  const call = s.next();
  const res = await fetch(baseUrl + call.path, {
    method: call.method,
    headers: s.headers,
    ...(call.body === undefined ? {} : { body: JSON.stringify(call.body) }),
  });
  const text = await res.text();
  const body = parseJson(text);
  const message = field(body, 'message');
  if (res.status === 404 && typeof message === 'string' && /^No route for/.test(message)) {
    return { ok: false, notRegistered: true, message: `${call.method} ${call.path.split('?')[0]} is not registered yet` };
  }
  const problem = res.status !== s.expectStatus ? `expected ${s.expectStatus}` : s.check(body);
  if (problem === undefined) return { ok: true };
  return { ok: false, notRegistered: false, message: `${call.method} ${call.path} answered ${res.status} (${problem}): ${text.slice(0, 300)}` };
}

/** As long as the service's own request timeout, so a slow answer still counts in the latency. */
const TIMEOUT_SEC = 30;

async function run(baseUrl: string, s: Scenario, connections: number, durationSec: number): Promise<autocannon.Result> {
  return autocannon({
    url: baseUrl,
    connections,
    duration: durationSec,
    timeout: TIMEOUT_SEC,
    requests: [
      {
        headers: s.headers,
        setupRequest: (request) => {
          const call = s.next();
          return {
            ...request,
            method: call.method,
            path: call.path,
            ...(call.body === undefined ? {} : { body: JSON.stringify(call.body) }),
          };
        },
      },
    ],
  });
}

/** Load that is not measured: `seconds` of the scenario, for a JIT and pools still cold. */
export async function warmUp(baseUrl: string, s: Scenario, o: LoadSettings, seconds: number): Promise<void> {
  await run(baseUrl, s, o.connections, seconds);
}

export async function measure(baseUrl: string, s: Scenario, o: LoadSettings): Promise<Measured> {
  await run(baseUrl, s, o.connections, o.warmupSec);
  const r = await run(baseUrl, s, o.connections, o.durationSec);
  const statusCounts = Object.fromEntries(Object.entries(r.statusCodeStats).map(([code, { count }]) => [code, count]));
  const answered = Object.values(statusCounts).reduce((a, b) => a + b, 0);
  return {
    reqPerSec: r.requests.average,
    p50Ms: r.latency.p50,
    p99Ms: r.latency.p99,
    requests: answered,
    non2xx: r.non2xx,
    unexpected: answered - (statusCounts[String(s.expectStatus)] ?? 0),
    timeouts: r.timeouts,
    errors: r.errors - r.timeouts,
    statusCounts,
  };
}
