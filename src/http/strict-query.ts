/**
 * Unknown query parameters are refused (DESIGN.md "Integrator API"): 400 invalid_input naming the
 * parameter, on every operation of the API document. A parameter that is silently ignored is worse
 * than an error: a client sending `cursor=` or `sort=` would loop on the same page, or trust a
 * filter that was never applied.
 *
 * Each documented route's query schema is closed here, in one place, so a route added later is
 * strict without remembering to be; a route that takes no query gets an empty one. The query
 * validator (src/app.ts) does not remove what the schema does not declare, so the extra key is
 * an error rather than dropped. Bodies keep their own rules. Routes left out of the document (the
 * admin app's files, the payment page's HTML, /docs) are not operations and keep taking any query:
 * a cache-busting `?v=` on a script must still load it.
 */
import type { FastifyError, FastifyInstance, FastifyRequest, preHandlerHookHandler, RouteOptions } from 'fastify';

type ObjectSchema = Record<string | symbol, unknown> & { properties?: Record<string, unknown> };

const NO_QUERY: ObjectSchema = { type: 'object', properties: {} };

/** The route's query schema, or none, closed to the parameters it declares. */
function closed(query: unknown): ObjectSchema {
  const schema = (query ?? NO_QUERY) as ObjectSchema;
  if (schema.type !== 'object') throw new Error('a route query schema must be an object schema');
  return { ...schema, additionalProperties: false };
}

/**
 * For a route that checks its body itself, in the specification's order of error codes
 * (`attachValidation`): Fastify hands it every validation error instead of answering, and stops
 * at the body's, so the query is checked here, before the handler, whatever the body held.
 */
const refuseQueryBeforeHandler: preHandlerHookHandler = (request, _reply, done) => {
  if (request.validationError?.validationContext === 'querystring') return done(request.validationError);
  const validate = request.getValidationFunction('querystring');
  if (validate === undefined || validate(request.query) === true) return done();
  const errors = validate.errors ?? [];
  const refusal = Object.assign(new Error(`querystring${errors[0]?.instancePath ?? ''} ${errors[0]?.message ?? 'is invalid'}`), {
    statusCode: 400,
    validation: errors,
    validationContext: 'querystring',
  });
  done(refusal);
};

/** From now on, every documented route registered on `app` refuses query parameters it does not declare. */
export function closeQueryStrings(app: FastifyInstance): void {
  app.addHook('onRoute', (route: RouteOptions) => {
    const schema = route.schema;
    if (schema === undefined || schema.hide === true) return;
    route.schema = { ...schema, querystring: closed(schema.querystring) };
    if (route.attachValidation === true) {
      const own = route.preHandler;
      route.preHandler = own === undefined ? [refuseQueryBeforeHandler] : [refuseQueryBeforeHandler, ...[own].flat()];
    }
  });
}

/** The query parameters an operation declares, for the refusal's message. */
function declaredParameters(request: FastifyRequest): string[] {
  const query = request.routeOptions.schema?.querystring as ObjectSchema | undefined;
  return Object.keys(query?.properties ?? {});
}

/**
 * The message of a query validation error that names an undeclared parameter, with what the
 * operation takes instead; undefined for any other validation error.
 */
export function unknownQueryMessage(err: FastifyError, request: FastifyRequest): string | undefined {
  if (err.validationContext !== 'querystring') return undefined;
  const unknown = (err.validation ?? []).find((v) => v.keyword === 'additionalProperties');
  const name = (unknown?.params as { additionalProperty?: unknown } | undefined)?.additionalProperty;
  if (typeof name !== 'string') return undefined;
  const declared = declaredParameters(request);
  const takes = declared.length === 0 ? 'this operation takes no query parameter' : `this operation takes ${declared.join(', ')}`;
  return `Unknown query parameter ${JSON.stringify(name)}: ${takes}`;
}
