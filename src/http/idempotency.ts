/**
 * Idempotency-Key on every POST (DESIGN.md "Writes, retries and instances"). Scoped to the caller
 * (the merchant of a key or session; the client address on public routes): the same key with the
 * same request answers as the first call did for IDEMPOTENCY_RETENTION_MS (src/domain/writes.ts), with another request
 * 409 conflict. Answers are stored as they are sent; what makes a retry exactly-once is the
 * write id derived from the key (src/domain/writes.ts), claimed with the write itself, so a retry
 * whose first answer was lost (a crash, an ambiguous commit, a store that failed) finds its write.
 *
 * Stored: 2xx and 4xx answers (not 408 or 429), never 5xx or degraded answers, which a retry must
 * not repeat. A route whose answer carries a secret shown once (`config.idempotency: 'secret'`)
 * stores a 409 saying so instead of the secret; sign-in (`'none'`) answers afresh every time.
 */
import { createHash } from 'node:crypto';
import { Type } from '@sinclair/typebox';
import { and, eq } from 'drizzle-orm';
import type { FastifyInstance, FastifyRequest } from 'fastify';
import type { Logger } from 'pino';
import type { Db } from '../db/client.ts';
import { isDbDown } from '../lib/db-errors.ts';
import { idempotencyKeys } from '../db/schema.ts';
import { Conflict, InvalidInput } from '../lib/errors.ts';
import { freshWrite, type Write } from '../domain/writes.ts';

declare module 'fastify' {
  interface FastifyContextConfig {
    /** 'store' (default for POST): answers kept per key; 'secret': the answer holds a secret shown once; 'none': never stored. */
    idempotency?: 'store' | 'secret' | 'none';
  }
  interface FastifyRequest {
    idempotency: IdempotencyContext | null;
  }
}

export const IDEMPOTENCY_HEADER = 'idempotency-key';
const KEY = /^[\x20-\x7e]{1,255}$/;

interface IdempotencyContext {
  scope: string;
  /** The key as sent; null when the request carried none (it still has a write id). */
  key: string | null;
  write: Write;
  mode: 'store' | 'secret' | 'none';
}

/**
 * The write id of a request: derived from its caller and Idempotency-Key, so every retry carries
 * the same one; a fresh one when the request carried no key.
 */
export function writeOf(request: FastifyRequest): Write {
  request.idempotency ??= { scope: '', key: null, write: freshWrite(), mode: 'none' };
  return request.idempotency.write;
}

/** The caller an Idempotency-Key belongs to: the merchant, whatever credential it used; else the client address. */
function scopeOf(request: FastifyRequest): string {
  const wallet = request.principal?.wallet ?? request.session?.wallet;
  return wallet !== undefined ? `wallet:${wallet}` : `ip:${request.ip}`;
}

/** Fingerprint of a request: method, path and body (JSON as parsed, bytes as sent, or a stream's declared length and type). */
function requestHash(request: FastifyRequest): string {
  const h = createHash('sha256').update(`${request.method}\0${request.url.split('?')[0]}\0`);
  const body = request.body;
  if (Buffer.isBuffer(body)) h.update(body);
  else if (body !== undefined && body !== null && typeof (body as { pipe?: unknown }).pipe !== 'function') h.update(JSON.stringify(body));
  else h.update(`${request.headers['content-type'] ?? ''}\0${request.headers['content-length'] ?? ''}`);
  return h.digest('base64url');
}

export function registerIdempotency(app: FastifyInstance, opts: { db: Db; logger: Logger }): void {
  app.decorateRequest('idempotency', null);

  app.addHook('onRoute', (route) => {
    const methods = Array.isArray(route.method) ? route.method : [route.method];
    if (!methods.includes('POST')) return;
    const mode = (route.config ?? {}).idempotency ?? 'store';
    // The header in the route's schema, so the OpenAPI document shows it on every POST that keeps answers.
    if (mode !== 'none' && route.schema !== undefined && route.schema.headers === undefined) {
      route.schema.headers = Type.Object({
        'idempotency-key': Type.Optional(
          Type.String({
            minLength: 1,
            maxLength: 255,
            pattern: '^[\\x20-\\x7e]+$',
            description:
              'Makes a retry safe: the same key with the same request answers as the first call did for at least 24 hours; ' +
              'with another request, 409 conflict. Scoped to the caller. 1 to 255 printable ASCII characters.',
          }),
        ),
      });
    }
    const own = route.preHandler;
    const hook = async (request: FastifyRequest, reply: import('fastify').FastifyReply) => {
      const header = request.headers[IDEMPOTENCY_HEADER];
      if (header === undefined) return;
      if (typeof header !== 'string' || !KEY.test(header)) {
        throw new InvalidInput('Idempotency-Key must be 1 to 255 printable ASCII characters');
      }
      const scope = scopeOf(request);
      const hash = requestHash(request);
      const id = `idem:${createHash('sha256').update(`${scope}\0${header}`).digest('base64url')}`;
      request.idempotency = { scope, key: header, write: { id, hash }, mode };
      if (mode === 'none') return;
      let stored;
      try {
        [stored] = await opts.db
          .select()
          .from(idempotencyKeys)
          .where(and(eq(idempotencyKeys.scope, scope), eq(idempotencyKeys.key, header)));
      } catch (err) {
        // Without the store the write id still makes the retry exactly-once; the route decides
        // whether it can answer at all while the database is away.
        if (!isDbDown(err)) throw err;
        return;
      }
      if (stored === undefined) return;
      if (stored.requestHash !== hash) {
        throw new Conflict('This Idempotency-Key was already used for another request; send a new key for a new request');
      }
      reply.header('idempotent-replayed', 'true');
      if (stored.contentType !== null) reply.type(stored.contentType);
      return reply.status(stored.status).send(stored.body);
    };
    route.preHandler = own === undefined ? [hook] : [hook, ...(Array.isArray(own) ? own : [own])];
  });

  app.addHook('onSend', async (request, reply, payload) => {
    const ctx = request.idempotency;
    if (ctx === null || ctx.key === null || ctx.mode === 'none' || reply.getHeader('idempotent-replayed') !== undefined) return payload;
    const status = reply.statusCode;
    const storable = (status >= 200 && status < 300) || (status >= 400 && status < 500 && status !== 408 && status !== 429);
    if (!storable || typeof payload !== 'string' || (status < 300 && payload.includes('"degraded":true'))) return payload;
    const secret = ctx.mode === 'secret' && status < 300;
    const row = {
      scope: ctx.scope,
      key: ctx.key,
      requestHash: ctx.write.hash,
      status: secret ? 409 : status,
      contentType: secret ? 'application/json; charset=utf-8' : ((reply.getHeader('content-type') as string | undefined) ?? null),
      body: secret
        ? JSON.stringify({
            error: 'conflict',
            message: 'The first request with this Idempotency-Key succeeded, and its answer held a secret that is shown only once',
          })
        : payload,
      createdAt: Date.now(),
    };
    // Stored before the answer leaves, so a retry that follows it at once is answered from the
    // store. A row that cannot be stored only means a retry runs the route again, where the
    // write id finds the first write: the answer is never held back for it.
    try {
      await opts.db.insert(idempotencyKeys).values(row).onConflictDoNothing();
    } catch (err) {
      opts.logger.warn({ err, reqId: request.id }, 'idempotency: answer not stored; a retry will find its write by write id');
    }
    return payload;
  });
}
