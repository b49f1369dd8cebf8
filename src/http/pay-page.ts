/**
 * Serves the hosted payment page `/pay/<receipt_id>?t=<token>` (web/pay.html from the Vite build)
 * and its assets under /pay/assets/.
 *
 * The page may be framed, but only by the origins its shop allows: the document's
 * `Content-Security-Policy: frame-ancestors` is computed per request from the receipt the URL
 * names ('self' plus the shop's allowedEmbedOrigins; an unknown receipt or a wrong token gets
 * 'self' alone), and no X-Frame-Options is sent, since it would forbid what the CSP allows.
 * These headers are set in this scope's onSend hook, which runs after any application-wide
 * header hook, so they win for /pay/*.
 */
import { stat } from 'node:fs/promises';
import path from 'node:path';
import fastifyStatic from '@fastify/static';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import type { PaymentPage } from '../payments/payment-page.ts';
import { WEB_DIST, webPageCsp } from './web.ts';
import { builtHtmlReader } from './built-html.ts';

const BASE_TAG = '<base href="/pay/" />';
/** Built asset names: content-hashed by Vite, no dot segments, no sub-folders. */
const ASSET = /^[A-Za-z0-9_-][A-Za-z0-9._-]*\.(?:js|css|map|svg|png|woff2?)$/;
/** What parseOrigin (domain/shop.ts) stores; re-checked because it goes into a header. */
const ORIGIN = /^https?:\/\/[A-Za-z0-9.-]+(?::\d{1,5})?$|^https?:\/\/\[[0-9A-Fa-f:.]+\](?::\d{1,5})?$/;

/** The page's CSP: its own scripts and API only, framed by 'self' and the shop's origins. */
export function payPageCsp(allowedEmbedOrigins: readonly string[]): string {
  const ancestors = ["'self'", ...allowedEmbedOrigins.filter((o) => ORIGIN.test(o))];
  return webPageCsp(ancestors.join(' '));
}

const PAGE_HEADERS: Record<string, string> = {
  'x-content-type-options': 'nosniff',
  // The URL's token is the capability to see the receipt: never send it along as a Referer.
  'referrer-policy': 'no-referrer',
  // Wallets that sign in a pop-up window need their opener.
  'cross-origin-opener-policy': 'same-origin-allow-popups',
  'permissions-policy': 'camera=(), microphone=(), geolocation=()',
};

export interface PayPageOptions {
  /** The shops' embed origins for payment URLs (deps.paymentPage). */
  payments: Pick<PaymentPage, 'embedOrigins'>;
  distDir?: string;
  /** PUBLIC_BASE_PATH: the page's <base href> follows the prefix the request came in with. */
  publicBasePath: string;
}

/** The frame-ancestors origins of a /pay/* response that is the page itself. */
const embedOriginsOf = new WeakMap<FastifyReply, string[]>();

export async function registerPayPage(app: FastifyInstance, opts: PayPageOptions): Promise<void> {
  const distDir = opts.distDir ?? WEB_DIST;
  await app.register(async (scope) => {
    await scope.register(fastifyStatic, { root: path.join(distDir, 'assets'), serve: false });
    scope.addHook('onSend', async (_request, reply, payload) => {
      for (const [name, value] of Object.entries(PAGE_HEADERS)) reply.header(name, value);
      // Anything a wider hook set is replaced: this page's framing rules are its own.
      reply.removeHeader('x-frame-options');
      reply.header('content-security-policy', payPageCsp(embedOriginsOf.get(reply) ?? []));
      return payload;
    });

    const pageHtml = builtHtmlReader(path.join(distDir, 'pay.html'));

    async function page(request: FastifyRequest<{ Params: { id: string }; Querystring: { t?: unknown } }>, reply: FastifyReply) {
      const token = typeof request.query.t === 'string' ? request.query.t : undefined;
      let found: boolean;
      try {
        const embed = await opts.payments.embedOrigins({ id: request.params.id, token });
        found = embed.found;
        embedOriginsOf.set(reply, embed.origins);
      } catch (err) {
        // The database is away: serve the page framable by 'self' only; its own API calls say the rest.
        request.log.warn({ err }, 'payment page: embed origins unavailable');
        found = true;
      }
      reply.header('cache-control', 'no-store');
      const html = await pageHtml();
      if (html === null) {
        return reply
          .status(503)
          .type('text/plain; charset=utf-8')
          .send('The payment page has not been built yet.\n\nRun `npm run build:web` (npm start builds it automatically), then reload.\n');
      }
      const prefix = request.originalUrl.startsWith(opts.publicBasePath + '/') ? opts.publicBasePath : '';
      // An unknown link still gets the page, which explains itself; the status tells machines.
      return reply
        .status(found ? 200 : 404)
        .type('text/html; charset=utf-8')
        .send(html.replace(BASE_TAG, `<base href="${prefix}/pay/" />`));
    }

    scope.get<{ Params: { id: string }; Querystring: { t?: unknown } }>('/pay/:id', { schema: { hide: true } }, page);
    scope.get<{ Params: { file: string } }>('/pay/assets/:file', { schema: { hide: true } }, async (request, reply) => {
      const file = request.params.file;
      if (!ASSET.test(file) || !(await isFile(path.join(distDir, 'assets', file)))) {
        return reply.status(404).type('text/plain; charset=utf-8').send(`No such file: assets/${file}\n`);
      }
      // Vite names assets by content hash, so they never change under the same name.
      reply.header('cache-control', 'public, max-age=31536000, immutable');
      return reply.sendFile(file, { cacheControl: false });
    });
  });
}

async function isFile(file: string): Promise<boolean> {
  try {
    return (await stat(file)).isFile();
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code;
    if (code === 'ENOENT' || code === 'ENOTDIR') return false;
    throw err;
  }
}
