/**
 * Signed APK distribution rules: which brand packages a container may serve, how a brand maps to
 * a stored name, and what an upload must look like.
 */
import { InvalidInput, NotFound } from '../lib/errors.ts';

const APP_NAME = /^[a-z0-9-]{1,64}$/;
export const APK_CONTENT_TYPE = 'application/vnd.android.package-archive';

export interface ApkPolicy {
  containerType: 'platform' | 'partner';
  brandKey: string;
  blobPrefix: string;
}

/** The app name is a brand key; anything else (dots, slashes, encodings) is refused outright. */
export function assertAppName(app: string): void {
  if (!APP_NAME.test(app)) throw new InvalidInput('app must be a brand key: 1-64 of a-z, 0-9 and -');
}

/** A partner container sees only its own brand; the platform sees every brand. */
export function assertVisible(policy: ApkPolicy, app: string): void {
  if (policy.containerType === 'partner' && app !== policy.brandKey) {
    throw new NotFound(`The package of brand ${app} is not available in this container`, 'apk_not_visible');
  }
}

export function apkBlobName(policy: ApkPolicy, app: string): string {
  assertAppName(app);
  return policy.blobPrefix === '' ? `${app}-signed.apk` : `${policy.blobPrefix}/${app}-signed.apk`;
}

/** An APK is a ZIP archive: it starts with a local file header, PK\x03\x04. */
export function assertZipHeader(head: Buffer): void {
  if (head.length < 4 || head[0] !== 0x50 || head[1] !== 0x4b || head[2] !== 0x03 || head[3] !== 0x04) {
    throw new InvalidInput('The upload is not an APK: it must be a ZIP archive starting with PK\\x03\\x04');
  }
}

export type RangeResult = { start: number; end: number } | 'unsatisfiable' | undefined;

/**
 * Parses a single `bytes=` range against a size. Multiple ranges and malformed headers are
 * ignored (the whole body is sent), as RFC 9110 allows.
 */
export function parseRange(header: string | undefined, size: number): RangeResult {
  if (header === undefined) return undefined;
  const m = /^bytes=(\d*)-(\d*)$/.exec(header.trim());
  if (m === null || (m[1] === '' && m[2] === '')) return undefined;
  if (m[1] === '') {
    const suffix = Number(m[2]);
    if (suffix === 0) return 'unsatisfiable';
    return { start: Math.max(0, size - suffix), end: size - 1 };
  }
  const start = Number(m[1]);
  const end = m[2] === '' ? size - 1 : Math.min(Number(m[2]), size - 1);
  if (!Number.isSafeInteger(start) || start >= size || end < start) return 'unsatisfiable';
  return { start, end };
}
