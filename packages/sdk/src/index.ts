/**
 * @splitline/sdk: a typed client for the Splitline API. Its types are generated from the
 * service's OpenAPI document (scripts/sdk-types.ts in the repository); see README.md.
 */
import { verify } from './webhooks.ts';

export { Splitline, KEY_HEADER } from './client.ts';
export type {
  CreateOrderParams,
  CreateReceiptParams,
  ListEventsParams,
  ListReceiptsParams,
  OrderCreated,
  Receipt,
  ReceiptCreated,
  ReceiptDetail,
  ReceiptStatus,
  SplitlineOptions,
  WriteOptions,
} from './client.ts';
export { SplitlineError, type ApiErrorBody, type ErrorCode } from './errors.ts';
export { SplitlineConnectionError, newIdempotencyKey, type RetryOptions } from './retry.ts';
export { WebhookVerificationError, type Event, type WebhookHeaders } from './webhooks.ts';
export type { components, operations, paths } from './openapi.ts';

/** Standard Webhooks verification of a delivery, without a client: `webhooks.verify(rawBody, headers, secret)`. */
export const webhooks = { verify };
