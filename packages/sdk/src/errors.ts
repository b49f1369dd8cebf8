/** What the service answers when a call fails: every error is `{error, message}` with its status. */
import type { components } from './openapi.ts';

export type ApiErrorBody = components['schemas']['Error'];
/** The service's machine-readable error codes (`invalid_input`, `not_found`, `conflict`, ...). */
export type ErrorCode = ApiErrorBody['error'];

/** The service answered with a status that is not 2xx (after any retries). */
export class SplitlineError extends Error {
  override readonly name = 'SplitlineError';
  /** The HTTP status. */
  readonly status: number;
  /** The service's error code. */
  readonly error: ErrorCode;
  /** The whole body, with its optional fields (`resetAt` with rate_limited, `reason`...). */
  readonly body: ApiErrorBody;
  /** X-Correlation-Id: quote it to support. */
  readonly correlationId: string | undefined;
  /** The write's Idempotency-Key: sending it again with the same body repeats this answer, or finishes a write that failed. */
  readonly idempotencyKey: string | undefined;

  constructor(status: number, body: ApiErrorBody, opts: { correlationId?: string; idempotencyKey?: string } = {}) {
    super(`${status} ${body.error}: ${body.message}`);
    this.status = status;
    this.error = body.error;
    this.body = body;
    this.correlationId = opts.correlationId;
    this.idempotencyKey = opts.idempotencyKey;
  }
}

function isErrorBody(value: unknown): value is ApiErrorBody {
  return (
    typeof value === 'object' &&
    value !== null &&
    typeof (value as { error?: unknown }).error === 'string' &&
    typeof (value as { message?: unknown }).message === 'string'
  );
}

/** The error for a failed answer; a body that is not `{error, message}` (a proxy's page) is kept as the message. */
export function errorFrom(response: Response, body: unknown, idempotencyKey?: string): SplitlineError {
  const parsed: ApiErrorBody = isErrorBody(body)
    ? body
    : { error: 'failed', message: `Unexpected answer: ${typeof body === 'string' ? body.slice(0, 200) : JSON.stringify(body)}` };
  return new SplitlineError(response.status, parsed, {
    correlationId: response.headers.get('x-correlation-id') ?? undefined,
    idempotencyKey,
  });
}
