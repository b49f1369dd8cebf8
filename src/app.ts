/**
 * buildApp(deps): the whole HTTP application, without listening. main.ts and the tests both
 * build it from real dependencies.
 */
import Fastify, { LogController, type FastifyBaseLogger, type FastifyInstance } from 'fastify';
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import { Ajv } from 'ajv';
import type { Deps } from './deps.ts';
import cookie from '@fastify/cookie';
import { registerSessionAuth, requireSession } from './auth/plugin.ts';
import { SESSION_COOKIE } from './auth/sessions.ts';
import { correlationId, registerGateway } from './gateway/plugin.ts';
import { installErrorHandling } from './http/errors.ts';
import { registerIdempotency } from './http/idempotency.ts';
import { registerOpenApi } from './http/openapi.ts';
import { sharedSchemas } from './http/schemas.ts';
import { registerRoutes } from './http/routes/index.ts';
import { registerWebApp } from './http/web.ts';
import {
  clientErrorHandler,
  documentFrameworkErrors,
  frameworkErrorHandler,
  installJsonParser,
  refuseNulInUrl,
  serverLimits,
} from './http/limits.ts';
import { enforceRequestDeadline } from './http/request-time.ts';
import { registerSecurityHeaders } from './http/security-headers.ts';
import { registerCors } from './http/cors.ts';
import { closeQueryStrings } from './http/strict-query.ts';
import { registerPayPage } from './http/pay-page.ts';
import { RequestLogger } from './logger.ts';
import type { Logger } from 'pino';

export { BODY_LIMIT } from './http/limits.ts';

/** Fastify's trustProxy for TRUST_PROXY; a hop count as the function Fastify itself makes of one. */
function trustProxyOption(trust: Deps['config']['trustProxy']): boolean | string[] | ((address: string, hop: number) => boolean) {
  return typeof trust === 'number' ? (_address, hop) => hop < trust : trust;
}

export async function buildApp(deps: Deps): Promise<FastifyInstance> {
  const { config } = deps;
  const base = config.publicBasePath;
  const https = new URL(config.siteUrl).protocol === 'https:';
  // Typed as Fastify's own logger, so the instance (and every plugin it is passed to) is the plain FastifyInstance.
  const logger: FastifyBaseLogger = deps.logger;
  const app = Fastify({
    loggerInstance: logger,
    // Per-request lines come from our own onResponse hook at debug level.
    logController: new LogController({ disableRequestLogging: true, requestIdLogLabel: 'correlationId' }),
    childLoggerFactory: (logger, bindings, options) => new RequestLogger(logger as Logger, bindings, options) as unknown as FastifyBaseLogger,
    // Body size, header size and request time (src/http/limits.ts); what the router and Node's
    // HTTP parser refuse is answered as {error, message} too.
    ...serverLimits(config.requestTimeoutMs, config.apkUploadTimeoutMs),
    clientErrorHandler: clientErrorHandler(https),
    frameworkErrors: frameworkErrorHandler(https),
    // TRUST_PROXY alone decides whose X-Forwarded-For is believed (none by default): the edge
    // secret proves a request passed the proxy, not which hop in the header is the client's.
    trustProxy: trustProxyOption(config.trustProxy),
    genReqId: (req) => correlationId(req.headers['x-correlation-id']),
    // PUBLIC_BASE_PATH: every route also answers under the prefix.
    rewriteUrl: (req) => {
      const url = req.url ?? '/';
      if (base !== '' && (url === base || url.startsWith(base + '/') || url.startsWith(base + '?'))) {
        return url.slice(base.length) || '/';
      }
      return url;
    },
    ajv: { customOptions: { coerceTypes: 'array', removeAdditional: true, useDefaults: true, allErrors: false } },
  }).withTypeProvider<TypeBoxTypeProvider>();
  // REQUEST_TIMEOUT_MS for every request's body; the APK upload sets its own (src/http/request-time.ts).
  enforceRequestDeadline(app.server, { timeoutMs: config.requestTimeoutMs, https });

  // Bodies are validated strictly: "5" is not a price. Query strings and params are text on the
  // wire, so they alone are coerced to the schema's types. A query parameter the operation does
  // not declare is an error, never dropped (src/http/strict-query.ts).
  const strict = new Ajv({ coerceTypes: false, removeAdditional: true, useDefaults: true, allErrors: false, strict: false });
  const coercing = new Ajv({ coerceTypes: 'array', removeAdditional: true, useDefaults: true, allErrors: false, strict: false });
  const query = new Ajv({ coerceTypes: 'array', removeAdditional: false, useDefaults: true, allErrors: false, strict: false });
  for (const s of sharedSchemas) {
    strict.addSchema(s);
    coercing.addSchema(s);
    query.addSchema(s);
    app.addSchema(s);
  }
  app.setValidatorCompiler(({ schema, httpPart }) => (httpPart === 'body' ? strict : httpPart === 'querystring' ? query : coercing).compile(schema));
  closeQueryStrings(app);

  installErrorHandling(app);
  // Before any route or scope: the JSON limits, the documented framework refusals, the
  // security headers and the CORS policy apply to every route registered after them.
  installJsonParser(app);
  refuseNulInUrl(app);
  documentFrameworkErrors(app);
  registerSecurityHeaders(app, { siteUrl: config.siteUrl });
  registerCors(app, { origins: config.corsOrigins });
  // Cookies are parsed first: both the gateway and the session hook read them.
  await app.register(cookie);
  const siteOrigin = new URL(config.siteUrl).origin;
  registerGateway(app, {
    sessionFallback: async (request) => {
      await requireSession(request, deps.auth, siteOrigin);
    },
    sessionCookie: SESSION_COOKIE,
    keys: deps.keys,
    limiter: deps.limiter,
    edgeSecret: config.edgeSecret,
    publicRateLimitPerMinute: config.publicRateLimitPerMinute,
    invalidKeyRateLimitPerMinute: config.invalidKeyRateLimitPerMinute,
  });
  registerSessionAuth(app, { auth: deps.auth, siteUrl: config.siteUrl, limiter: deps.limiter });
  registerIdempotency(app, { store: deps.stores.idempotency, logger: deps.logger });
  // LOG_LEVEL is fixed at start-up: below debug, requests skip this hook altogether.
  if (deps.logger.isLevelEnabled('debug')) {
    app.addHook('onResponse', async (request, reply) => {
      request.log.debug(
        { method: request.method, url: request.url.split('?')[0], status: reply.statusCode, ms: Math.round(reply.elapsedTime) },
        'request',
      );
    });
  }

  // The OpenAPI document, /docs and /openapi.json (src/http/openapi.ts); before the routes it lists.
  await registerOpenApi(app, { basePath: base });

  registerRoutes(app, deps);
  await registerWebApp(app, { publicBasePath: base });
  // Last, so its own framing headers follow any application-wide ones (see pay-page.ts).
  await registerPayPage(app, { payments: deps.paymentPage, publicBasePath: base });
  return app;
}
