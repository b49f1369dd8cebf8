/**
 * Serves the admin web app (built by Vite into web/dist) under /admin. Every path that is not a
 * built file gets index.html, so the app's own routes survive a reload. The pages carry a strict
 * CSP and may not be framed. Without a build, /admin says how to make one instead of failing.
 */
import { stat } from 'node:fs/promises';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import fastifyStatic from '@fastify/static';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { builtHtmlReader } from './built-html.ts';

export const WEB_DIST = fileURLToPath(new URL('../../web/dist/', import.meta.url));

/**
 * The CSP of a page of the web build: its own scripts, styles and API only; `frameAncestors` says
 * who may frame it (the admin app: nobody; the payment page: itself and the shop's origins).
 */
export function webPageCsp(frameAncestors: string): string {
  return [
    "default-src 'self'",
    "script-src 'self'",
    "style-src 'self'",
    "img-src 'self' data:",
    "font-src 'self'",
    "connect-src 'self'",
    "object-src 'none'",
    "base-uri 'self'",
    "form-action 'self'",
    `frame-ancestors ${frameAncestors}`,
  ].join('; ');
}

export const ADMIN_CSP = webPageCsp("'none'");

const SECURITY_HEADERS: Record<string, string> = {
  'content-security-policy': ADMIN_CSP,
  'x-frame-options': 'DENY',
  'x-content-type-options': 'nosniff',
  'referrer-policy': 'same-origin',
  // Wallets that sign in a pop-up window need their opener.
  'cross-origin-opener-policy': 'same-origin-allow-popups',
  // The devices page installs the Android app over WebUSB, from this origin only.
  'permissions-policy': 'camera=(), microphone=(), geolocation=(), usb=(self)',
};

/** A file name Vite can emit: no dot segments, no hidden files, nothing outside dist. */
const BUILT_FILE = /^(?:[A-Za-z0-9_-][A-Za-z0-9._-]*\/)*[A-Za-z0-9_-][A-Za-z0-9._-]*\.[A-Za-z0-9]+$/;
const BASE_TAG = '<base href="/admin/" />';

export interface WebAppOptions {
  distDir?: string;
  /** PUBLIC_BASE_PATH: the page's <base href> follows the prefix the request came in with. */
  publicBasePath: string;
}

export async function registerWebApp(app: FastifyInstance, opts: WebAppOptions): Promise<void> {
  const distDir = opts.distDir ?? WEB_DIST;
  await app.register(async (scope) => {
    // serve: false: only reply.sendFile, from this scope; the routes below decide what is served.
    await scope.register(fastifyStatic, { root: distDir, serve: false });
    scope.addHook('onSend', async (_request, reply, payload) => {
      for (const [name, value] of Object.entries(SECURITY_HEADERS)) reply.header(name, value);
      return payload;
    });

    /** index.html, re-read when a new build replaces it; null when there is no build (or one is being written). */
    const indexHtml = builtHtmlReader(path.join(distDir, 'index.html'));

    async function serve(request: FastifyRequest, reply: FastifyReply, rest: string) {
      const html = await indexHtml();
      if (html === null) {
        return reply
          .status(503)
          .type('text/plain; charset=utf-8')
          .header('cache-control', 'no-store')
          .send(
            'The admin app has not been built yet.\n\n' +
              'Run `npm run build:web` (npm start builds it automatically when it is missing), then reload this page.\n',
          );
      }
      if (rest !== '' && BUILT_FILE.test(rest) && rest !== 'index.html') {
        if (await isFile(path.join(distDir, rest))) {
          // Vite names assets by content hash, so they never change under the same name.
          reply.header('cache-control', rest.startsWith('assets/') ? 'public, max-age=31536000, immutable' : 'public, max-age=300');
          return reply.sendFile(rest, { cacheControl: false });
        }
        if (rest.startsWith('assets/')) {
          return reply.status(404).type('text/plain; charset=utf-8').send(`No such file: ${rest}\n`);
        }
      }
      const prefix = request.originalUrl.startsWith(opts.publicBasePath + '/') ? opts.publicBasePath : '';
      return reply
        .type('text/html; charset=utf-8')
        .header('cache-control', 'no-cache')
        .send(html.replace(BASE_TAG, `<base href="${prefix}/admin/" />`));
    }

    // The service's root is the merchant app.
    scope.get('/', { schema: { hide: true } }, async (request, reply) => {
      const prefix = request.originalUrl.startsWith(opts.publicBasePath) && opts.publicBasePath !== '' ? opts.publicBasePath : '';
      return reply.redirect(`${prefix}/admin/`, 302);
    });
    scope.get('/admin', { schema: { hide: true } }, async (request, reply) => {
      const query = request.url.includes('?') ? request.url.slice(request.url.indexOf('?')) : '';
      return reply.redirect(`admin/${query}`, 301);
    });
    scope.get('/admin/', { schema: { hide: true } }, (request, reply) => serve(request, reply, ''));
    scope.get<{ Params: { '*': string } }>('/admin/*', { schema: { hide: true } }, (request, reply) =>
      serve(request, reply, request.params['*']),
    );
  });
}

async function isFile(file: string): Promise<boolean> {
  try {
    return (await stat(file)).isFile();
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT' || (err as NodeJS.ErrnoException).code === 'ENOTDIR') return false;
    throw err;
  }
}
