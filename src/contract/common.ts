/**
 * What every resource's contract shares: the error body and its closed set of codes, wallets,
 * transaction hashes, USD amounts, base units, the degraded flag, and the helpers that build enum
 * schemas. A contract module imports only @sinclair/typebox and other contract modules, so the
 * server, the tests and the web app (in the browser) all read the same definitions.
 */
import { Type, type NumberOptions, type Static, type StringOptions, type TRef, type TSchema, type TUnsafe } from '@sinclair/typebox';

/**
 * JSON Schema keywords a handler (or the domain code behind it) enforces itself, shown in the
 * OpenAPI document but left out of the schema the request validator compiles. Two reasons:
 * the check answers an error code of its own that the specification names (invalid_wallet
 * rather than invalid_input), or JSON Schema cannot state it exactly (`multipleOf: 0.01` is
 * inexact for binary floats: 19.99 / 0.01 is not a whole number, so a validator would refuse
 * $19.99; src/lib/money.ts checks the decimal text instead). src/http/openapi.ts merges
 * these keywords into the schema it publishes.
 */
export const HANDLER_CHECKS = 'x-handler-checks';

/**
 * A string schema limited to `values`: `{type: 'string', enum}`, typed as their union both for
 * this TypeBox and for the one the Fastify type provider infers request and reply types with
 * (which reads the `type` and `enum` keywords themselves).
 */
export function stringEnum<const T extends readonly string[]>(
  values: T,
  options: StringOptions = {},
): TUnsafe<T[number]> & { readonly type: 'string'; readonly enum: T } {
  return Type.Unsafe<T[number]>({ ...options, type: 'string', enum: [...values] }) as TUnsafe<T[number]> & { readonly type: 'string'; readonly enum: T };
}

/** A string the handler checks against `values` itself (its message names the unknown ones); documented as the enum. */
export function handlerCheckedEnum(values: readonly string[], options: StringOptions = {}) {
  return Type.String({ ...options, [HANDLER_CHECKS]: { enum: [...values] } });
}

/**
 * The same schema for an answer whose value the domain hands over typed as a plain string: the
 * document lists the values, the handler's type stays `string`.
 */
export function answerEnum(values: readonly string[], options: StringOptions = {}): TUnsafe<string> & { readonly type: 'string' } {
  return Type.Unsafe<string>({ ...options, type: 'string', enum: [...values] }) as TUnsafe<string> & { readonly type: 'string' };
}

/** How a list route answers: JSON (the default), or every row as text/csv (`format=csv`, src/lib/csv.ts). */
export const EXPORT_FORMATS = ['json', 'csv'] as const;
export type ExportFormat = (typeof EXPORT_FORMATS)[number];

/** A reference to a shared schema (one with an `$id`), typed as that schema. */
export function ref<T extends TSchema>(schema: T): TRef & { static: Static<T> } {
  if (schema.$id === undefined) throw new Error('ref() needs a schema with an $id');
  return Type.Ref(schema.$id);
}

export const Nullable = <T extends TSchema>(schema: T, options = {}) => Type.Union([schema, Type.Null()], options);

/**
 * Every error code the server answers, what it means, and a message it comes with. The Error
 * schema's enum and the examples of every error response come from here; test/openapi.test.ts
 * checks that every code the source throws is listed.
 */
export const ERROR_CODES = {
  invalid_input: ['A value is missing, malformed or out of range; the message names it', 'body/totalUsd must be > 0'],
  missing_receipt_id: ['receiptId is missing or empty', 'receiptId is required'],
  missing_status: ['status is missing or empty', 'status is required'],
  invalid_wallet: ['A wallet is not a 0x-prefixed 40-hex address', 'wallet must be a 0x-prefixed 40-hex address'],
  invalid_buyer: ['buyer is not a 0x-prefixed 40-hex address', 'buyer must be a 0x-prefixed 40-hex address'],
  invalid_usd: ['usd is not a positive amount with at most two decimals', 'usd must be greater than zero'],
  invalid_amount: ['amountUsd is not a positive amount with at most two decimals', 'amountUsd must be greater than zero'],
  items_required: ['The order names no item', 'An order needs at least one item'],
  inventory_item_not_found: ['An order line names a sku or id that is not in the inventory', 'No inventory item with sku espresso'],
  platform_recipient_not_configured: [
    'The platform recipient (PLATFORM_RECIPIENT_ADDRESS) is not configured on the server',
    'The platform recipient address is not configured: set PLATFORM_RECIPIENT_ADDRESS on the server',
  ],
  bad_request: ['The request was refused for another reason the message names', 'The request was refused'],
  unauthorized: ['No valid subscription key, or no valid admin session', 'Missing Ocp-Apim-Subscription-Key header'],
  forbidden: [
    'The key lacks the scope, the session lacks the role or its x-csrf-token is wrong, the data is another merchant’s, or the request bypassed the edge proxy',
    'This subscription lacks the receipts:write scope',
  ],
  split_required: ['No split is configured yet', 'Configure a split before creating orders or terminal receipts'],
  not_found: ['Nothing with that id (or route) exists for this merchant', 'Receipt order-1001 not found'],
  apk_not_visible: ['A partner container serves only its own brand’s package', 'This container serves only the splitline package'],
  method_not_allowed: ['The method is not allowed here', 'Method not allowed'],
  request_timeout: ['The request was not received within REQUEST_TIMEOUT_MS', 'The request was not received in time'],
  conflict: [
    'The id or Idempotency-Key was already used for another request, or the write conflicts with stored data',
    'This Idempotency-Key was already used for another request; send a new key for a new request',
  ],
  out_of_stock: ['Not enough stock for an order line', 'Only 2 of espresso left'],
  deprecated: ['The operation is gone; `reason` says what to use instead', "Withdraw from your own wallet: call the split contract's release(token, account) function"],
  payload_too_large: ['The body exceeds the route’s limit', 'Request body is too large'],
  unsupported_media_type: ['The Content-Type is not one the route reads', 'Unsupported Media Type: text/plain'],
  range_not_satisfiable: ['The Range lies outside the package', 'The package is 1048576 bytes long'],
  headers_too_large: ['The request headers exceed 16 KiB', 'The request headers exceed 16384 bytes'],
  rate_limited: ['The budget of this key, session or address is spent until resetAt', 'Rate limit exceeded; retry after resetAt'],
  failed: [
    'An internal error (quote the correlation id), or a write whose commit the database did not confirm: retry it with the same Idempotency-Key',
    'Internal error; quote correlation id 0b9c3f4e-8d52-4d1e-9a57-4cf0f2a1b6de to support',
  ],
  database_unavailable: ['The database is unreachable and this operation has no degraded answer; nothing was written', 'The database is unavailable; retry shortly'],
  chain_unavailable: ['This instance has no chain, or the chain did not answer; nothing was written', 'This instance runs without a chain'],
  invalid_signature: ['A signature does not recover the address it names', 'signature does not recover `from` for a transfer of `value` to this receipt’s payment address'],
  insufficient_balance: ['The payer holds less of the token than the payment needs', 'from holds 1000000 base units, less than the 7000000 due'],
  gasless_unavailable: ['Gasless payment is not possible for this receipt or token; pay with a token transfer', 'The token does not support EIP-3009 authorizations; pay with a token transfer'],
  nothing_due: ['The receipt owes nothing now', 'Nothing is due on this receipt'],
  authorization_used: ['The EIP-3009 authorization was used or canceled already', 'This authorization was used or canceled already'],
  relay_refused: ['The token refused the authorization when it was submitted; nothing was paid', 'The token refused the authorization: authorization is expired'],
  not_payable: ['The receipt has no payment address yet (its merchant has no split)', 'This receipt has no payment address yet'],
  relay_unavailable: ['No key here pays the gas of gasless payments', 'This deployment has no key to pay the gas of gasless payments; pay with a token transfer'],
  deployer_unfunded: [
    "The service's deployer account has too little ETH for the transaction's gas: the operator must fund it",
    "The service's deployer account 0xa0ee7a142d267c1f36714e4a8f75612f20a79720 has too little ETH to pay for deploying the split contract",
  ],
} as const satisfies Record<string, readonly [meaning: string, example: string]>;
export type ErrorCode = keyof typeof ERROR_CODES;

export const ErrorBody = Type.Object(
  {
    error: answerEnum(Object.keys(ERROR_CODES), { description: 'Machine-readable error code' }),
    message: Type.String({ description: 'What went wrong, for a person' }),
    resetAt: Type.Optional(Type.Integer({ description: 'With rate_limited: Unix ms when the budget resets' })),
    reason: Type.Optional(
      Type.String({
        description:
          'With deprecated: use_connected_wallet. With a refund whose txHash does not prove it: not_mined, reverted, ' +
          'no_transfer, too_little or already_used',
      }),
    ),
  },
  { $id: 'Error', title: 'Error', description: 'Every error answer: `{error, message}`, plus `resetAt` or `reason` where noted' },
);
export type ErrorBody = Static<typeof ErrorBody>;

export const errorRef = ref(ErrorBody);

/** Standard error responses for a route that needs a subscription key. */
export function keyErrors(...extra: number[]): Record<number, TSchema> {
  const out: Record<number, TSchema> = { 401: errorRef, 403: errorRef, 429: errorRef, 503: errorRef };
  for (const s of extra) out[s] = errorRef;
  return out;
}

/** Standard error responses for a route that needs the admin session. */
export const adminErrors = { 400: errorRef, 401: errorRef, 403: errorRef, 404: errorRef, 429: errorRef, 500: errorRef };

/** The OpenAPI security requirement of a key route (src/http/openapi.ts completes it from the route's config). */
export const security = [{ subscriptionKey: [] }];
/** The OpenAPI security requirement of a session route. */
export const cookieAuth = [{ sessionCookie: [] }];

const WALLET_PATTERN = '^0x[0-9a-fA-F]{40}$';
const WALLET_EXAMPLE = '0x3c44cdddb6a900fa2b585dd299e03d12fa4293bc';

/** A wallet address: the pattern and an example, for fields that describe themselves. */
export const WALLET = { pattern: WALLET_PATTERN, examples: [WALLET_EXAMPLE] };
export const Wallet = Type.String({ ...WALLET, description: '0x-prefixed, 40 hex digits' });

/**
 * A wallet the handler checks itself, answering `code` (invalid_wallet) rather than the
 * validator's invalid_input; the document still shows the pattern.
 */
export function HandlerCheckedWallet(options: StringOptions = {}) {
  return Type.String({ description: '0x-prefixed, 40 hex digits', examples: [WALLET_EXAMPLE], ...options, [HANDLER_CHECKS]: { pattern: WALLET_PATTERN } });
}

export const TxHash = Type.String({ pattern: '^0x[0-9a-fA-F]{64}$', description: 'Transaction hash: 0x + 64 hex digits' });

/** The largest amount the server holds, in cents (src/lib/money.ts). */
export const MAX_CENTS = 100_000_000_000_000n;
const MAX_USD = Number(MAX_CENTS / 100n);

/** A USD amount the server holds in cents: at most two decimals (checked by src/lib/money.ts). */
export function Usd(options: NumberOptions = {}) {
  return Type.Number({ minimum: 0, maximum: MAX_USD, ...options, [HANDLER_CHECKS]: { multipleOf: 0.01 } });
}

/** A USD amount in cents that must be above zero. */
export function PositiveUsd(options: NumberOptions = {}) {
  return Type.Number({ exclusiveMinimum: 0, maximum: MAX_USD, ...options, [HANDLER_CHECKS]: { multipleOf: 0.01 } });
}

/** Token base units as a decimal string (JSON numbers cannot hold them exactly). */
export const BaseUnits = (description: string) => Type.String({ pattern: '^(0|[1-9][0-9]*)$', description, examples: ['7000000'] });

/**
 * The units every amount names (DESIGN.md "Integrator API", Units; docs/decisions.md "Units"):
 * USD amounts are JSON numbers in fields ending `Usd`; token amounts are decimal strings of base
 * units in fields ending `BaseUnits`, beside `token` (the token contract's address) and
 * `decimals` (of the token: base units per token are 10^decimals). Fields the specification
 * names (amount, fees, usd, amountPaid...) keep their names and shapes beside them.
 */
export const TokenUnits = {
  token: Type.Union([Type.String({ pattern: '^0x[0-9a-fA-F]{40}$' }), Type.Null()], {
    description: 'The token contract the BaseUnits amounts are in (the one the service accepts); null on an instance without a chain',
    examples: ['0x5FbDB2315678afecb367f032d93F642f64180aa3'],
  }),
  decimals: Type.Integer({ minimum: 0, description: 'Of the token: one token is 10^decimals base units (USDC: 6)', examples: [6] }),
};

export const Degraded = {
  degraded: Type.Optional(Type.Boolean({ description: 'true: the database is unreachable; see "Degraded mode" in the introduction' })),
  reason: Type.Optional(answerEnum(['database_unavailable'])),
};

/** `{ok: true}`, an admin write's answer. */
export const Ok = (description: string) => Type.Object({ ok: Type.Literal(true) }, { description });
export type Ok = { ok: true };

/** The container types of a deployment (CONTAINER_TYPE). */
export const CONTAINER_TYPES = ['platform', 'partner'] as const;
export type ContainerType = (typeof CONTAINER_TYPES)[number];
