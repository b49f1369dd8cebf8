/**
 * The routes an app registered, with the config the gateway and the session hook read (scope,
 * auth, role), recorded by an onRoute hook on every Fastify instance this process creates. Fastify
 * announces each new instance on the `fastify.initialization` diagnostics channel before any route
 * is added, so the record is complete without a change to buildApp. The security matrices are
 * generated from it: a new route is in them without a list to edit.
 */
import diagnostics from 'node:diagnostics_channel';
import type { FastifyInstance, RouteOptions } from 'fastify';
import type { Scope } from '../../src/gateway/scopes.ts';

export interface RegisteredRoute {
  method: string;
  /** As the document writes it: /api/receipts/{id} */
  path: string;
  scope: Scope | undefined;
  auth: string | undefined;
  role: string | undefined;
  /** Left out of the document (`schema.hide`). */
  hidden: boolean;
}

/** Which credential opens a route: as src/gateway/plugin.ts and src/auth/plugin.ts decide it. */
export type Credential = 'key' | 'session' | 'none';

export function credentialOf(route: RegisteredRoute): Credential {
  if (route.auth === 'session') return 'session';
  if (route.scope !== undefined || route.auth === 'key') return 'key';
  return 'none';
}

const byApp = new WeakMap<object, RegisteredRoute[]>();
let latest: RegisteredRoute[] | undefined;

function record(fastify: FastifyInstance): void {
  const routes: RegisteredRoute[] = [];
  byApp.set(fastify, routes);
  latest = routes;
  fastify.addHook('onRoute', (route: RouteOptions) => {
    const config = (route.config ?? {}) as { scope?: Scope; auth?: string; role?: string };
    for (const method of [route.method].flat()) {
      if (method === 'HEAD' || method === 'OPTIONS') continue;
      routes.push({
        method,
        path: route.url.replace(/:([A-Za-z0-9_]+)/g, '{$1}'),
        scope: config.scope,
        auth: config.auth,
        role: config.role,
        hidden: route.schema?.hide === true,
      });
    }
  });
}

diagnostics.subscribe('fastify.initialization', (message) => record((message as { fastify: FastifyInstance }).fastify));

/** Every route `app` registered (GET, POST, PUT, DELETE...; HEAD and OPTIONS left out). */
export function registeredRoutes(app: FastifyInstance): RegisteredRoute[] {
  const routes = byApp.get(app);
  if (routes === undefined) throw new Error('this app was created before test/helpers/routes.ts was loaded');
  return routes;
}

/** The routes of the app built last in this process: for tables read before a test holds its app. */
export function lastRegisteredRoutes(): RegisteredRoute[] {
  if (latest === undefined) throw new Error('no app has been built in this process yet');
  return latest;
}
