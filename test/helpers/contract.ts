/**
 * Holds every answer a test receives to the app's published OpenAPI document, so a drift between
 * document and behaviour fails the test that met it. For a (method, URL) the operation is found by
 * its path template; the status must be one the operation documents (or its range or `default`),
 * the JSON body must match that response's schema and the response headers it marks required must
 * be present. test/helpers/app.ts runs it on every inject, test/helpers/service.ts on every http().
 *
 * A URL no operation matches is an unknown route: its answer is the Error schema, as any other.
 */
import { AssertionError } from 'node:assert';
import { createHash } from 'node:crypto';
import { Ajv2020, type ValidateFunction } from 'ajv/dist/2020.js';
import addFormatsPlugin from 'ajv-formats';

type Json = Record<string, any>;

/** What the document does not describe on purpose: pages, assets, the document itself, the dev chain. */
const SKIPPED_PATHS: readonly RegExp[] = [
  /^\/$/, // the redirect to the admin app
  /^\/admin(\/|$)/, // the admin app's HTML and assets
  /^\/pay\//, // the payment page's HTML and assets (its JSON API is /api/pay/*, checked)
  /^\/docs(\/|$)/, // swagger-ui
  /^\/openapi\.json$/, // the document itself
  /^\/dev\//, // the dev chain (CHAIN=dev only)
];

/** CORS preflights are answered for every route by the CORS policy, never by an operation. */
const SKIPPED_METHODS = new Set(['OPTIONS']);

/** Bodies that are not JSON: the status and headers are checked, the bytes are not. */
const OPAQUE_MEDIA: readonly string[] = ['application/vnd.android.package-archive', 'application/octet-stream', 'text/html', 'text/event-stream', 'text/csv'];

/**
 * Known drifts between the server and its document, each an (operation, status) the server answers
 * differently from what the document says, with the reason. The document or the route is to be
 * fixed; an entry leaves here then. `operation` is the operationId, or 'unknown route'.
 */
export const KNOWN_DRIFTS: readonly { operation: string; status: number; reason: string }[] = [];

export interface Answer {
  method: string;
  /** The URL as requested: path and query. */
  url: string;
  status: number;
  header(name: string): string | undefined;
  /** The body as text; '' when there is none. */
  text: string;
}

interface Operation {
  id: string;
  method: string;
  template: string;
  pattern: RegExp;
  /** Literal segments first: /api/receipts/status before /api/receipts/{id}. */
  params: number;
  responses: Json;
}

const METHODS = ['get', 'post', 'put', 'delete', 'patch'] as const;

function patternOf(template: string): RegExp {
  const source = template
    .split(/(\{[^}]+\})/)
    .map((part) => (part.startsWith('{') ? '[^/]+' : part.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')))
    .join('');
  return new RegExp(`^${source}$`);
}

function fail(message: string): never {
  throw new AssertionError({ message: `contract: ${message}` });
}

function clip(text: string, n = 300): string {
  return text.length > n ? `${text.slice(0, n)}…` : text;
}

/** The document of one app, with its validators compiled on first use. */
export class Contract {
  private readonly doc: Json;
  private readonly basePath: string;
  private readonly operations: Operation[] = [];
  private readonly validators = new Map<string, ValidateFunction>();
  private readonly ajv: Ajv2020;

  constructor(doc: Json) {
    this.doc = doc;
    const server = String(doc.servers?.[0]?.url ?? '/');
    this.basePath = server.startsWith('/') ? server.replace(/\/$/, '') : '';
    for (const [template, item] of Object.entries<Json>(doc.paths ?? {})) {
      for (const m of METHODS) {
        const op = item[m];
        if (op === undefined) continue;
        const method = m.toUpperCase();
        this.operations.push({
          id: String(op.operationId ?? `${method} ${template}`),
          method,
          template,
          pattern: patternOf(template),
          params: (template.match(/\{/g) ?? []).length,
          responses: op.responses ?? {},
        });
      }
    }
    this.operations.sort((a, b) => a.params - b.params);
    this.ajv = new Ajv2020({ strict: false, allErrors: false, logger: false, validateSchema: false });
    (addFormatsPlugin as unknown as (ajv: Ajv2020) => void)(this.ajv);
    this.ajv.addFormat('binary', true);
    // multipleOf as decimal arithmetic means it: 9.74 and 1234578.39 are multiples of 0.01, though
    // not in binary floating point, where Ajv's own check (even with a precision) refuses them.
    this.ajv.removeKeyword('multipleOf');
    this.ajv.addKeyword({ keyword: 'multipleOf', type: 'number', schemaType: 'number', errors: false, validate: isMultipleOf });
    // The whole document is one schema resource, so the `#/components/...` references of every
    // response schema resolve inside it.
    this.ajv.addSchema({ ...doc, $id: 'openapi' }, 'openapi');
  }

  private pathOf(url: string): string {
    let path = url.split(/[?#]/)[0]!;
    if (this.basePath !== '' && (path === this.basePath || path.startsWith(this.basePath + '/'))) path = path.slice(this.basePath.length) || '/';
    return path;
  }

  private find(method: string, path: string): Operation | undefined {
    return this.operations.find((o) => o.method === method && o.pattern.test(path));
  }

  /** A validator for the schema at a JSON pointer into the document. */
  private validator(pointer: string): ValidateFunction {
    let v = this.validators.get(pointer);
    if (v === undefined) {
      const fragment = pointer.split('/').map(encodeURIComponent).join('/');
      v = this.ajv.compile({ $ref: `openapi#${fragment}` });
      this.validators.set(pointer, v);
    }
    return v;
  }

  /** Throws an AssertionError naming the operation, the status and the first difference. */
  check(answer: Answer): void {
    const method = answer.method.toUpperCase();
    const path = this.pathOf(answer.url);
    if (SKIPPED_METHODS.has(method) || SKIPPED_PATHS.some((re) => re.test(path))) return;
    // HEAD answers as GET does, without the body.
    const op = this.find(method === 'HEAD' ? 'GET' : method, path);
    const what = op === undefined ? `${method} ${path} (unknown route)` : `${method} ${path} (${op.id})`;
    if (KNOWN_DRIFTS.some((d) => d.operation === (op?.id ?? 'unknown route') && d.status === answer.status)) return;
    if (op === undefined) {
      if (answer.status < 400) fail(`${what} answered ${answer.status}: no operation of the document has this path`);
      this.checkBody(what, answer, method, '/components/schemas/Error', ['application/json']);
      return;
    }
    const responses = op.responses;
    const key = [String(answer.status), `${String(answer.status)[0]}XX`, 'default'].find((k) => responses[k] !== undefined);
    if (key === undefined) {
      fail(`${what} answered ${answer.status}, which the document does not list (it lists ${Object.keys(responses).join(', ')}); body: ${clip(answer.text)}`);
    }
    const pointer = `/paths/${escape(op.template)}/${op.method.toLowerCase()}/responses/${escape(key)}`;
    const response = this.resolve(responses[key]);
    for (const [name, h] of Object.entries<Json>(response.headers ?? {})) {
      const header = this.resolve(h);
      if (header.required === true && answer.header(name) === undefined) fail(`${what} answered ${answer.status} without the required header ${name}`);
    }
    const content: Json = response.content ?? {};
    const json = Object.keys(content).find(isJson);
    this.checkBody(what, answer, method, json === undefined ? undefined : `${pointer}/content/${escape(json)}/schema`, Object.keys(content));
  }

  private checkBody(what: string, answer: Answer, method: string, schemaPointer: string | undefined, documented: string[]): void {
    if (method === 'HEAD' || answer.status === 204 || answer.status === 304) return;
    const type = (answer.header('content-type') ?? '').split(';')[0]!.trim().toLowerCase();
    if (answer.text === '' && type === '') {
      if (documented.length > 0) fail(`${what} answered ${answer.status} with no body; the document gives it ${documented.join(', ')}`);
      return;
    }
    if (!isJson(type)) {
      if (OPAQUE_MEDIA.includes(type) && documented.includes(type)) return;
      fail(`${what} answered ${answer.status} with ${type || 'an untyped body'}; the document gives it ${documented.join(', ') || 'no body'}: ${clip(answer.text)}`);
    }
    if (schemaPointer === undefined) fail(`${what} answered ${answer.status} with JSON; the document gives it ${documented.join(', ') || 'no body'}: ${clip(answer.text)}`);
    let body: unknown;
    try {
      body = JSON.parse(answer.text);
    } catch (err) {
      fail(`${what} answered ${answer.status} with ${type} that does not parse (${String(err)}): ${clip(answer.text)}`);
    }
    const validate = this.validator(schemaPointer);
    if (validate(body)) return;
    const e = validate.errors![0]!;
    fail(
      `${what} answered ${answer.status} with a body that does not match #${schemaPointer}: ` +
        `${e.instancePath || '(root)'} ${e.message} (${clip(JSON.stringify(e.params), 160)}); body: ${clip(answer.text)}`,
    );
  }

  private resolve(node: Json): Json {
    let n = node;
    for (let i = 0; i < 10 && typeof n?.$ref === 'string'; i++) {
      n = String(n.$ref)
        .replace(/^#\//, '')
        .split('/')
        .reduce<any>((at, part) => at?.[part.replace(/~1/g, '/').replace(/~0/g, '~')], this.doc);
    }
    return n ?? {};
  }
}

/** Whether `x` is a whole multiple of `m`, up to the rounding of the two doubles. */
function isMultipleOf(m: number, x: number): boolean {
  const q = Math.round(x / m);
  return Math.abs(x - q * m) <= Math.max(Math.abs(x), Math.abs(m)) * 1e-12;
}

function escape(segment: string): string {
  return segment.replace(/~/g, '~0').replace(/\//g, '~1');
}

function isJson(type: string): boolean {
  return type === 'application/json' || type.endsWith('+json');
}

/**
 * One Contract per distinct document: apps built with the same configuration publish the same
 * document, so their validators are compiled once per test process.
 */
const contracts = new Map<string, Contract>();

export function contractFor(doc: Json): Contract {
  const hash = createHash('sha256').update(JSON.stringify(doc)).digest('hex');
  let c = contracts.get(hash);
  if (c === undefined) {
    c = new Contract(doc);
    contracts.set(hash, c);
  }
  return c;
}
