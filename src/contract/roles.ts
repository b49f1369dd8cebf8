/** Roles a session holds, and the superadmin's grants: /api/admin/roles. */
import { Type, type Static } from '@sinclair/typebox';
import { HandlerCheckedWallet, stringEnum, Wallet } from './common.ts';

/** owner: every signed-in wallet, of its own merchant data; admin and superadmin: platform roles. */
export const ROLES = ['owner', 'admin', 'superadmin'] as const;
export type Role = (typeof ROLES)[number];

export const RoleSchema = stringEnum(ROLES, {
  description: 'owner: every signed-in wallet, of its own merchant data; admin and superadmin: platform roles',
});

/** Roles a superadmin grants: admin (a platform role) and merchant (server-paid split deployment). */
export const GRANTED_ROLES = ['admin', 'merchant'] as const;
export type GrantedRole = (typeof GRANTED_ROLES)[number];
const GrantedRoleSchema = stringEnum(GRANTED_ROLES, {
  description: "admin: a platform role; merchant: the platform pays for the wallet's split deployment",
  examples: ['merchant'],
});

export const Grant = Type.Object({
  wallet: Wallet,
  role: GrantedRoleSchema,
  grantedBy: Wallet,
  grantedAt: Type.Integer({ description: 'Unix ms', examples: [1767225600000] }),
});
export type Grant = Static<typeof Grant>;

export const RoleList = Type.Object(
  { grants: Type.Array(Grant), superadmins: Type.Array(Wallet, { description: 'SUPERADMIN_WALLETS' }) },
  { description: 'The role grants and the configured superadmins' },
);
export type RoleList = Static<typeof RoleList>;

export const GrantRoleBody = Type.Object(
  { wallet: HandlerCheckedWallet({ description: 'The wallet granted the role (else 400 invalid_wallet)' }), role: GrantedRoleSchema },
  { examples: [{ wallet: '0x90f79bf6eb2c4f870365e785982e1f101e93b906', role: 'admin' }] },
);
export type GrantRoleBody = Static<typeof GrantRoleBody>;

export const RevokeRoleParams = Type.Object({
  wallet: HandlerCheckedWallet({ description: 'The wallet losing the role (else 400 invalid_wallet)' }),
  role: GrantedRoleSchema,
});
export type RevokeRoleParams = Static<typeof RevokeRoleParams>;
