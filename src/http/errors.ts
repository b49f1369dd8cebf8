/**
 * The one place that turns errors into `{error, message}` bodies. A 5xx never carries internals:
 * it is logged with the correlation id, which the body names for support.
 */
import type { FastifyError, FastifyInstance } from 'fastify';
import type { IncomingMessage } from 'node:http';
import { AppError, CommitOutcomeUnknown } from '../lib/errors.ts';
import { isConnectionError, neverReachedServer } from '../lib/db-errors.ts';
import { unknownQueryMessage } from './strict-query.ts';

const SAFE_METHODS = new Set(['GET', 'HEAD', 'OPTIONS']);

const CODE_BY_STATUS: Record<number, string> = {
  400: 'invalid_input',
  401: 'unauthorized',
  403: 'forbidden',
  404: 'not_found',
  405: 'method_not_allowed',
  408: 'request_timeout',
  409: 'conflict',
  413: 'payload_too_large',
  415: 'unsupported_media_type',
  429: 'rate_limited',
  431: 'headers_too_large',
};

export function installErrorHandling(app: FastifyInstance): void {
  app.setErrorHandler((err: FastifyError | AppError, request, reply) => {
    if (err instanceof AppError) {
      if (err.status === 503) reply.header('retry-after', '5');
      // Seconds until the budget resets, for clients that read the standard header rather than resetAt.
      if (err.status === 429 && typeof err.extra.resetAt === 'number') {
        reply.header('retry-after', String(Math.max(1, Math.ceil((err.extra.resetAt - Date.now()) / 1000))));
      }
      if (err.status >= 500) request.log.error({ err }, 'request failed');
      if (err instanceof CommitOutcomeUnknown) {
        return reply.status(500).send({ error: err.code, message: `${err.message} (correlation id ${request.id})` });
      }
      return reply.status(err.status).send({ error: err.code, message: err.message, ...err.extra });
    }
    // A client that hangs up mid-body fails the body's stream ("aborted", ECONNRESET) before the
    // body was read in full: its own connection, not the database's. Nobody is left to answer;
    // the line says what happened. Anything else, after a body was read, is the service's fault.
    if (clientAborted(request.raw, err) && !isDatabaseError(err)) {
      request.log.info({ err: err.message }, 'client closed the connection before its request was read');
      return reply.status(400).send({ error: 'invalid_input', message: 'The request was not received in full' });
    }
    if (isConnectionError(err)) {
      // A write whose statement may have reached the server has an unknown outcome: a 503 would
      // promise that nothing happened, and the client's retry could repeat it.
      if (!SAFE_METHODS.has(request.method) && !neverReachedServer(err)) {
        request.log.error({ err }, 'database connection lost during a write; its outcome is unknown');
        const unknown = new CommitOutcomeUnknown(err);
        return reply.status(500).send({ error: unknown.code, message: `${unknown.message} (correlation id ${request.id})` });
      }
      request.log.error({ err }, 'database unavailable');
      reply.header('retry-after', '5');
      return reply.status(503).send({ error: 'database_unavailable', message: 'The database is unavailable; retry shortly' });
    }
    const fe = err;
    if (fe.validation) {
      return reply.status(400).send({ error: 'invalid_input', message: unknownQueryMessage(fe, request) ?? fe.message });
    }
    const status = typeof fe.statusCode === 'number' ? fe.statusCode : 500;
    if (status >= 400 && status < 500) {
      return reply.status(status).send({ error: CODE_BY_STATUS[status] ?? 'bad_request', message: fe.message });
    }
    request.log.error({ err }, 'unhandled error');
    return reply.status(500).send({
      error: 'failed',
      message: `Internal error; quote correlation id ${request.id} to support`,
    });
  });

  app.setNotFoundHandler((request, reply) => {
    reply.status(404).send({ error: 'not_found', message: `No route for ${request.method} ${request.url.split('?')[0]}` });
  });
}

/** Errors raised by a query (Drizzle wraps the driver's error with the SQL it ran). */
function isDatabaseError(err: unknown): boolean {
  for (let e: unknown = err, depth = 0; e instanceof Error && depth < 5; e = e.cause, depth++) {
    if (typeof (e as { query?: unknown }).query === 'string' || typeof (e as { severity?: unknown }).severity === 'string') return true;
  }
  return false;
}


/**
 * True when the client itself cut its request short: the body stream ended without its end
 * (Node's `readableAborted`) or failed with the socket's own error. Node also marks a request
 * `destroyed` once its body was read in full, so that alone says nothing.
 */
function clientAborted(raw: IncomingMessage, err: unknown): boolean {
  if (raw.readableAborted) return true;
  const code = (err as { code?: unknown }).code;
  return raw.socket?.destroyed === true && (code === 'ECONNRESET' || code === 'ECONNABORTED' || (err as Error).message === 'aborted');
}
