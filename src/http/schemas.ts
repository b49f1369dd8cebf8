/**
 * The server's side of the contract (src/contract/): the error codes a route documents beside its
 * schemas, and the shared schemas with an `$id`, registered once on the app so that each appears
 * once in the OpenAPI document. Every request and response schema lives in src/contract/.
 */
import type { ErrorCode } from '../contract/common.ts';
import { ErrorBody } from '../contract/common.ts';
import { LineItem, Metadata, Receipt } from '../contract/receipts.ts';

declare module 'fastify' {
  interface FastifySchema {
    /**
     * The error codes this operation answers, by status, where they differ from the codes every
     * operation of its kind answers (src/http/openapi.ts lists those). Documentation only.
     */
    errorCodes?: Partial<Record<number, readonly ErrorCode[]>>;
  }
}

export { ERROR_CODES, errorRef, HANDLER_CHECKS, type ErrorCode } from '../contract/common.ts';

export const sharedSchemas = [ErrorBody, LineItem, Metadata, Receipt];
