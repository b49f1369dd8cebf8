/**
 * Wallet sign-in: an EIP-712 challenge, a login that consumes it, and server-side sessions named
 * by a signed JWT. The CSRF token is derived from the session id, so it needs no storage and dies
 * with the session.
 */
import { createHmac, randomBytes } from 'node:crypto';
import { and, eq, gt, inArray, isNotNull, isNull, lte, or } from 'drizzle-orm';
import { jwtVerify, SignJWT } from 'jose';
import type { Hex } from 'viem';
import type { Db } from '../db/client.ts';
import { authNonces, sessions, userRoles } from '../db/schema.ts';
import { Forbidden, InvalidInput, Unauthorized } from '../lib/errors.ts';
import { isAddress, normalizeWallet } from '../domain/wallet.ts';
import { loginTypedData, loginTypedDataForWallet } from '../contract/typed-data.ts';
import type { SignatureVerifier } from './signature.ts';
import type { GrantedRole, Role } from '../contract/roles.ts';

export const SESSION_COOKIE = 'cb_auth_token';
export const NONCE_TTL_MS = 5 * 60_000;
export const SESSION_TTL_MS = 12 * 60 * 60_000;
const ISSUER = 'splitline';
const AUDIENCE = 'splitline-admin';

export type { Role } from '../contract/roles.ts';

export interface SessionInfo {
  sessionId: string;
  wallet: string;
  roles: Role[];
  csrfToken: string;
  expiresAt: number;
}

export interface AuthOptions {
  db: Db;
  key: Uint8Array;
  chainId: number;
  siteUrl: string;
  superadmins: readonly string[];
  verify: SignatureVerifier;
}

export class AuthService {
  constructor(private readonly o: AuthOptions) {}

  async challenge(wallet: unknown, now = Date.now()) {
    if (!isAddress(wallet)) throw new InvalidInput('wallet must be a 0x-prefixed 40-hex address', 'invalid_wallet');
    const w = normalizeWallet(wallet);
    const nonce = randomBytes(16).toString('hex');
    await this.o.db.insert(authNonces).values({ nonce, wallet: w, issuedAt: now, expiresAt: now + NONCE_TTL_MS });
    const typedData = loginTypedDataForWallet({
      wallet: w as Hex,
      nonce,
      issuedAt: now,
      chainId: this.o.chainId,
      siteUrl: this.o.siteUrl,
    });
    return { nonce, expiresAt: now + NONCE_TTL_MS, typedData };
  }

  /** Consumes the challenge (single use) and, if the signature holds, opens a session. */
  async login(input: { wallet: unknown; nonce: unknown; signature: unknown }, now = Date.now()) {
    if (!isAddress(input.wallet)) throw new InvalidInput('wallet must be a 0x-prefixed 40-hex address', 'invalid_wallet');
    if (typeof input.nonce !== 'string' || input.nonce === '') throw new InvalidInput('nonce is required');
    if (typeof input.signature !== 'string' || !/^0x[0-9a-fA-F]+$/.test(input.signature)) {
      throw new InvalidInput('signature must be 0x-prefixed hex');
    }
    const wallet = normalizeWallet(input.wallet);
    const [challenge] = await this.o.db
      .update(authNonces)
      .set({ usedAt: now })
      .where(
        and(
          eq(authNonces.nonce, input.nonce),
          eq(authNonces.wallet, wallet),
          isNull(authNonces.usedAt),
          gt(authNonces.expiresAt, now),
        ),
      )
      .returning();
    if (challenge === undefined) throw new Unauthorized('The sign-in challenge is unknown, expired or already used');
    const typedData = loginTypedData({
      wallet: wallet as Hex,
      nonce: challenge.nonce,
      issuedAt: challenge.issuedAt,
      chainId: this.o.chainId,
      siteUrl: this.o.siteUrl,
    });
    const ok = await this.o.verify({ wallet: wallet as Hex, typedData, signature: input.signature as Hex });
    if (!ok) throw new Unauthorized('The signature does not match the wallet');

    const sessionId = randomBytes(18).toString('base64url');
    const expiresAt = now + SESSION_TTL_MS;
    await this.o.db.insert(sessions).values({ id: sessionId, wallet, createdAt: now, expiresAt });
    const token = await new SignJWT({ sid: sessionId })
      .setProtectedHeader({ alg: 'HS256' })
      .setSubject(wallet)
      .setIssuer(ISSUER)
      .setAudience(AUDIENCE)
      .setIssuedAt(Math.floor(now / 1000))
      .setExpirationTime(Math.floor(expiresAt / 1000))
      .sign(this.o.key);
    const info: SessionInfo = {
      sessionId,
      wallet,
      roles: await this.rolesOf(wallet),
      csrfToken: this.csrfFor(sessionId),
      expiresAt,
    };
    return { token, session: info };
  }

  /** The live session a token names, or null (bad signature, expired, logged out, revoked). */
  async authenticate(token: string, now = Date.now()): Promise<SessionInfo | null> {
    let sid: unknown;
    let sub: string | undefined;
    try {
      const { payload } = await jwtVerify(token, this.o.key, {
        issuer: ISSUER,
        audience: AUDIENCE,
        algorithms: ['HS256'],
        currentDate: new Date(now),
      });
      sid = payload.sid;
      sub = payload.sub;
    } catch {
      // Any verification failure (tampered, expired, foreign key) is the same answer: no session.
      return null;
    }
    if (typeof sid !== 'string' || sub === undefined) return null;
    const [row] = await this.o.db.select().from(sessions).where(eq(sessions.id, sid));
    if (row === undefined || row.revokedAt !== null || row.expiresAt <= now || row.wallet !== sub) return null;
    return {
      sessionId: row.id,
      wallet: row.wallet,
      roles: await this.rolesOf(row.wallet),
      csrfToken: this.csrfFor(row.id),
      expiresAt: row.expiresAt,
    };
  }

  async logout(sessionId: string, now = Date.now()): Promise<void> {
    await this.o.db.update(sessions).set({ revokedAt: now }).where(eq(sessions.id, sessionId));
  }

  /** Ends every session of a wallet (used when its roles are withdrawn). */
  async revokeSessionsOf(wallet: string, now = Date.now()): Promise<void> {
    await this.o.db
      .update(sessions)
      .set({ revokedAt: now })
      .where(and(eq(sessions.wallet, normalizeWallet(wallet)), isNull(sessions.revokedAt)));
  }

  /**
   * Deletes what can never be used again: challenges that were used or have expired, and sessions
   * that ended (logged out, revoked) or expired. Each challenge request writes a row without any
   * credential, so without this the table grows for good. In batches of `batch` rows, so one pass
   * never holds a long lock; returns how many rows went.
   */
  async purgeExpired(now = Date.now(), batch = 5000): Promise<{ nonces: number; sessions: number }> {
    const n = authNonces;
    const s = sessions;
    let nonces = 0;
    let ended = 0;
    for (;;) {
      const gone = await this.o.db
        .delete(n)
        .where(inArray(n.nonce, this.o.db.select({ nonce: n.nonce }).from(n).where(or(lte(n.expiresAt, now), isNotNull(n.usedAt))).limit(batch)))
        .returning({ nonce: n.nonce });
      nonces += gone.length;
      if (gone.length < batch) break;
    }
    for (;;) {
      const gone = await this.o.db
        .delete(s)
        .where(inArray(s.id, this.o.db.select({ id: s.id }).from(s).where(or(lte(s.expiresAt, now), isNotNull(s.revokedAt))).limit(batch)))
        .returning({ id: s.id });
      ended += gone.length;
      if (gone.length < batch) break;
    }
    return { nonces, sessions: ended };
  }

  csrfFor(sessionId: string): string {
    return createHmac('sha256', this.o.key).update(`csrf:${sessionId}`).digest('base64url');
  }

  async rolesOf(wallet: string): Promise<Role[]> {
    const roles: Role[] = ['owner'];
    if (this.o.superadmins.includes(wallet)) return [...roles, 'admin', 'superadmin'];
    const granted = await this.o.db.select().from(userRoles).where(eq(userRoles.wallet, wallet));
    if (granted.some((g) => g.role === 'admin')) roles.push('admin');
    return roles;
  }

  async grantRole(by: SessionInfo, wallet: unknown, role: GrantedRole, now = Date.now()): Promise<void> {
    if (!by.roles.includes('superadmin')) throw new Forbidden('Only a superadmin grants roles');
    if (!isAddress(wallet)) throw new InvalidInput('wallet must be a 0x-prefixed 40-hex address', 'invalid_wallet');
    await this.o.db.insert(userRoles).values({ wallet: normalizeWallet(wallet), role, grantedBy: by.wallet, grantedAt: now }).onConflictDoNothing();
  }

  async revokeRole(by: SessionInfo, wallet: unknown, role: GrantedRole): Promise<void> {
    if (!by.roles.includes('superadmin')) throw new Forbidden('Only a superadmin withdraws roles');
    if (!isAddress(wallet)) throw new InvalidInput('wallet must be a 0x-prefixed 40-hex address', 'invalid_wallet');
    await this.o.db.delete(userRoles).where(and(eq(userRoles.wallet, normalizeWallet(wallet)), eq(userRoles.role, role)));
  }

  /**
   * Whether the platform pays for this wallet's split deployment: a superadmin or an admin (platform
   * roles), or a wallet a superadmin granted `merchant`. Never something a wallet gives itself.
   */
  async approvedForDeploys(wallet: string): Promise<boolean> {
    const roles = await this.rolesOf(wallet);
    if (roles.includes('admin')) return true;
    const [grant] = await this.o.db
      .select({ role: userRoles.role })
      .from(userRoles)
      .where(and(eq(userRoles.wallet, wallet), eq(userRoles.role, 'merchant')));
    return grant !== undefined;
  }

  async listGrants() {
    return this.o.db.select().from(userRoles);
  }
}
