/**
 * Signed APK download (Admin or Superadmin), upload (Superadmin), and which packages are stored
 * (the devices page says up front what is missing). Bytes stream straight between the client and
 * the blob store; no storage URL is ever exposed.
 */
import type { FastifyInstance } from 'fastify';
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import { Readable } from 'node:stream';
import type { Deps } from '../../../deps.ts';
import { APK_CONTENT_TYPE, apkBlobName, assertAppName, assertVisible, assertZipHeader, parseRange } from '../../../domain/apk.ts';
import { AppError, InvalidInput, NotFound } from '../../../lib/errors.ts';
import { sessionOf } from '../../../auth/plugin.ts';
import { PayloadTooLarge } from '../../../storage/blob-store.ts';
import { bodyWithin, releaseRequestDeadline } from '../../request-time.ts';
import { cookieAuth, errorRef } from '../../../contract/common.ts';
import { ApkDownloadParams, ApkList, ApkListQuery, ApkUploaded, ApkUploadParams, MAX_LISTED_APKS } from '../../../contract/apk.ts';

const errors = { 400: errorRef, 401: errorRef, 403: errorRef, 404: errorRef, 413: errorRef, 416: errorRef, 429: errorRef };

export function apkRoutes(scope: FastifyInstance, deps: Deps): void {
  const app = scope.withTypeProvider<TypeBoxTypeProvider>();
  const { blobs, config } = deps;
  const policy = { containerType: config.containerType, brandKey: config.brandKey, blobPrefix: config.apkBlobPrefix };

  // Uploads are raw bytes handed to the store as a stream, in this scope only.
  app.addContentTypeParser([APK_CONTENT_TYPE, 'application/octet-stream'], (_req, payload, done) => done(null, payload));

  app.get(
    '/api/admin/apk',
    {
      config: { auth: 'session', role: 'admin' },
      schema: {
        tags: ['admin'],
        summary: 'Which signed APKs are stored (Admin or Superadmin)',
        description:
          "The stored package of each brand asked for (the container's BRAND_KEY by default), and whether the session " +
          'may upload: only superadmins, the wallets in SUPERADMIN_WALLETS. A partner container lists only its own brand.',
        security: cookieAuth,
        querystring: ApkListQuery,
        response: {
          200: ApkList,
          ...errors,
        },
      },
    },
    async (request) => {
      const asked = (request.query.apps ?? config.brandKey).split(',').map((a) => a.trim()).filter((a) => a !== '');
      const apps = [...new Set(asked)];
      if (apps.length > MAX_LISTED_APKS) throw new InvalidInput(`apps names at most ${MAX_LISTED_APKS} brands`);
      for (const name of apps) assertAppName(name);
      const visible = apps.filter((name) => policy.containerType === 'platform' || name === policy.brandKey);
      const packages = await Promise.all(
        visible.map(async (name) => {
          const info = await blobs.stat(apkBlobName(policy, name));
          return info === null
            ? { app: name, stored: false, size: null, lastModified: null, etag: null }
            : { app: name, stored: true, size: info.size, lastModified: info.lastModified.getTime(), etag: info.etag };
        }),
      );
      return {
        containerType: policy.containerType,
        brandKey: policy.brandKey,
        canUpload: sessionOf(request).roles.includes('superadmin'),
        packages,
      };
    },
  );

  app.get(
    '/api/admin/apk/:app',
    {
      config: { auth: 'session', role: 'admin' },
      schema: {
        tags: ['admin'],
        summary: "Download a brand's signed APK (Admin or Superadmin)",
        description:
          'Streams the package with Content-Length, ETag and Range support. A partner container serves only its own ' +
          'brand (404 apk_not_visible for any other).',
        security: cookieAuth,
        params: ApkDownloadParams,
        response: { 200: { description: 'The package bytes', content: { [APK_CONTENT_TYPE]: { schema: { type: 'string', format: 'binary' } } } }, 206: { description: 'Part of the package', type: 'null' }, 304: { description: 'Not modified', type: 'null' }, ...errors },
      },
    },
    async (request, reply) => {
      const { app: name } = request.params;
      assertAppName(name);
      assertVisible(policy, name);
      const blobName = apkBlobName(policy, name);
      const info = await blobs.stat(blobName);
      if (info === null) throw new NotFound(`No signed package is stored for brand ${name}`);

      reply.header('etag', info.etag);
      reply.header('last-modified', info.lastModified.toUTCString());
      reply.header('accept-ranges', 'bytes');
      reply.header('cache-control', 'private, no-cache');
      reply.header('content-disposition', `attachment; filename="${name}-signed.apk"`);
      reply.header('x-content-type-options', 'nosniff');
      if (request.headers['if-none-match'] === info.etag) return reply.status(304).send(null);

      // A Range applies only while the client's copy is still current (If-Range).
      const ifRange = request.headers['if-range'];
      const range = ifRange === undefined || ifRange === info.etag ? parseRange(request.headers.range, info.size) : undefined;
      if (range === 'unsatisfiable') {
        reply.header('content-range', `bytes */${info.size}`);
        return reply.status(416).send({ error: 'range_not_satisfiable', message: `The package is ${info.size} bytes long` });
      }
      reply.type(APK_CONTENT_TYPE);
      let stream: Readable;
      if (range === undefined) {
        reply.header('content-length', info.size);
        stream = await blobs.read(blobName);
      } else {
        reply.status(206);
        reply.header('content-range', `bytes ${range.start}-${range.end}/${info.size}`);
        reply.header('content-length', range.end - range.start + 1);
        stream = await blobs.read(blobName, range);
      }
      return reply.send(stream);
    },
  );

  app.put(
    '/api/admin/apk/:app',
    {
      config: { auth: 'session', role: 'superadmin' },
      schema: {
        tags: ['admin'],
        summary: "Upload (overwrite) a brand's signed APK (Superadmin)",
        description: `Body: the raw package (Content-Type ${APK_CONTENT_TYPE}). It must be a ZIP archive; the stored package is replaced only once the whole upload arrived and passed the checks.`,
        security: cookieAuth,
        params: ApkUploadParams,
        response: {
          200: ApkUploaded,
          408: errorRef,
          415: errorRef,
          ...errors,
        },
      },
    },
    async (request, reply) => {
      const { app: name } = request.params;
      assertAppName(name);
      assertVisible(policy, name);
      const declared = Number(request.headers['content-length'] ?? NaN);
      if (Number.isFinite(declared) && declared > config.apkMaxBytes) throw new PayloadTooLarge(config.apkMaxBytes);
      // Only the raw-byte content types arrive as a stream; JSON or text would arrive parsed.
      const body = request.body;
      if (!(body instanceof Readable)) {
        throw new AppError(415, 'unsupported_media_type', `Send the package bytes as ${APK_CONTENT_TYPE} or application/octet-stream`);
      }
      // Past the checks, the upload has its own time: the whole of it within APK_UPLOAD_TIMEOUT_MS,
      // but never REQUEST_TIMEOUT_MS without a byte.
      releaseRequestDeadline(request.raw);
      const timed = bodyWithin(request.raw, body, { totalMs: config.apkUploadTimeoutMs, idleMs: config.requestTimeoutMs });
      let info;
      try {
        info = await blobs.write(apkBlobName(policy, name), timed, {
          maxBytes: config.apkMaxBytes,
          headerBytes: 4,
          validateHeader: assertZipHeader,
        });
      } catch (err) {
        // The rest of the body will not be read: close the connection after the answer rather
        // than drain it.
        if (!request.raw.complete) reply.header('connection', 'close');
        throw timed.timedOut ?? err;
      }
      request.log.info({ app: name, size: info.size }, 'apk uploaded');
      return { ok: true, app: name, size: info.size, etag: info.etag };
    },
  );
}
