/**
 * Limits on what a client may send, enforced before any handler runs:
 *
 * - body: BODY_LIMIT (256 KiB; a few routes set their own) → 413 payload_too_large;
 * - JSON nesting: MAX_JSON_DEPTH levels → 400 invalid_input, checked on the raw text before parsing,
 *   so no recursive code (validation, serialization, logging) ever meets a deeper document;
 * - headers: MAX_HEADER_BYTES in all → 431 headers_too_large, from Node's HTTP parser;
 * - time: REQUEST_TIMEOUT_MS for the whole request (headers and body, counted from its first byte)
 *   → 408 request_timeout and the connection is closed, so a client trickling bytes (slowloris)
 *   cannot hold a socket. Node times the headers; the application times the body
 *   (src/http/request-time.ts), because one route needs more: the APK upload, once its checks
 *   passed, has APK_UPLOAD_TIMEOUT_MS for the whole upload and may never go REQUEST_TIMEOUT_MS
 *   without receiving a byte. Node's own requestTimeout is only a backstop beyond both;
 * - text: U+0000 anywhere in a path parameter, the query or a JSON string → 400 invalid_input.
 *   PostgreSQL text cannot hold it, so it would otherwise fail deep in a query as a 500.
 *
 * Answers made before routing (malformed HTTP, oversized headers, timeouts, malformed URLs) go out
 * as `{error, message}` with the same security headers as every other answer.
 */
import type { ServerOptions } from 'node:http';
import type { Socket } from 'node:net';
import type { FastifyError, FastifyInstance, FastifyReply, FastifyRequest, RouteOptions } from 'fastify';
import { InvalidInput } from '../lib/errors.ts';
import { errorRef } from './schemas.ts';
import { jsonHeaders } from './security-headers.ts';

export const BODY_LIMIT = 256 * 1024;
export const MAX_JSON_DEPTH = 32;
/** Node's default, set explicitly so a --max-http-header-size flag cannot widen it unnoticed. */
export const MAX_HEADER_BYTES = 16 * 1024;
/** Longest path parameter the router accepts; longer ones are refused with 400. */
export const MAX_PARAM_LENGTH = 200;

/**
 * Fastify and Node server options for the limits above. `longestRequestMs` is the longest time
 * any route may take to receive its request (the APK upload's budget).
 */
export function serverLimits(
  requestTimeoutMs: number,
  longestRequestMs: number,
): {
  bodyLimit: number;
  requestTimeout: number;
  routerOptions: { maxParamLength: number };
  http: ServerOptions;
} {
  // Node's clock is server-wide, so it is only the backstop here: the application holds each
  // request to its own route's budget (request-time.ts) and always answers first.
  const backstopMs = Math.max(requestTimeoutMs, longestRequestMs) + requestTimeoutMs;
  return {
    bodyLimit: BODY_LIMIT,
    requestTimeout: backstopMs,
    routerOptions: { maxParamLength: MAX_PARAM_LENGTH },
    http: {
      // Also to the server's constructor, which checks headersTimeout against it: Fastify sets
      // requestTimeout only after, so a REQUEST_TIMEOUT_MS over Node's default of 300 s (up to
      // the 600 s allowed) failed the start against that default.
      requestTimeout: backstopMs,
      maxHeaderSize: MAX_HEADER_BYTES,
      // The headers of every request, whatever its route, within REQUEST_TIMEOUT_MS.
      headersTimeout: requestTimeoutMs,
      // How often Node looks for requests over their time; its 30 s default would let a short
      // REQUEST_TIMEOUT_MS run up to 30 s late.
      connectionsCheckingInterval: Math.max(50, Math.min(30_000, Math.floor(requestTimeoutMs / 4))),
    },
  };
}

const NUL_MESSAGE = 'Text may not contain the NUL character (U+0000)';
const SURROGATE_MESSAGE =
  'Text must be well-formed Unicode: a lone UTF-16 surrogate (such as \\ud800 without its pair) is not a character';

const isHigh = (c: number) => c >= 0xd800 && c <= 0xdbff;
const isLow = (c: number) => c >= 0xdc00 && c <= 0xdfff;
/** The code unit of the \uXXXX escape whose backslash is at `i`, or -1. */
function escapedUnit(text: string, i: number): number {
  if (text.charCodeAt(i) !== 0x5c || text.charCodeAt(i + 1) !== 0x75) return -1;
  const hex = text.slice(i + 2, i + 6);
  return /^[0-9a-fA-F]{4}$/.test(hex) ? parseInt(hex, 16) : -1;
}

/**
 * What makes `text`, read as JSON, unacceptable before it is even parsed: arrays and objects
 * nested deeper than `maxDepth` (brackets inside strings do not count), a NUL character in a
 * string (escaped as \u0000; a raw one is invalid JSON anyway), or a lone UTF-16 surrogate
 * (\ud800 without its low half): JSON.parse accepts it, but it is no character, and PostgreSQL's
 * json refuses it, so it would fail deep inside a write. Linear, no recursion.
 */
export function jsonProblem(text: string, maxDepth: number): 'too_deep' | 'nul' | 'surrogate' | null {
  let depth = 0;
  let inString = false;
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    if (inString) {
      if (c === 0x5c) {
        const unit = escapedUnit(text, i);
        if (unit === 0) return 'nul';
        if (isHigh(unit)) {
          if (!isLow(escapedUnit(text, i + 6))) return 'surrogate';
          i += 11; // both escapes
        } else if (isLow(unit)) return 'surrogate';
        else if (unit !== -1) i += 5;
        else i++; // skip the escaped character
      } else if (c === 0x22) inString = false;
      else if (isHigh(c)) {
        if (!isLow(text.charCodeAt(i + 1))) return 'surrogate';
        i++;
      } else if (isLow(c)) return 'surrogate';
    } else if (c === 0x22) inString = true;
    else if (c === 0x5b || c === 0x7b) {
      if (++depth > maxDepth) return 'too_deep';
    } else if (c === 0x5d || c === 0x7d) depth--;
  }
  return null;
}

/**
 * Replaces the JSON body parser with one that refuses documents nested deeper than
 * MAX_JSON_DEPTH, then parses as Fastify does (secure-json-parse: `__proto__` and
 * `constructor.prototype` keys are refused). Must run before any route or scope is registered,
 * since scopes copy the parsers they start with.
 */
export function installJsonParser(app: FastifyInstance): void {
  const parse = app.getDefaultJsonParser('error', 'error');
  app.removeContentTypeParser('application/json');
  app.addContentTypeParser('application/json', { parseAs: 'string' }, (request, body, done) => {
    const text = typeof body === 'string' ? body : body.toString('utf8');
    const problem = jsonProblem(text, MAX_JSON_DEPTH);
    if (problem !== null) {
      const message = { nul: NUL_MESSAGE, surrogate: SURROGATE_MESSAGE, too_deep: `The JSON body nests deeper than ${MAX_JSON_DEPTH} levels` }[problem];
      done(new InvalidInput(message), undefined);
      return;
    }
    void parse(request, text, done);
  });
}

const hasNul = (v: unknown): boolean =>
  typeof v === 'string' ? v.includes('\u0000') : Array.isArray(v) ? v.some(hasNul) : false;
/** A high surrogate without a low one after it, or a low one without a high one before it. */
const LONE_SURROGATE = /[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/;
const hasLoneSurrogate = (v: unknown): boolean =>
  typeof v === 'string' ? LONE_SURROGATE.test(v) : Array.isArray(v) ? v.some(hasLoneSurrogate) : false;

/**
 * Refuses U+0000 and lone UTF-16 surrogates in path parameters and the query string, for every
 * route, before validation.
 */
export function refuseNulInUrl(app: FastifyInstance): void {
  app.addHook('preValidation', (request, _reply, done) => {
    for (const part of [request.params, request.query]) {
      if (part === null || typeof part !== 'object') continue;
      const values = Object.values(part);
      if (values.some(hasNul)) {
        done(new InvalidInput(NUL_MESSAGE));
        return;
      }
      if (values.some(hasLoneSurrogate)) {
        done(new InvalidInput(SURROGATE_MESSAGE));
        return;
      }
    }
    done();
  });
}

/** Methods whose requests may carry a body that Fastify parses. */
const BODY_METHODS = new Set(['POST', 'PUT', 'PATCH', 'DELETE', 'OPTIONS']);

/**
 * Documents, on every route that has response schemas, the refusals the framework itself can
 * give before the handler runs: 400 (a malformed URL, query, JSON or schema violation) and, where
 * a body is read, 413 (too large) and 415 (an unsupported content type). They use the Error schema.
 */
export function documentFrameworkErrors(app: FastifyInstance): void {
  app.addHook('onRoute', (route: RouteOptions) => {
    const response = route.schema?.response as Record<string, unknown> | undefined;
    if (route.schema === undefined || response === undefined) return;
    const methods = Array.isArray(route.method) ? route.method : [route.method];
    const statuses = ['400', ...(methods.some((m) => BODY_METHODS.has(m)) ? ['413', '415'] : [])];
    const added: Record<string, unknown> = {};
    for (const s of statuses) if (response[s] === undefined) added[s] = errorRef;
    if (Object.keys(added).length > 0) route.schema = { ...route.schema, response: { ...response, ...added } };
  });
}

/**
 * Malformed URLs (bad percent-encoding) and over-long path parameters are refused by the router
 * before any route (and so any hook) is chosen: this answers them like every other 400.
 */
export function frameworkErrorHandler(https: boolean) {
  return (err: FastifyError, request: FastifyRequest, reply: FastifyReply): void => {
    const message =
      err.code === 'FST_ERR_MAX_PARAM_LENGTH'
        ? `A path segment is longer than ${MAX_PARAM_LENGTH} characters`
        : 'The URL is malformed (invalid percent-encoding)';
    request.log.debug({ code: err.code }, 'malformed URL refused');
    void reply
      .code(400)
      .headers({ ...jsonHeaders(https), 'x-correlation-id': request.id })
      .type('application/json; charset=utf-8')
      .send(JSON.stringify({ error: 'invalid_input', message }));
  };
}

interface RawAnswer {
  status: number;
  reason: string;
  error: string;
  message: string;
}

export const REQUEST_TIMEOUT: RawAnswer = {
  status: 408,
  reason: 'Request Timeout',
  error: 'request_timeout',
  message: 'The request was not received in time',
};

const CLIENT_ERRORS: Record<string, RawAnswer> = {
  ERR_HTTP_REQUEST_TIMEOUT: REQUEST_TIMEOUT,
  HPE_HEADER_OVERFLOW: {
    status: 431,
    reason: 'Request Header Fields Too Large',
    error: 'headers_too_large',
    message: `The request headers exceed ${MAX_HEADER_BYTES} bytes`,
  },
};
const MALFORMED: RawAnswer = { status: 400, reason: 'Bad Request', error: 'invalid_input', message: 'The request is not valid HTTP/1.1' };

/** A whole HTTP/1.1 response with `{error, message}`, the security headers and `Connection: close`. */
export function rawAnswer(answer: RawAnswer, https: boolean): string {
  const body = JSON.stringify({ error: answer.error, message: answer.message });
  const headers = {
    ...jsonHeaders(https),
    'content-type': 'application/json; charset=utf-8',
    'content-length': String(Buffer.byteLength(body)),
    connection: 'close',
  };
  const lines = Object.entries(headers).map(([k, v]) => `${k}: ${v}\r\n`);
  return `HTTP/1.1 ${answer.status} ${answer.reason}\r\n${lines.join('')}\r\n${body}`;
}

/**
 * Writes `response` (from rawAnswer) and closes the connection, or only closes it when a
 * response on it has already started (its bytes would be corrupted) or `response` is null.
 */
export function answerAndClose(socket: Socket, response: string | null, responseStarted: boolean): void {
  if (response !== null && socket.writable && !responseStarted) {
    socket.end(response, () => socket.destroy());
    // A client that does not read the answer does not keep the socket either.
    setTimeout(() => socket.destroy(), 2000).unref();
    return;
  }
  socket.destroy();
}

/**
 * Node's 'clientError': a request the HTTP parser refused or that ran out of time. Answers
 * `{error, message}` and closes the connection. The error itself is not logged whole: it carries
 * the raw bytes received, credentials included.
 */
export function clientErrorHandler(https: boolean) {
  return function (this: FastifyInstance, err: NodeJS.ErrnoException, socket: Socket): void {
    if (err.code === 'ECONNRESET' || socket.destroyed) return;
    const answer = CLIENT_ERRORS[err.code ?? ''] ?? MALFORMED;
    this.log.debug({ code: err.code, status: answer.status }, 'client error');
    const pending = (socket as Socket & { _httpMessage?: { headersSent?: boolean } })._httpMessage;
    answerAndClose(socket, rawAnswer(answer, https), pending?.headersSent === true);
  };
}
