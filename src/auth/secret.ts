import { chmodSync, existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { randomBytes } from 'node:crypto';
import type { Config } from '../config.ts';

/**
 * The key that signs session JWTs: JWT_SECRET when set (required in production), otherwise a
 * random key generated once and kept in DATA_DIR, so sessions survive restarts in development.
 */
export function loadJwtKey(config: Config): Uint8Array {
  if (config.jwtSecret !== undefined) return new TextEncoder().encode(config.jwtSecret);
  const file = path.resolve(config.dataDir, 'jwt-secret');
  if (!existsSync(file)) {
    mkdirSync(path.dirname(file), { recursive: true, mode: 0o700 });
    writeFileSync(file, randomBytes(32).toString('base64url'), { mode: 0o600, flag: 'wx' });
  }
  chmodSync(file, 0o600);
  return new TextEncoder().encode(readFileSync(file, 'utf8').trim());
}
