/** Signed APKs of the brands' apps: GET /api/admin/apk (listing), GET and PUT /api/admin/apk/:app (bytes). */
import { Type, type Static } from '@sinclair/typebox';

/** The most brands one package listing looks up. */
export const MAX_LISTED_APKS = 20;

export const ApkListQuery = Type.Object({
  apps: Type.Optional(Type.String({ description: `Comma-separated brand keys, at most ${MAX_LISTED_APKS}; default BRAND_KEY`, examples: ['splitline'] })),
});
export type ApkListQuery = Static<typeof ApkListQuery>;

export const ApkPackage = Type.Object({
  app: Type.String(),
  stored: Type.Boolean({ description: 'false: no package has been uploaded for this brand yet' }),
  size: Type.Union([Type.Integer(), Type.Null()]),
  lastModified: Type.Union([Type.Integer({ description: 'Unix ms' }), Type.Null()]),
  etag: Type.Union([Type.String(), Type.Null()]),
});
export type ApkPackage = Static<typeof ApkPackage>;

export const ApkList = Type.Object({
  containerType: Type.Union([Type.Literal('platform'), Type.Literal('partner')]),
  brandKey: Type.String(),
  canUpload: Type.Boolean({ description: 'The session holds the superadmin role (SUPERADMIN_WALLETS)' }),
  packages: Type.Array(ApkPackage),
});
export type ApkList = Static<typeof ApkList>;

export const ApkDownloadParams = Type.Object({ app: Type.String({ description: 'Brand key, [a-z0-9-]{1,64}', examples: ['splitline'] }) });
export const ApkUploadParams = Type.Object({ app: Type.String({ description: 'Brand key, [a-z0-9-]{1,64}', examples: ['splitline'] }) });

export const ApkUploaded = Type.Object({ ok: Type.Boolean(), app: Type.String(), size: Type.Integer(), etag: Type.String() });
export type ApkUploaded = Static<typeof ApkUploaded>;
