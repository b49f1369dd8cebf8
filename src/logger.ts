import { pino, stdSerializers, type Bindings, type ChildLoggerOptions, type DestinationStream, type Logger } from 'pino';

/**
 * Header and field names whose values never reach a log line. Request headers and bodies are not
 * logged at all today; these paths keep it so if a log line ever carries them.
 */
export const REDACT_PATHS = [
  'req.headers["ocp-apim-subscription-key"]',
  'req.headers.cookie',
  'req.headers.authorization',
  'req.headers["x-edge-secret"]',
  'req.headers["x-csrf-token"]',
  'headers["ocp-apim-subscription-key"]',
  'headers.cookie',
  '*.signature',
  '*.primaryKey',
  '*.secondaryKey',
  '*.key',
  '*.secret',
  'headers.authorization',
  'headers["x-edge-secret"]',
  'headers["x-csrf-token"]',
  'res.headers["set-cookie"]',
  '*.csrfToken',
  '*.token',
  '*.privateKey',
  '*.edgeSecret',
  '*.jwtSecret',
  '*.splitDeployerKey',
  '*.storageConnectionString',
];

/**
 * Errors as pino logs them, without the bound values of a failed SQL query. Drizzle puts them in
 * the message ("params: ...") and in a `params` field, and they can be secrets (a webhook
 * endpoint's signing secret is inserted as one); the query text itself, with $1 placeholders, stays.
 */
export function serializeError(err: unknown): unknown {
  if (!(err instanceof Error)) return err;
  const out = stdSerializers.err(err) as unknown as Record<string, unknown>;
  const bound: string[] = [];
  for (let e: unknown = err, depth = 0; e instanceof Error && depth < 10; e = e.cause, depth++) {
    const { params, query } = e as { params?: unknown; query?: unknown };
    if (Array.isArray(params) && typeof query === 'string') bound.push(`params: ${String(params)}`);
  }
  if (bound.length === 0) return out;
  const scrub = (text: unknown) =>
    typeof text === 'string' ? bound.reduce((t, b) => t.split(b).join('params: [redacted]'), text) : text;
  out.message = scrub(out.message);
  out.stack = scrub(out.stack);
  if ('params' in out) out.params = '[redacted]';
  return out;
}

/** The service's logger; `destination` defaults to stdout (tests pass a stream to read the lines). */
export function createLogger(level: string, destination?: DestinationStream): Logger {
  const options = { level, redact: { paths: REDACT_PATHS, censor: '[redacted]' }, serializers: { err: serializeError } };
  return destination === undefined ? pino(options) : pino(options, destination);
}

type Level = 'fatal' | 'error' | 'warn' | 'info' | 'debug' | 'trace';
type LogMethod = Logger['info'];

/**
 * A request's logger, made the first time the request logs at an enabled level. Fastify gives
 * every request a child bound to its correlation id, and pino builds a child's bindings at once
 * (serialised and redacted), which cost a receipt read more than its database query; most
 * requests log nothing. Lines are the same as the eager child's: same bindings, same options.
 */
export class RequestLogger {
  private made: Logger | undefined;

  constructor(
    private readonly parent: Logger,
    private readonly bindings: Bindings,
    private readonly options: ChildLoggerOptions,
  ) {
    // A route with a log level of its own: its child decides what is enabled from the start.
    if (options.level !== undefined) this.made = parent.child(bindings, options);
  }

  private get logger(): Logger {
    return (this.made ??= this.parent.child(this.bindings, this.options));
  }

  private write(level: Level, args: Parameters<LogMethod>): void {
    if ((this.made ?? this.parent).isLevelEnabled(level)) this.logger[level](...args);
  }

  get level(): string {
    return (this.made ?? this.parent).level;
  }
  set level(level: string) {
    this.logger.level = level;
  }
  fatal(...args: Parameters<LogMethod>): void {
    this.write('fatal', args);
  }
  error(...args: Parameters<LogMethod>): void {
    this.write('error', args);
  }
  warn(...args: Parameters<LogMethod>): void {
    this.write('warn', args);
  }
  info(...args: Parameters<LogMethod>): void {
    this.write('info', args);
  }
  debug(...args: Parameters<LogMethod>): void {
    this.write('debug', args);
  }
  trace(...args: Parameters<LogMethod>): void {
    this.write('trace', args);
  }
  silent(): void {}
  child(bindings: Bindings, options?: ChildLoggerOptions): Logger {
    return this.logger.child(bindings, options);
  }
}
