/**
 * Same-origin calls to the Splitline API. The session cookie is HttpOnly, so the browser sends it;
 * the CSRF token lives only in memory and goes on every state-changing request. Every POST carries
 * an Idempotency-Key (DESIGN.md "Writes, retries and instances"): one key per user action, so a
 * retry of the same action is answered as the first attempt was instead of being applied twice.
 * Every answer is checked against its schema from the API contract (src/contract/) before a page
 * sees it, so a page works with the contract's types and an unexpected answer fails here, by name.
 */
import type { Static, TSchema } from '@sinclair/typebox';
import { check, matches } from '../../../src/contract/check.ts';
import { ErrorBody } from '../../../src/contract/common.ts';

export class ApiError extends Error {
  constructor(
    readonly status: number,
    readonly code: string,
    message: string,
  ) {
    super(message);
    this.name = 'ApiError';
  }
}

let csrfToken: string | null = null;
let onSessionLost: (() => void) | null = null;

export function setCsrfToken(token: string | null): void {
  csrfToken = token;
}

/** The session's CSRF token, for requests not sent through call() (the APK upload's XMLHttpRequest). */
export function currentCsrfToken(): string | null {
  return csrfToken;
}

/**
 * A new Idempotency-Key: a random UUID. crypto.randomUUID exists only on secure pages (https or
 * localhost); an admin app reached over plain http on a LAN address builds the same from
 * getRandomValues, which every page has.
 */
export function newIdempotencyKey(): string {
  if (typeof crypto.randomUUID === 'function') return crypto.randomUUID();
  const b = crypto.getRandomValues(new Uint8Array(16));
  b[6] = (b[6]! & 0x0f) | 0x40;
  b[8] = (b[8]! & 0x3f) | 0x80;
  const hex = Array.from(b, (x) => x.toString(16).padStart(2, '0')).join('');
  return `${hex.slice(0, 8)}-${hex.slice(8, 12)}-${hex.slice(12, 16)}-${hex.slice(16, 20)}-${hex.slice(20)}`;
}

/** Called when the server answers 401 to a signed-in call: the session expired or was revoked. */
export function whenSessionLost(handler: (() => void) | null): void {
  onSessionLost = handler;
}

/** `/api/x` resolved against the page's base, so the app also works under a path prefix. */
export function apiUrl(path: string): string {
  return new URL(`../${path.replace(/^\//, '')}`, document.baseURI).toString();
}

export interface CallOptions {
  body?: unknown;
  query?: Record<string, string | number | boolean | undefined>;
  /** Set for the sign-in calls, whose 401 does not mean a lost session. */
  anonymous?: boolean;
  /**
   * The Idempotency-Key of a POST. A caller that retries an action passes the same key to every
   * attempt; without one, each call is its own action and gets a new key.
   */
  idempotencyKey?: string;
}

export async function call<T extends TSchema>(
  method: 'GET' | 'POST' | 'PUT' | 'DELETE',
  path: string,
  answer: T,
  opts: CallOptions = {},
): Promise<Static<T>> {
  const url = new URL(apiUrl(path));
  for (const [k, v] of Object.entries(opts.query ?? {})) if (v !== undefined && v !== '') url.searchParams.set(k, String(v));
  const headers: Record<string, string> = { accept: 'application/json' };
  if (opts.body !== undefined) headers['content-type'] = 'application/json';
  if (method !== 'GET' && csrfToken !== null) headers['x-csrf-token'] = csrfToken;
  if (method === 'POST') headers['idempotency-key'] = opts.idempotencyKey ?? newIdempotencyKey();
  let res: Response;
  try {
    res = await fetch(url, {
      method,
      headers,
      credentials: 'same-origin',
      body: opts.body === undefined ? undefined : JSON.stringify(opts.body),
    });
  } catch (err) {
    throw new ApiError(0, 'network', `The server could not be reached (${err instanceof Error ? err.message : String(err)})`);
  }
  const text = await res.text();
  let json: unknown = undefined;
  if (text !== '' && (res.headers.get('content-type') ?? '').includes('json')) {
    try {
      json = JSON.parse(text);
    } catch (err) {
      throw new ApiError(res.status, 'bad_response', `The server answered malformed JSON (${(err as Error).message})`);
    }
  }
  if (!res.ok) {
    if (res.status === 401 && !opts.anonymous) onSessionLost?.();
    throw refusalOf(res.status, res.statusText, json);
  }
  return check(answer, json, `${method} ${path}`);
}

/**
 * The error a refused request raises: the server's `{error, message}` when the answer is one (a
 * proxy in front of it may answer something else), else the HTTP status.
 */
export function refusalOf(status: number, statusText: string, body: unknown): ApiError {
  if (matches(ErrorBody, body)) return new ApiError(status, body.error, body.message);
  return new ApiError(status, `http_${status}`, `The server answered ${status} ${statusText}`);
}

/** A person-readable message for any failure, preferring the server's own `message`. */
export function messageOf(err: unknown): string {
  if (err instanceof Error) return err.message;
  return String(err);
}
