/** Wallet sign-in for the admin app: /api/auth/challenge, /login, /me, /logout. */
import { Type, type Static } from '@sinclair/typebox';
import { HANDLER_CHECKS, HandlerCheckedWallet, Wallet } from './common.ts';
import { RoleSchema } from './roles.ts';
// No imports of its own, so the browser bundle may take it.
import { EIP712_DOMAIN_TYPE, LOGIN_STATEMENT, LOGIN_TYPES } from './typed-data.ts';

export const Session = Type.Object({
  wallet: Wallet,
  roles: Type.Array(RoleSchema, { examples: [['owner']] }),
  csrfToken: Type.String({ description: 'Send as x-csrf-token on every state-changing request' }),
});
export type Session = Static<typeof Session>;

export const SessionAnswer = Type.Object(Session.properties, { description: 'The session: its wallet, roles and CSRF token' });

const TypedField = Type.Object({ name: Type.String(), type: Type.String() });

/** The EIP-712 payload of src/contract/typed-data.ts, as eth_signTypedData_v4 takes it. */
export const TypedData = Type.Object(
  {
    domain: Type.Object({ name: Type.String({ examples: ['Splitline'] }), version: Type.String({ examples: ['1'] }), chainId: Type.Integer({ examples: [31337] }) }),
    types: Type.Record(Type.String(), Type.Array(TypedField), {
      examples: [{ EIP712Domain: EIP712_DOMAIN_TYPE, ...LOGIN_TYPES }],
    }),
    primaryType: Type.Literal('Login'),
    message: Type.Object({
      wallet: Wallet,
      nonce: Type.String(),
      issuedAt: Type.String({ description: 'ISO 8601', examples: ['2026-01-01T00:00:00.000Z'] }),
      uri: Type.String({ description: 'SITE_URL', examples: ['http://localhost:8080'] }),
      statement: Type.String({ examples: [LOGIN_STATEMENT] }),
    }),
  },
  { description: 'Sign with eth_signTypedData_v4' },
);
export type TypedData = Static<typeof TypedData>;

export const ChallengeBody = Type.Object(
  { wallet: HandlerCheckedWallet({ description: 'The wallet signing in (else 400 invalid_wallet)' }) },
  { examples: [{ wallet: '0x3c44cdddb6a900fa2b585dd299e03d12fa4293bc' }] },
);
export type ChallengeBody = Static<typeof ChallengeBody>;

export const Challenge = Type.Object(
  {
    nonce: Type.String({ examples: ['9f86d081884c7d659a2feaa0c55ad015'] }),
    expiresAt: Type.Integer({ description: 'Unix ms', examples: [1767225900000] }),
    typedData: TypedData,
  },
  { description: 'The challenge: sign typedData, then call /api/auth/login' },
);
export type Challenge = Static<typeof Challenge>;

export const LoginBody = Type.Object(
  {
    wallet: HandlerCheckedWallet({ description: 'The wallet of the challenge (else 400 invalid_wallet)' }),
    nonce: Type.String({ description: 'From /api/auth/challenge', [HANDLER_CHECKS]: { minLength: 1 } }),
    signature: Type.String({ description: 'The eth_signTypedData_v4 signature of typedData', [HANDLER_CHECKS]: { pattern: '^0x[0-9a-fA-F]+$' } }),
  },
  {
    examples: [
      {
        wallet: '0x3c44cdddb6a900fa2b585dd299e03d12fa4293bc',
        nonce: '9f86d081884c7d659a2feaa0c55ad015',
        signature: '0x' + '5f'.repeat(65),
      },
    ],
  },
);
export type LoginBody = Static<typeof LoginBody>;

export const SignedIn = Type.Object({ ok: Type.Literal(true), ...Session.properties }, { description: 'Signed in: the session cookie is set' });
export type SignedIn = Static<typeof SignedIn>;

export const SignedOut = Type.Object({ ok: Type.Literal(true) }, { description: 'Signed out: the session is ended and its cookie cleared' });
export type SignedOut = Static<typeof SignedOut>;
