/**
 * Typed domain errors. Domain code throws these; one error handler (src/http/errors.ts) turns
 * them into `{error, message}` with the status the specification gives.
 */
import type { ErrorCode } from '../contract/common.ts';

export class AppError extends Error {
  constructor(
    readonly status: number,
    readonly code: ErrorCode,
    message: string,
    readonly extra: Record<string, unknown> = {},
    options?: { cause?: unknown },
  ) {
    super(message, options);
    this.name = new.target.name;
  }
}

export class InvalidInput extends AppError {
  constructor(message: string, code: ErrorCode = 'invalid_input') {
    super(400, code, message);
  }
}

export class Unauthorized extends AppError {
  constructor(message = 'A valid subscription key is required') {
    super(401, 'unauthorized', message);
  }
}

export class Forbidden extends AppError {
  constructor(message: string) {
    super(403, 'forbidden', message);
  }
}

export class NotFound extends AppError {
  constructor(message: string, code: ErrorCode = 'not_found') {
    super(404, code, message);
  }
}

export class Conflict extends AppError {
  constructor(message: string, code: ErrorCode = 'conflict') {
    super(409, code, message);
  }
}

export class SplitRequired extends AppError {
  constructor() {
    super(403, 'split_required', 'Configure a split before creating orders or terminal receipts');
  }
}

export class RateLimited extends AppError {
  constructor(resetAt: number, message = 'Rate limit exceeded; retry after resetAt') {
    super(429, 'rate_limited', message, { resetAt });
  }
}

/** The instance runs without a chain (no CHAIN configured): what must be read from or sent to one cannot be. */
export class NoChain extends AppError {
  constructor() {
    super(503, 'chain_unavailable', 'This instance runs without a chain');
  }
}

/** The database cannot be reached; routes with a degraded answer catch this. */
export class DatabaseUnavailable extends AppError {
  constructor(cause?: unknown) {
    super(503, 'database_unavailable', 'The database is unavailable; retry shortly', {}, { cause });
  }
}

/**
 * The database did not confirm a commit (the connection broke or the answer timed out after COMMIT
 * was sent): the write may or may not be stored. Never a 503, whose promise is that nothing
 * happened; the retry with the same Idempotency-Key finds the write or makes it.
 */
export class CommitOutcomeUnknown extends AppError {
  constructor(cause?: unknown) {
    super(
      500,
      'failed',
      'The database did not confirm the write, so it may or may not be stored. Retry with the same Idempotency-Key: ' +
        'the retry answers as the first write did, or makes it now',
      {},
      { cause },
    );
  }
}

/** The local journal could not be written (a full disk): nothing was acknowledged or stored. */
export class JournalUnavailable extends AppError {
  constructor(cause?: unknown) {
    super(503, 'database_unavailable', 'The database is unavailable and the local journal cannot be written; retry shortly', {}, { cause });
  }
}
