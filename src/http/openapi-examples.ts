/**
 * Examples made from schemas, for the answers (and, failing a written one, the request bodies) of
 * the OpenAPI document that carry none: a value that fits the schema, preferring the examples it
 * and its fields carry, else one named for its field (a wallet for `payTo`, Unix ms for
 * `createdAt`). Redocly's rules check every example against its schema (test/openapi-lint.test.ts).
 */

/** The JSON Schema keywords (as the OpenAPI 3.1 document carries them) that examples are made from. */
export interface Schema {
  $ref?: string;
  example?: unknown;
  examples?: unknown[];
  const?: unknown;
  enum?: unknown[];
  default?: unknown;
  anyOf?: Schema[];
  oneOf?: Schema[];
  type?: string | string[];
  format?: string;
  properties?: Record<string, Schema>;
  required?: string[];
  items?: Schema;
  minItems?: number;
  pattern?: string;
  minimum?: number;
  exclusiveMinimum?: number;
  maximum?: number;
}


const WALLET_EXAMPLE = '0x3c44cdddb6a900fa2b585dd299e03d12fa4293bc';
const HASH_EXAMPLE = '0x8f2a55949038a9610f50fb23b5883af3b4ecb3c3bb792cbcefbd1542c692be63';
const MS_EXAMPLE = 1767225600000;

const STRING_HINTS: [RegExp, string][] = [
  [/^(receiptId|id)$/, 'order-1001'],
  [/(wallet|address|buyer|payer|payTo|recipient|counterparty|createdBy|grantedBy|^to$|^token$)/i, WALLET_EXAMPLE],
  [/(hash|txHash)$/i, HASH_EXAMPLE],
  [/paymentUrl/, 'http://localhost:8080/pay/order-1001?t=v3K9cQ1xT2bY7nL0pR5sWg'],
  [/rpcUrl/, 'http://localhost:8080/dev/rpc'],
  [/(url|Url)$/, 'https://shop.example/hooks/splitline'],
  [/(origin|Origins)$/i, 'https://shop.example'],
  [/^currency$/, 'USD'],
  [/symbol$/i, 'USDC'],
  [/brandName|^name$/, 'Splitline'],
  [/displayName/, 'Ada'],
  [/label/, 'Flat white'],
  [/^sku$/, 'espresso'],
  [/(jurisdictionCode|^code$)/, 'CA'],
  [/timestamp/, '2026-01-01T00:00:00.000Z'],
  [/csrfToken|nonce/, 'Jx3bq9Lw0sV4nZ8cT1yR6g'],
  [/signature/, '0x' + '5f'.repeat(65)],
  [/(^key$|primaryKey|secondaryKey)/, 'spl_Zq7mW2xK9vT4bN8cR1yL5sD3fG6hJ0pQ'],
  [/prefix/, 'spl_Zq7m'],
  [/secret/, 'whsec_8s2Kd91LxQv3TnP0aZr7YbWc'],
  [/etag/i, '"5d41402abc4b2a76b9719d911017c592"'],
  [/^data$/, '0x3a5be8cb'],
  [/platform/, 'web'],
  [/^app$|brandKey/, 'splitline'],
];

const INTEGER_HINTS: [RegExp, number][] = [
  [/(At|Since|Seen|Heartbeat|Timestamp|^at$|lastModified)$/, MS_EXAMPLE],
  [/chainId/, 31337],
  [/sharesBps/, 9950],
  [/FeeBps/, 50],
  [/[dD]ecimals/, 6],
  [/[sS]tatusCode/, 200],
  [/rateLimitPerMinute/, 600],
  [/durationMs/, 120],
  [/size/, 1048576],
  [/xp/, 1200],
];

const NUMBER_HINTS: [RegExp, number][] = [
  [/taxRate|^rate$/, 0.0825],
  [/Pct$/, 2.5],
  [/fees/, 0.035],
  [/(Usd|usd|^amount$)/, 7],
  [/xp/, 1200],
];

function hinted<T>(hints: [RegExp, T][], name: string): T | undefined {
  return hints.find(([re]) => re.test(name))?.[1];
}

function clamp(value: number, s: Schema): number {
  let v = value;
  if (typeof s.minimum === 'number' && v < s.minimum) v = s.minimum;
  if (typeof s.exclusiveMinimum === 'number' && v <= s.exclusiveMinimum) v = s.exclusiveMinimum + 1;
  if (typeof s.maximum === 'number' && v > s.maximum) v = s.maximum;
  return v;
}

/** The schema a local reference (`#/components/schemas/X`) names in the document. */
function resolveRef(ref: string, doc: object): Schema {
  let node: unknown = doc;
  for (const part of ref.replace(/^#\//, '').split('/')) {
    node = node !== null && typeof node === 'object' ? (node as Record<string, unknown>)[part] : undefined;
  }
  return node ?? {};
}

const isNullSchema = (s: Schema) => s.type === 'null' || (Array.isArray(s.enum) && s.enum.length === 1 && s.enum[0] === null);

/** A value that fits `schema`, preferring the examples it carries; `name` is the property it fills. */
export function sample(schema: Schema | undefined, doc: object, name: string, depth: number): unknown {
  if (schema === undefined || schema === null || typeof schema !== 'object') return null;
  if (typeof schema.$ref === 'string') return sample(resolveRef(schema.$ref, doc), doc, name, depth);
  if (schema.example !== undefined) return schema.example;
  if (Array.isArray(schema.examples) && schema.examples.length > 0) return schema.examples[0];
  if (schema.const !== undefined) return schema.const;
  if (Array.isArray(schema.enum)) return schema.enum.find((v: unknown) => v !== null) ?? schema.enum[0];
  if (schema.default !== undefined) return schema.default;
  for (const union of [schema.anyOf, schema.oneOf]) {
    if (Array.isArray(union) && union.length > 0) {
      return sample(union.find((b) => !isNullSchema(b)) ?? union[0], doc, name, depth);
    }
  }
  const type = Array.isArray(schema.type) ? (schema.type.find((t) => t !== 'null') ?? 'null') : schema.type;
  if (type === 'object' || (type === undefined && schema.properties !== undefined)) {
    const required = new Set<string>(schema.required ?? []);
    const out: Record<string, unknown> = {};
    if (depth > 8) return out;
    for (const [key, sub] of Object.entries(schema.properties ?? {})) {
      if (required.has(key) || sub.examples !== undefined || sub.example !== undefined) out[key] = sample(sub, doc, key, depth + 1);
    }
    return out;
  }
  if (type === 'array') {
    if (depth > 8) return [];
    const n = Math.max(1, schema.minItems ?? 1);
    return Array.from({ length: n }, () => sample(schema.items ?? {}, doc, name, depth + 1));
  }
  if (type === 'string') {
    if (schema.pattern === '^(0|[1-9][0-9]*)$') return '7000000';
    if (schema.pattern === '^0x[0-9a-fA-F]{64}$') return HASH_EXAMPLE;
    if (schema.pattern === '^0x[0-9a-fA-F]{40}$') return WALLET_EXAMPLE;
    return hinted(STRING_HINTS, name) ?? 'text';
  }
  if (type === 'integer') return clamp(hinted(INTEGER_HINTS, name) ?? 1, schema);
  if (type === 'number') return clamp(hinted(NUMBER_HINTS, name) ?? 1, schema);
  if (type === 'boolean') return true;
  if (type === 'null') return null;
  return {};
}
