/**
 * The EIP-712 sign-in message. The server rebuilds it from the stored challenge, so a client can
 * only sign what the server issued.
 */
export const LOGIN_TYPES = {
  Login: [
    { name: 'wallet', type: 'address' },
    { name: 'nonce', type: 'string' },
    { name: 'issuedAt', type: 'string' },
    { name: 'uri', type: 'string' },
    { name: 'statement', type: 'string' },
  ],
} as const;

export const LOGIN_STATEMENT = 'Sign in to Splitline. This request costs nothing and sends no transaction.';

export interface LoginChallenge {
  wallet: `0x${string}`;
  nonce: string;
  issuedAt: number;
  chainId: number;
  siteUrl: string;
}

export function loginTypedData(c: LoginChallenge) {
  return {
    domain: { name: 'Splitline', version: '1', chainId: c.chainId },
    types: LOGIN_TYPES,
    primaryType: 'Login' as const,
    message: {
      wallet: c.wallet,
      nonce: c.nonce,
      issuedAt: new Date(c.issuedAt).toISOString(),
      uri: c.siteUrl,
      statement: LOGIN_STATEMENT,
    },
  };
}

/** The domain's own type, which eth_signTypedData_v4 wants spelled out. */
export const EIP712_DOMAIN_TYPE = [
  { name: 'name', type: 'string' },
  { name: 'version', type: 'string' },
  { name: 'chainId', type: 'uint256' },
] as const;

/** The same payload with the EIP712Domain type spelled out, as eth_signTypedData_v4 expects. */
export function loginTypedDataForWallet(c: LoginChallenge) {
  const td = loginTypedData(c);
  return { ...td, types: { EIP712Domain: EIP712_DOMAIN_TYPE, ...td.types } };
}
