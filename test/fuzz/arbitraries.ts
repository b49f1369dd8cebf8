/**
 * fast-check generators of hostile requests: bodies shaped by a route's schema with some fields
 * replaced by hostile values, arbitrary JSON, non-JSON, deep nesting and oversized documents;
 * query strings and path parameters of hostile text and bad percent-encoding; odd content types,
 * duplicated and oversized headers, bogus cookies and correlation ids.
 */
import fc from 'fast-check';
import type { FuzzRoute, Param, Schema } from './route-table.ts';

/** A JSON number token JSON.stringify cannot write: -0, 1e309, 1E2. */
export class RawToken {
  constructor(readonly text: string) {}
}

/** An object whose text repeats a key. */
export class DupKeys {
  constructor(readonly entries: [string, unknown][]) {}
}

/** JSON text of a generated value, RawToken and DupKeys included. */
export function toJsonText(v: unknown): string {
  if (v instanceof RawToken) return v.text;
  if (v instanceof DupKeys) return `{${v.entries.map(([k, x]) => `${JSON.stringify(k)}:${toJsonText(x)}`).join(',')}}`;
  if (Array.isArray(v)) return `[${v.map(toJsonText).join(',')}]`;
  if (v !== null && typeof v === 'object') {
    return `{${Object.entries(v).map(([k, x]) => `${JSON.stringify(k)}:${toJsonText(x)}`).join(',')}}`;
  }
  if (typeof v === 'number' && !Number.isFinite(v)) return 'null';
  return JSON.stringify(v) ?? 'null';
}

/** What the fuzzed merchant owns, so generated values sometimes name real rows. */
export interface Known {
  wallet: string;
  receiptId: string;
  sku: string;
  /** The `t` of the receipt's payment URL. */
  payToken: string;
}

const hex = (bytes: number) => fc.uint8Array({ minLength: bytes, maxLength: bytes }).map((b) => '0x' + Buffer.from(b).toString('hex'));

export const HOSTILE_STRINGS = [
  '', ' ', 'NaN', 'Infinity', '-Infinity', '-0', '1e308', '1e309', '0x1f', '1_000', ' 42 ', '4.2.1', 'null', 'true',
  'undefined', '[]', '{}', '__proto__', 'constructor', 'prototype', 'toString', 'hasOwnProperty',
  '\u0000', 'a\u0000b', '\ud800', '\udfff', '\u202e', '\ufeff', '\u2028', '😀', '👩‍👩‍👧‍👦', 'é', 'Ω', 'ﷺ', '\t', '\r\n',
  '<script>alert(1)</script>', "' OR '1'='1", '"; DROP TABLE receipts; --', '../../../etc/passwd', '..', '.', '%00', '%',
  '%ZZ', 'x-injected: 1\r\n', '${jndi:ldap://x}', '{{7*7}}', '0x', '0x' + 'g'.repeat(40), '0x' + 'f'.repeat(40),
  '0X' + 'F'.repeat(40), '0x' + '0'.repeat(64), 'https://93.184.216.34', 'http://127.0.0.1:1/', 'file:///etc/passwd',
  'javascript:alert(1)', 'link_opened', 'checkout_success', 'refund_all', 'primary', 'admin', 'superadmin',
];

export const hostileString: fc.Arbitrary<string> = fc.oneof(
  { weight: 4, arbitrary: fc.constantFrom(...HOSTILE_STRINGS) },
  { weight: 2, arbitrary: fc.string({ unit: 'grapheme', maxLength: 40 }) },
  { weight: 2, arbitrary: fc.string({ unit: 'binary', maxLength: 40 }) },
  { weight: 1, arbitrary: fc.integer({ min: 1000, max: 60_000 }).map((n) => 'x'.repeat(n)) },
  { weight: 1, arbitrary: fc.integer({ min: 100, max: 5000 }).map((n) => '😀'.repeat(n)) },
);

export const hostileNumber: fc.Arbitrary<unknown> = fc.oneof(
  fc.constantFrom<unknown>(
    new RawToken('-0'),
    new RawToken('1e309'),
    new RawToken('-1e309'),
    new RawToken('1E2'),
    new RawToken('99999999999999999999999'),
    new RawToken('0.000000000000000000001'),
    1e308,
    -1e308,
    5e-324,
    Number.MAX_SAFE_INTEGER + 2,
    -Number.MAX_SAFE_INTEGER,
    -1,
    0,
    0.1 + 0.2,
    1.005,
    0.001,
    2 ** 31,
    2 ** 63,
  ),
  fc.double({ noNaN: true, noDefaultInfinity: true }),
  fc.integer(),
);

const leaf: fc.Arbitrary<unknown> = fc.oneof(
  { weight: 4, arbitrary: hostileString },
  { weight: 3, arbitrary: hostileNumber },
  { weight: 1, arbitrary: fc.boolean() },
  { weight: 1, arbitrary: fc.constant(null) },
);

/** Any hostile JSON value, a few levels deep. */
export const hostileValue: fc.Arbitrary<unknown> = fc.letrec<{ value: unknown }>((tie) => ({
  value: fc.oneof(
    { depthSize: 'small', withCrossShrink: true },
    { weight: 6, arbitrary: leaf },
    { weight: 1, arbitrary: fc.array(tie('value'), { maxLength: 4 }) },
    { weight: 1, arbitrary: fc.dictionary(fc.oneof(hostileString, fc.constantFrom('__proto__', 'constructor')), tie('value'), { maxKeys: 4 }) },
  ),
})).value;

const TRACKING = ['link_opened', 'buyer_logged_in', 'checkout_initialized'];

/** Plausible values for well-known field names, so handlers past validation get exercised. */
function hinted(name: string, known: Known): fc.Arbitrary<unknown> | undefined {
  const n = name.toLowerCase();
  if (/wallet|address|buyer|recipient/.test(n)) return fc.oneof(fc.constant(known.wallet), hex(20), hex(20).map((w) => w.toUpperCase().replace('0X', '0x')));
  if (n === 'receiptid' || n === 'id') return fc.oneof(fc.constant(known.receiptId), fc.string({ minLength: 1, maxLength: 64 }));
  if (n === 't') return fc.oneof(fc.constant(known.payToken), fc.constant(known.payToken.slice(0, -1)), fc.string({ maxLength: 64 }));
  if (n === 'sku') return fc.oneof(fc.constant(known.sku), fc.string({ minLength: 1, maxLength: 64 }));
  if (n === 'status') return fc.constantFrom(...TRACKING, 'checkout_success', 'refund_partial', 'completed', 'LINK_OPENED');
  // IP literals only: a host name would make the SSRF check resolve it, and tests stay off the network.
  if (n === 'url') return fc.constantFrom('https://93.184.216.34/hook', 'http://127.0.0.1/x', 'ftp://93.184.216.34/', 'https://[::1]/', 'https://10.0.0.1/', 'https://[2606:4700::1111]:99999/', 'https://exa mple.com/', 'not a url');
  if (/txhash|transactionhash/.test(n)) return fc.oneof(hex(32), hex(31), hex(33));
  if (n === 'signature') return fc.oneof(hex(65), hex(64), hex(1));
  if (n === 'events') return fc.subarray(['receipt.completed', 'receipt.refunded', 'receipt.tx_mismatch', 'receipt.nope', '']);
  if (n === 'scopes') return fc.subarray(['receipts:read', 'receipts:write', 'split:read', 'users:read', 'admin:all', '*', '']);
  if (n === 'allowedembedorigins') return fc.array(fc.constantFrom('https://shop.example', 'http://localhost:3000', '*', 'null', 'https://x.example/path', "https://a.example 'unsafe-inline'"), { maxLength: 4 });
  if (/usd|amount|price|total|pct|rate/.test(n)) {
    return fc.oneof(fc.integer({ min: 0, max: 100_000 }).map((c) => c / 100), fc.double({ min: 0, max: 1e6, noNaN: true }), hostileNumber);
  }
  return undefined;
}

/** A value that fits `schema` most of the time and is hostile otherwise. */
export function valueFor(schema: Schema, name: string, known: Known, depth = 0): fc.Arbitrary<unknown> {
  return fc.oneof({ weight: 4, arbitrary: fitting(schema, name, known, depth) }, { weight: 1, arbitrary: hostileValue });
}

function fitting(schema: Schema, name: string, known: Known, depth: number): fc.Arbitrary<unknown> {
  if (schema.const !== undefined) return fc.constant(schema.const);
  if (Array.isArray(schema.enum)) return fc.constantFrom(...schema.enum);
  const union = schema.anyOf ?? schema.oneOf;
  if (Array.isArray(union) && union.length > 0) return fc.oneof(...union.map((s: Schema) => fitting(s, name, known, depth)));
  const type = Array.isArray(schema.type) ? schema.type[0] : schema.type;
  const hint = hinted(name, known);
  if (hint !== undefined && (type === 'string' || type === 'number' || type === 'integer' || type === undefined)) return hint;
  switch (type) {
    case 'string': {
      if (typeof schema.pattern === 'string' && schema.pattern.includes('0x')) return hex(20);
      const max = Math.min(schema.maxLength ?? 40, 200);
      return fc.oneof(
        fc.string({ minLength: Math.min(schema.minLength ?? 0, max), maxLength: max }),
        fc.string({ unit: 'grapheme', minLength: Math.min(schema.minLength ?? 0, max), maxLength: max }),
        ...(schema.maxLength !== undefined ? [fc.constant('y'.repeat(schema.maxLength)), fc.constant('y'.repeat(schema.maxLength + 1))] : []),
      );
    }
    case 'integer': {
      const min = schema.minimum ?? -1_000_000;
      const max = schema.maximum ?? 1_000_000;
      return fc.oneof(fc.integer({ min, max }), fc.constantFrom(min, max, min - 1, max + 1));
    }
    case 'number':
      return fc.oneof(
        fc.double({ min: schema.minimum ?? -1e9, max: schema.maximum ?? 1e9, noNaN: true }),
        fc.integer({ min: 0, max: 100_000 }).map((c) => c / 100),
      );
    case 'boolean':
      return fc.boolean();
    case 'null':
      return fc.constant(null);
    case 'array': {
      if (depth > 3) return fc.constant([]);
      const items = schema.items ?? {};
      return fc.array(valueFor(items, name, known, depth + 1), { minLength: Math.min(schema.minItems ?? 0, 3), maxLength: Math.min(schema.maxItems ?? 4, 4) });
    }
    case 'object':
      return depth > 3 ? fc.constant({}) : objectFor(schema, known, depth);
    default:
      return hostileValue;
  }
}

const MISSING = Symbol('missing');

function objectFor(schema: Schema, known: Known, depth: number): fc.Arbitrary<unknown> {
  const required = new Set<string>(schema.required ?? []);
  const props = Object.entries<Schema>(schema.properties ?? {});
  const fields = props.map(([k, s]) =>
    fc.option(valueFor(s, k, known, depth + 1), { nil: MISSING, freq: required.has(k) ? 12 : 2 }).map((v) => [k, v] as const),
  );
  const extras = fc.option(fc.dictionary(fc.oneof(hostileString, fc.constantFrom('__proto__', 'constructor', 'wallet')), hostileValue, { maxKeys: 3 }), { nil: undefined, freq: 4 });
  return fc.tuple(fc.tuple(...fields), extras, fc.boolean()).map(([entries, extra, dup]) => {
    const kept = entries.filter(([, v]) => v !== MISSING) as [string, unknown][];
    const all: [string, unknown][] = [...kept, ...Object.entries(extra ?? {})];
    // Sometimes a key twice: JSON.parse keeps the last one.
    if (dup && all.length > 0) return new DupKeys([...all, [all[0]![0], null]]);
    return Object.fromEntries(all);
  });
}

type PathStep = string | number;

function leafPaths(v: unknown, prefix: PathStep[] = []): PathStep[][] {
  const out: PathStep[][] = [prefix];
  if (Array.isArray(v)) v.forEach((x, i) => out.push(...leafPaths(x, [...prefix, i])));
  else if (v !== null && typeof v === 'object') for (const [k, x] of Object.entries(v)) out.push(...leafPaths(x, [...prefix, k]));
  return out;
}

/** `v` with the value at `path` replaced by change(old), or removed when change is undefined. */
function withChange(v: unknown, path: PathStep[], change: ((old: unknown) => unknown) | undefined): unknown {
  if (path.length === 0) return change === undefined ? v : change(v);
  const [head, ...rest] = path;
  if (Array.isArray(v)) {
    if (rest.length === 0 && change === undefined) return v.filter((_, i) => i !== head);
    return v.map((x, i) => (i === head ? withChange(x, rest, change) : x));
  }
  if (v !== null && typeof v === 'object') {
    const copy: Record<string, unknown> = { ...(v as Record<string, unknown>) };
    if (rest.length === 0 && change === undefined) delete copy[head as string];
    else copy[head as string] = withChange(copy[head as string], rest, change);
    return copy;
  }
  return v;
}

/**
 * A valid body with one or two places changed: a value replaced by a hostile one, wrapped in an
 * array, removed, or given an extra field. Reaches the checks that run past schema validation.
 */
export function mutated(example: unknown): fc.Arbitrary<unknown> {
  const paths = leafPaths(example);
  const one = fc.tuple(fc.constantFrom(...paths), fc.constantFrom('hostile', 'delete', 'wrap', 'extra'), hostileValue).map(
    ([path, how, value]) =>
      (base: unknown): unknown => {
        if (how === 'delete') return withChange(base, path, undefined);
        if (how === 'wrap') return withChange(base, path, (old) => [old]);
        if (how === 'extra') {
          return withChange(base, path, (old) =>
            old !== null && typeof old === 'object' && !Array.isArray(old) ? { ...old, extraField: value } : value,
          );
        }
        return withChange(base, path, () => value);
      },
  );
  return fc.array(one, { minLength: 1, maxLength: 2 }).map((changes) => changes.reduce((b, f) => f(b), example));
}

export interface Body {
  text: string | Buffer | undefined;
  contentType: string | undefined;
}

const CONTENT_TYPES = [
  'application/json; charset=utf-8',
  'Application/JSON',
  'application/json; charset=utf-16',
  'application/json;;;',
  'application/json, text/plain',
  'application/vnd.api+json',
  'text/plain',
  'text/html',
  'application/x-www-form-urlencoded',
  'multipart/form-data; boundary=xyz',
  'application/octet-stream',
  'application/vnd.android.package-archive',
  '*/*',
  'json',
  '',
  ';',
  'application/json; boundary="',
];

function nested(depth: number, kind: 'array' | 'object'): string {
  return kind === 'array' ? '['.repeat(depth) + ']'.repeat(depth) : '{"a":'.repeat(depth) + '1' + '}'.repeat(depth);
}

/**
 * A request body: schema-shaped, or (given a valid example) the example changed in a place or
 * two, most of the time; otherwise anything a client could send.
 */
export function bodyFor(route: FuzzRoute, known: Known, example?: unknown): fc.Arbitrary<Body> {
  const declared = route.bodyContentTypes[0] ?? 'application/json';
  const contentType = fc.oneof(
    { weight: 10, arbitrary: fc.constant<string | undefined>(declared) },
    { weight: 3, arbitrary: fc.constantFrom<string | undefined>(...CONTENT_TYPES, undefined) },
    { weight: 1, arbitrary: fc.string({ maxLength: 30 }).filter((s) => !/[\r\n]/.test(s)) },
  );
  const schema = route.body ?? {};
  const text = fc.oneof(
    { weight: example === undefined ? 8 : 4, arbitrary: valueFor(schema, '', known).map(toJsonText) },
    ...(example === undefined ? [] : [{ weight: 6, arbitrary: fc.oneof(fc.constant(example), mutated(example)).map(toJsonText) }]),
    { weight: 2, arbitrary: fc.jsonValue({ maxDepth: 4 }).map((v) => JSON.stringify(v)) },
    { weight: 1, arbitrary: hostileValue.map(toJsonText) },
    {
      weight: 1,
      arbitrary: fc.oneof(
        fc.string({ unit: 'binary', maxLength: 200 }),
        valueFor(schema, '', known).map((v) => toJsonText(v).slice(0, -1)),
        valueFor(schema, '', known).map((v) => '\ufeff' + toJsonText(v)),
        fc.constantFrom('', ' ', 'null', 'undefined', '"just a string"', '[]', '{}', '{"a":1,}', "{'a':1}", 'NaN', '-0', '1e309', '\u0000'),
      ),
    },
    {
      weight: 1,
      arbitrary: fc.tuple(fc.constantFrom(31, 32, 33, 40, 5000), fc.constantFrom<'array' | 'object'>('array', 'object')).map(([d, k]) => nested(d, k)),
    },
    { weight: 1, arbitrary: fc.integer({ min: 100_000, max: 300_000 }).map((n) => JSON.stringify({ blob: 'z'.repeat(n) })) },
  );
  const bytes = fc.uint8Array({ maxLength: 64 }).map((b) => Buffer.from(b));
  return fc.oneof(
    { weight: 12, arbitrary: fc.record({ text, contentType }) },
    { weight: 1, arbitrary: fc.record({ text: bytes, contentType }) },
    { weight: 1, arbitrary: fc.constant<Body>({ text: undefined, contentType: undefined }) },
  );
}

/** Text for a query or path value: a fitting value's text, or hostile text. */
export function paramText(p: Param, known: Known): fc.Arbitrary<string> {
  return fc.oneof(
    { weight: 3, arbitrary: fitting(p.schema, p.name, known, 0).map((v) => (typeof v === 'string' ? v : toJsonText(v))) },
    { weight: 2, arbitrary: hostileString },
  );
}

/** Percent-encoding as a client would send it; a lone surrogate has no UTF-8 form, so it goes as U+FFFD. */
export const encode = (text: string): string =>
  encodeURIComponent(text.replace(/[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/g, '\uFFFD'));

/** A percent-encoded component, or now and then one with invalid escapes appended. */
function encoded(text: string): fc.Arbitrary<string> {
  return fc.oneof(
    { weight: 8, arbitrary: fc.constant(encode(text)) },
    { weight: 1, arbitrary: fc.constantFrom('%ZZ', '%', '%C0%AF', '%E0%A4%A', '%ED%A0%80', '%2e%2e', '%2F', '%00', '..', '%u0041').map((g) => encode(text) + g) },
  );
}

export function pathFor(route: FuzzRoute, known: Known): fc.Arbitrary<string> {
  const segments = route.pathParams.map((p) => paramText(p, known).filter((s) => s !== '').chain(encoded).map((e) => [p.name, e] as const));
  return fc.tuple(...segments).map((pairs) => pairs.reduce((path, [name, value]) => path.replace(`{${name}}`, value), route.path));
}

export function queryFor(route: FuzzRoute, known: Known): fc.Arbitrary<string> {
  const declared = route.query.map((p) =>
    fc.option(
      fc.array(paramText(p, known), { minLength: 1, maxLength: 2 }).map((vs) => vs.map((v) => [p.name, v] as const)),
      { nil: [] as (readonly [string, string])[], freq: 2 },
    ),
  );
  const extra = fc.array(fc.tuple(fc.oneof(hostileString, fc.constantFrom('__proto__', 'constructor', 'limit[]', 'a[b]')), hostileString), { maxLength: 2 });
  const tail = fc.constantFrom('', '', '', '&', '&&=&', '=', '%', '%ZZ', '#frag', '?', '&limit');
  return fc.tuple(fc.tuple(...declared), extra, tail, fc.boolean()).chain(([groups, extras, t, rawOne]) => {
    const pairs = [...groups.flat(), ...extras] as (readonly [string, string])[];
    const parts = pairs.map(([k, v], i) =>
      // One pair in a while goes unencoded, as a careless client would send it.
      rawOne && i === 0 ? `${k}=${v.replace(/[#&?\s]/g, '')}` : `${encode(k)}=${encode(v)}`,
    );
    const q = parts.join('&') + t;
    return fc.constant(q === '' ? '' : `?${q}`);
  });
}

/** Header values a client could really send: visible ASCII, spaces and obs-text, no line breaks. */
const headerValue: fc.Arbitrary<string> = fc.oneof(
  fc.string({ maxLength: 60 }).map((s) => s.replace(/[\r\n\0]/g, '')),
  fc.constantFrom('', ' ', 'null', 'undefined', '../../x', '\u00ff\u00fe', 'a, b', 'a; b', '"quoted"', '0'),
  fc.integer({ min: 1000, max: 8000 }).map((n) => 'h'.repeat(n)),
);

const CORRELATION_IDS = ['short', 'has spaces in it', 'x'.repeat(200), 'inject\u00e9d-value', 'good-correlation-id-1234', '../../../../', '', ',,,,,,,,,,'];

/** Headers that do not touch the credentials: identity spoofing, odd negotiation, junk. */
const benignHeader: fc.Arbitrary<[string, string]> = fc.oneof(
  fc.constantFrom<[string, string]>(
    ['x-wallet', '0x' + 'a'.repeat(40)],
    ['wallet', '0x' + 'b'.repeat(40)],
    ['x-subscription-id', 'sub_other'],
    ['x-edge-secret', 'guess'],
    ['x-forwarded-for', '10.0.0.1, 127.0.0.1'],
    ['x-forwarded-proto', 'https'],
    ['x-forwarded-host', 'evil.example'],
    ['referer', 'https://evil.example/x'],
    ['accept', 'text/html'],
    ['accept', '*/*;q=0'],
    ['accept-encoding', 'gzip, br, zstd, identity;q=0'],
    ['if-none-match', '*'],
    ['range', 'bytes=0-0,-1'],
    ['range', 'bytes=99999999999999999999-'],
  ),
  fc.tuple(fc.constant('x-correlation-id'), fc.oneof(fc.constantFrom(...CORRELATION_IDS), headerValue)),
  fc.tuple(fc.constant('cookie'), fc.oneof(fc.constantFrom('=;;; ;=a', 'a=%ZZ', 'b="', '$Version=1; a=b', 'x=' + 'c'.repeat(3000)), headerValue)),
  fc.tuple(fc.stringMatching(/^x-[a-z0-9-]{1,20}$/), headerValue),
);

/** Headers that tamper with the credentials: a foreign Origin, a second CSRF token or key, a forged session. */
const tamperingHeader: fc.Arbitrary<[string, string]> = fc.oneof(
  fc.constantFrom<[string, string]>(['origin', 'https://evil.example'], ['origin', 'null'], ['cookie', 'cb_auth_token=forged.jwt.value'], ['cookie', 'cb_auth_token=']),
  fc.tuple(fc.constant('x-csrf-token'), headerValue),
  fc.tuple(fc.constant('ocp-apim-subscription-key'), fc.oneof(fc.constantFrom('', 'spl_bogus', 'null'), headerValue)),
);

/**
 * Extra request headers as [name, value] pairs, duplicates included. Node folds duplicates before
 * the app sees them; foldHeaders does the same for inject.
 */
export const extraHeaders: fc.Arbitrary<[string, string][]> = fc.array(
  fc.oneof({ weight: 8, arbitrary: benignHeader }, { weight: 1, arbitrary: tamperingHeader }),
  { maxLength: 3 },
);

/** Node's rules for a header sent twice: https://nodejs.org/api/http.html#messageheaders */
const FIRST_WINS = new Set([
  'age', 'authorization', 'content-length', 'content-type', 'etag', 'expires', 'from', 'host', 'if-modified-since',
  'if-unmodified-since', 'last-modified', 'location', 'max-forwards', 'proxy-authorization', 'referer', 'retry-after',
  'server', 'user-agent',
]);

export function foldHeaders(pairs: [string, string][]): Record<string, string> {
  const out: Record<string, string> = {};
  for (const [rawName, value] of pairs) {
    const name = rawName.toLowerCase();
    if (out[name] === undefined) out[name] = value;
    else if (FIRST_WINS.has(name)) continue;
    else out[name] = `${out[name]}${name === 'cookie' ? '; ' : ', '}${value}`;
  }
  return out;
}
