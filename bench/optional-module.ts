/**
 * Imports a part of the service that may not exist yet in this checkout, so the bench can
 * report the routes it serves as skipped instead of failing.
 */
import { existsSync } from 'node:fs';

export type Optional<T> = { ok: true; value: T } | { ok: false; reason: string };

/** `path` is relative to the repository root, e.g. 'src/domain/users.ts'. */
export async function optionalModule<T>(path: string, exports: readonly string[]): Promise<Optional<T>> {
  const url = new URL(`../${path}`, import.meta.url);
  if (!existsSync(url)) return { ok: false, reason: `${path} does not exist yet` };
  const module = (await import(url.href)) as Record<string, unknown>;
  const missing = exports.filter((name) => typeof module[name] !== 'function');
  if (missing.length > 0) return { ok: false, reason: `${path} does not export ${missing.join(', ')} yet` };
  return { ok: true, value: module as T };
}
