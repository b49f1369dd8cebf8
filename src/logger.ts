import { pino, stdSerializers, type DestinationStream, type Logger } from 'pino';

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
