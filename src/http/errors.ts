/**
 * The one place that turns errors into `{error, message}` bodies. A 5xx never carries internals:
 * it is logged with the correlation id, which the body names for support.
 */
import type { FastifyError, FastifyInstance } from 'fastify';
import { AppError } from '../domain/errors.ts';
import { isConnectionError } from '../db/client.ts';

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
      if (err.status >= 500) request.log.error({ err }, 'request failed');
      return reply.status(err.status).send({ error: err.code, message: err.message, ...err.extra });
    }
    // A client that hangs up mid-body fails the body's stream with ECONNRESET or "aborted": its
    // own connection, not the database's. Nobody is left to answer; the line says what happened.
    if (request.raw.destroyed && !isDatabaseError(err)) {
      request.log.info({ err: err.message }, 'client closed the connection before its request was read');
      return reply.status(400).send({ error: 'invalid_input', message: 'The request was not received in full' });
    }
    if (isConnectionError(err)) {
      request.log.error({ err }, 'database unavailable');
      reply.header('retry-after', '5');
      return reply.status(503).send({ error: 'database_unavailable', message: 'The database is unavailable; retry shortly' });
    }
    const fe = err as FastifyError;
    if (fe.validation) {
      return reply.status(400).send({ error: 'invalid_input', message: fe.message });
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

