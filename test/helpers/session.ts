/** Signs in through the real EIP-712 flow with a viem local account. */
import { generatePrivateKey, privateKeyToAccount, type PrivateKeyAccount } from 'viem/accounts';
import type { Res, TestApp } from './app.ts';

export interface Session {
  account: PrivateKeyAccount;
  wallet: string;
  cookie: string;
  csrfToken: string;
  roles: string[];
}

export function newAccount(): PrivateKeyAccount {
  return privateKeyToAccount(generatePrivateKey());
}

export async function challenge(t: TestApp, wallet: string): Promise<{ nonce: string; typedData: any }> {
  const res = await t.call(null, 'POST', '/api/auth/challenge', { wallet });
  if (res.status !== 200) throw new Error(`challenge failed: ${res.status} ${JSON.stringify(res.body)}`);
  return res.body;
}

/** Signs a challenge's typed data as eth_signTypedData_v4 would (EIP712Domain is implied). */
export async function sign(account: PrivateKeyAccount, typedData: any): Promise<`0x${string}`> {
  const { EIP712Domain: _d, ...types } = typedData.types;
  return account.signTypedData({ domain: typedData.domain, types, primaryType: typedData.primaryType, message: typedData.message });
}

export async function signIn(t: TestApp, account: PrivateKeyAccount = newAccount()): Promise<Session> {
  const { nonce, typedData } = await challenge(t, account.address);
  const signature = await sign(account, typedData);
  const res = await t.call(null, 'POST', '/api/auth/login', { wallet: account.address, nonce, signature });
  if (res.status !== 200) throw new Error(`login failed: ${res.status} ${JSON.stringify(res.body)}`);
  return {
    account,
    wallet: account.address.toLowerCase(),
    cookie: cookieFrom(res),
    csrfToken: res.body.csrfToken,
    roles: res.body.roles,
  };
}

export function cookieFrom(res: Res): string {
  const raw = res.headers['set-cookie'];
  const line = (Array.isArray(raw) ? raw : [String(raw)]).find((c) => c.startsWith('cb_auth_token='));
  if (line === undefined) throw new Error('no session cookie set');
  return line.split(';')[0]!;
}

/** A request as the admin app sends it: cookie, CSRF header and same-origin Origin. */
export function admin(t: TestApp, s: Session, method: 'GET' | 'POST' | 'PUT' | 'DELETE', url: string, body?: unknown, headers: Record<string, string> = {}) {
  return t.call(null, method, url, body, {
    cookie: s.cookie,
    'x-csrf-token': s.csrfToken,
    origin: 'http://pay.test',
    ...headers,
  });
}
