/**
 * What the signed-in merchant's split contract holds for each recipient and what it has released,
 * read from the contract (src/payments/split-balances.ts). Recipients withdraw with
 * release(token, account) from their own wallets; the admin app shows these numbers beside that.
 */
import { Type } from '@sinclair/typebox';
import type { Deps } from '../../../deps.ts';
import { AppError } from '../../../domain/errors.ts';
import { merchantOf } from '../../../gateway/plugin.ts';
import { merchantSplitBalances, type SplitBalances } from '../../../payments/split-balances.ts';
import { adminErrors, cookieAuth, WALLET, Wallet } from '../../schemas.ts';
import type { App } from '../../app-type.ts';

const Units = (description: string) => Type.String({ pattern: '^(0|[1-9][0-9]*)$', description, examples: ['7000000'] });

export const SplitBalancesBody = Type.Object({
  address: Type.String({ ...WALLET, description: 'The split contract' }),
  token: Type.String({ ...WALLET, description: 'The token the amounts are in (the service accepts this one)' }),
  totalReceived: Units('Everything the split ever received in the token: balance + totalReleased, base units'),
  totalReleased: Units('Everything released to recipients so far, base units'),
  balance: Units("The split's token balance now, base units"),
  recipients: Type.Array(
    Type.Object({
      address: Wallet,
      sharesBps: Type.Integer({ minimum: 1, maximum: 10_000, description: '10000 = 100%', examples: [9950] }),
      released: Units('Paid out to this recipient so far, base units'),
      releasable: Units('What this recipient can withdraw now with release(token, account), base units'),
    }),
  ),
}, { description: "What the merchant's split holds and released, read from the contract at one block" });

function toBody(b: SplitBalances) {
  return {
    address: b.address,
    token: b.token,
    totalReceived: b.totalReceived.toString(),
    totalReleased: b.totalReleased.toString(),
    balance: b.balance.toString(),
    recipients: b.recipients.map((r) => ({
      address: r.address,
      sharesBps: r.sharesBps,
      released: r.released.toString(),
      releasable: r.releasable.toString(),
    })),
  };
}

export function adminSplitBalanceRoutes(app: App, deps: Deps): void {
  app.get(
    '/api/admin/split/balances',
    {
      config: { auth: 'session' },
      schema: {
        tags: ['admin'],
        summary: "What the merchant's split holds for each recipient, and what it released",
        description:
          'Read from the PaymentSplitter at one block: totalReleased(token), released(token, account), ' +
          'releasable(token, account) and the token balance of the split. 404 when the merchant has no split contract.',
        security: cookieAuth,
        errorCodes: { 503: ['chain_unavailable'] },
        response: { 200: SplitBalancesBody, ...adminErrors, 503: adminErrors[500] },
      },
    },
    async (request) => {
      if (deps.chain === undefined) throw new AppError(503, 'chain_unavailable', 'This instance runs without a chain');
      return toBody(await merchantSplitBalances(deps.database.db, deps.chain, merchantOf(request)));
    },
  );
}
