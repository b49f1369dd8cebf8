import { pino, type Logger } from 'pino';

/** Header and field names whose values never reach a log line. */
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
];

export function createLogger(level: string): Logger {
  return pino({ level, redact: { paths: REDACT_PATHS, censor: '[redacted]' } });
}
