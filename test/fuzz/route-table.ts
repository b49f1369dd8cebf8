/**
 * Every operation of the app's OpenAPI document, read back into what the fuzzer needs: how it is
 * authenticated, its parameters and body schema (with $refs resolved), and the statuses it
 * documents. A route added to the app is in the document, so it is fuzzed without a list to edit.
 */

export type Json = null | boolean | number | string | Json[] | { [k: string]: Json };
export type Schema = { [k: string]: any };

export interface Param {
  name: string;
  schema: Schema;
  required: boolean;
}

export interface FuzzRoute {
  method: 'GET' | 'POST' | 'PUT' | 'DELETE' | 'PATCH';
  /** As the document writes it: /api/receipts/{id} */
  path: string;
  auth: 'key' | 'session' | 'public';
  pathParams: Param[];
  query: Param[];
  /** The JSON (or other) body schema, $refs resolved; undefined when the route takes none. */
  body: Schema | undefined;
  bodyContentTypes: string[];
  documented: Set<number>;
}

const METHODS = ['get', 'post', 'put', 'delete', 'patch'] as const;

/** Inlines local $refs (#/components/schemas/X) so generators see whole schemas. */
export function resolveRefs(schema: unknown, doc: any, seen: string[] = []): any {
  if (Array.isArray(schema)) return schema.map((s) => resolveRefs(s, doc, seen));
  if (schema === null || typeof schema !== 'object') return schema;
  const s = schema as Record<string, unknown>;
  if (typeof s.$ref === 'string') {
    if (seen.includes(s.$ref)) return {};
    let node: any = doc;
    for (const part of s.$ref.replace(/^#\//, '').split('/')) node = node?.[part];
    return resolveRefs(node ?? {}, doc, [...seen, s.$ref]);
  }
  const out: Record<string, unknown> = {};
  for (const [k, v] of Object.entries(s)) out[k] = resolveRefs(v, doc, seen);
  return out;
}

export function routesFromOpenApi(doc: any): FuzzRoute[] {
  const routes: FuzzRoute[] = [];
  for (const [path, item] of Object.entries<any>(doc.paths ?? {})) {
    for (const m of METHODS) {
      const op = item[m];
      if (op === undefined) continue;
      const security: Record<string, unknown>[] = op.security ?? [];
      const auth = security.some((s) => 'subscriptionKey' in s) ? 'key' : security.some((s) => 'sessionCookie' in s) ? 'session' : 'public';
      const params: any[] = [...(item.parameters ?? []), ...(op.parameters ?? [])];
      const toParam = (p: any): Param => ({ name: p.name, schema: resolveRefs(p.schema ?? {}, doc), required: p.required === true });
      const content: Record<string, any> = op.requestBody?.content ?? {};
      const bodyContentTypes = Object.keys(content);
      const bodySchema = bodyContentTypes.length > 0 ? resolveRefs(content[bodyContentTypes[0]!]?.schema ?? {}, doc) : undefined;
      routes.push({
        method: m.toUpperCase() as FuzzRoute['method'],
        path,
        auth,
        pathParams: params.filter((p) => p.in === 'path').map(toParam),
        query: params.filter((p) => p.in === 'query').map(toParam),
        body: bodySchema,
        bodyContentTypes,
        documented: new Set(Object.keys(op.responses ?? {}).filter((s) => /^\d{3}$/.test(s)).map(Number)),
      });
    }
  }
  return routes;
}
