import type { onRequestAsyncHookHandler, RouteOptions } from 'fastify';

/**
 * Puts `hook` first among one route's own onRequest hooks: after every application-wide hook
 * (cookies, correlation id) and before anything the route declares itself. Authentication hooks
 * go on the routes that need them this way rather than on every request, so a route pays only
 * for the checks it has.
 */
export function prependOnRequest(route: RouteOptions, hook: onRequestAsyncHookHandler): void {
  const own = route.onRequest;
  route.onRequest = own === undefined ? [hook] : [hook, ...(Array.isArray(own) ? own : [own])];
}
