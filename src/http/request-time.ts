/**
 * How long a client may take to send a request (see the limits comment in limits.ts).
 *
 * Node's own `requestTimeout` is server-wide, and the APK upload needs far longer than any other
 * route. So Node keeps only the headers deadline (and a backstop over the longest budget), and the
 * application holds every request with a body to REQUEST_TIMEOUT_MS, counted like Node counts it,
 * from the request's first byte. A route that must receive for longer (the upload) first passes
 * its own checks, then releases that deadline and reads its body through `bodyWithin`, which
 * enforces the route's budget and an idle limit.
 */
import type { IncomingMessage, Server, ServerResponse } from 'node:http';
import type { Socket } from 'node:net';
import { finished, Transform, type Readable, type TransformCallback } from 'node:stream';
import { AppError } from '../lib/errors.ts';
import { answerAndClose, rawAnswer, REQUEST_TIMEOUT } from './limits.ts';

export class RequestTimeout extends AppError {
  constructor(message: string) {
    super(408, 'request_timeout', message);
  }
}

const kDeadline = Symbol('request deadline');
type Pending = IncomingMessage & { [kDeadline]?: NodeJS.Timeout | undefined };

/** Deadline timers set and not yet cleared or fired, over every server in the process. */
let liveDeadlines = 0;

/** How many request deadlines are running now: each request still receiving its body has one. */
export function runningRequestDeadlines(): number {
  return liveDeadlines;
}

/**
 * Milliseconds since the request's first byte arrived. Node's HTTP parser knows (it times
 * `requestTimeout` from there) but does not document it; without it, 0: the deadline then counts
 * from the end of the headers, which Node's headersTimeout bounds anyway.
 */
export function elapsedMs(req: IncomingMessage): number {
  const parser = (req.socket as Socket & { parser?: { duration?: () => number } | null }).parser;
  return typeof parser?.duration === 'function' ? parser.duration() : 0;
}

/**
 * Every request with a body must have arrived whole within `timeoutMs` of its first byte, or it
 * gets 408 request_timeout and the connection is closed, as Node answers a request over its
 * `requestTimeout`. That includes a body still arriving after an early answer (a 401 before the
 * body was read, a 404): Node drains such a body to keep the connection, so it would otherwise
 * be bounded only by the server-wide backstop; then the connection is closed without a second
 * answer. Listening on the server rather than in a Fastify hook covers the answers given before
 * routing too (a malformed URL).
 *
 * Per request: a timer and two listeners, only for requests that carry a body, all cleared when
 * the body is complete or the request is closed.
 */
export function enforceRequestDeadline(server: Server, opts: { timeoutMs: number; https: boolean }): void {
  const refusal = rawAnswer(REQUEST_TIMEOUT, opts.https);
  server.on('request', (req: Pending, res: ServerResponse) => {
    const headers = req.headers;
    const length = headers['content-length'];
    if (req.complete || (headers['transfer-encoding'] === undefined && (length === undefined || length === '0'))) return;
    // Whole milliseconds: Node keeps one timer list per distinct duration.
    const left = opts.timeoutMs - Math.floor(elapsedMs(req));
    req[kDeadline] = setTimeout(expire, left > 0 ? left : 0, req, res, refusal);
    liveDeadlines++;
    req.on('end', settle);
    req.on('close', settle);
  });
}

function settle(this: Pending): void {
  if (this[kDeadline] === undefined) return;
  clearTimeout(this[kDeadline]);
  this[kDeadline] = undefined;
  liveDeadlines--;
}

function expire(req: Pending, res: ServerResponse, refusal: string): void {
  req[kDeadline] = undefined;
  liveDeadlines--;
  // The client delivered everything; what remains is the application's own work.
  if (req.complete || req.socket.destroyed) return;
  answerAndClose(req.socket, refusal, res.headersSent);
}

/** The route now bounds its body itself (bodyWithin); the REQUEST_TIMEOUT_MS deadline no longer applies. */
export function releaseRequestDeadline(req: IncomingMessage): void {
  settle.call(req);
}

/**
 * `body` (the request's body stream) for a route that released its deadline: all of it must
 * arrive within `totalMs` of the request's first byte, with never more than `idleMs` without a
 * byte from the client. Either limit ends the stream with RequestTimeout (also kept in
 * `timedOut`), and the request is left open, not destroyed, so the route can still answer 408 (it
 * must then close the connection: the rest of the body is never read). Time the stream spends
 * paused because its reader is slow (a slow store) is not the client's silence.
 */
export function bodyWithin(req: IncomingMessage, body: Readable, limits: { totalMs: number; idleMs: number }): TimedBody {
  const leftMs = Math.max(0, limits.totalMs - Math.floor(elapsedMs(req)));
  return new TimedBody(req, body, leftMs, limits);
}

export class TimedBody extends Transform {
  timedOut: RequestTimeout | undefined;
  private readonly total: NodeJS.Timeout;
  private readonly idle: NodeJS.Timeout;

  constructor(
    private readonly req: IncomingMessage,
    private readonly source: Readable,
    leftMs: number,
    private readonly limits: { totalMs: number; idleMs: number },
  ) {
    super();
    this.total = setTimeout(() => this.expire(`The upload did not arrive within ${limits.totalMs / 1000} s`), leftMs);
    this.idle = setTimeout(() => this.onIdle(), limits.idleMs);
    // A client that disconnects ends the body with the socket's error.
    finished(source, (err) => {
      if (err) this.destroy(err);
    });
    source.pipe(this);
  }

  override _transform(chunk: Buffer, _enc: BufferEncoding, done: TransformCallback): void {
    this.idle.refresh();
    done(null, chunk);
  }

  override _flush(done: TransformCallback): void {
    this.stop();
    done();
  }

  override _destroy(err: Error | null, done: (error?: Error | null) => void): void {
    this.stop();
    this.source.unpipe(this);
    done(err);
  }

  private stop(): void {
    clearTimeout(this.total);
    clearTimeout(this.idle);
  }

  private onIdle(): void {
    // Paused by backpressure: the client cannot send while the reader is behind.
    if (this.source.readableFlowing === false || this.source.readableLength > 0) {
      this.idle.refresh();
      return;
    }
    this.expire(`No bytes of the upload arrived for ${this.limits.idleMs / 1000} s`);
  }

  private expire(message: string): void {
    // Everything arrived: what remains is the store's work, not the client's.
    if (this.req.complete || this.destroyed) return;
    this.timedOut = new RequestTimeout(message);
    this.destroy(this.timedOut);
  }
}
