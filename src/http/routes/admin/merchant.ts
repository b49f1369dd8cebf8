/**
 * Admin writes on the signed-in merchant's own data (session cookie + CSRF): shop settings,
 * split set-up, refunds and terminal receipts. A subscription key never reaches these.
 */
import { Type } from '@sinclair/typebox';
import type { Deps } from '../../../deps.ts';
import { sessionOf } from '../../../auth/plugin.ts';
import { listRefunds, parseRefund, refundChainOf, refundReceipt } from '../../../domain/refunds.ts';
import { saveShopConfig, toShopConfigView } from '../../../domain/shop.ts';
import { setUpSplit } from '../../../domain/split-setup.ts';
import { splitChainOf } from '../../../chain/split-setup-chain.ts';
import { createTerminalReceipt } from '../../../domain/terminal.ts';
import { Forbidden } from '../../../domain/errors.ts';
import { normalizeWallet } from '../../../domain/wallet.ts';
import { errorRef } from '../../schemas.ts';
import type { App } from '../index.ts';

export const adminErrors = { 400: errorRef, 401: errorRef, 403: errorRef, 404: errorRef, 429: errorRef, 500: errorRef };
export const cookieAuth = [{ sessionCookie: [] }];

const SplitSchema = Type.Object({
  address: Type.Union([Type.String(), Type.Null()]),
  recipients: Type.Array(Type.Object({ address: Type.String(), sharesBps: Type.Integer() })),
});

const loose = (description: string) => Type.Optional(Type.Unknown({ description }));

export function adminMerchantRoutes(app: App, deps: Deps): void {
  const { database, config } = deps;
  const db = database.db;

  app.post(
    '/api/shop/config',
    {
      config: { auth: 'session' },
      schema: {
        tags: ['admin'],
        summary: 'Save shop settings',
        security: cookieAuth,
        body: Type.Object({
          processingFeePct: Type.Number({ minimum: 0, maximum: 100, description: 'Percentage, at most two decimals' }),
          name: Type.Optional(Type.String({ minLength: 1, maxLength: 100 })),
          allowedEmbedOrigins: Type.Optional(Type.Array(Type.String(), { maxItems: 20 })),
          taxJurisdictions: Type.Optional(
            Type.Array(
              Type.Object({
                code: Type.String(),
                rate: Type.Number({ description: 'Fraction: 0.0825 means 8.25%' }),
                components: Type.Optional(Type.Array(Type.String())),
              }),
              { maxItems: 200 },
            ),
          ),
        }),
        response: {
          200: Type.Object({
            ok: Type.Boolean(),
            config: Type.Object({
              name: Type.Union([Type.String(), Type.Null()]),
              brandName: Type.String(),
              processingFeePct: Type.Number(),
              taxJurisdictions: Type.Array(
                Type.Object({ code: Type.String(), rate: Type.Number(), components: Type.Array(Type.String()) }),
              ),
              allowedEmbedOrigins: Type.Array(Type.String()),
            }),
          }),
          ...adminErrors,
        },
      },
    },
    async (request) => {
      const settings = await saveShopConfig(db, sessionOf(request).wallet, request.body);
      return { ok: true, config: toShopConfigView(settings, config.brandName) };
    },
  );

  app.post(
    '/api/split/deploy',
    {
      config: { auth: 'session' },
      schema: {
        tags: ['admin'],
        summary: 'Configure the split (idempotent)',
        description:
          'The first call stores the configuration; later calls return it with idempotent: true. Recipients need ' +
          'whole sharesBps from 1 to 10000 summing to 10000, no duplicate address, and the platform recipient with ' +
          'exactly PLATFORM_FEE_BPS. A given splitAddress must be a PaymentSplitter whose payees and shares are exactly ' +
          'the recipients and their sharesBps (400 otherwise). Without one, the service deploys the PaymentSplitter ' +
          'itself when it has a deployer account (the dev chain, or SPLIT_DEPLOYER_KEY); otherwise the address stays ' +
          'null until the admin deploys it from their own wallet.',
        security: cookieAuth,
        body: Type.Object({
          splitAddress: Type.Optional(Type.String()),
          recipients: Type.Optional(
            Type.Array(Type.Object({ address: Type.String(), sharesBps: Type.Integer() }), { maxItems: 50 }),
          ),
        }),
        response: {
          200: Type.Object({ ok: Type.Boolean(), split: SplitSchema, idempotent: Type.Optional(Type.Boolean()) }),
          ...adminErrors,
          503: errorRef,
        },
      },
    },
    async (request) => {
      const platform = { address: config.platformRecipientAddress, feeBps: config.platformFeeBps };
      const result = await setUpSplit(db, sessionOf(request).wallet, request.body, platform, Date.now(), splitChainOf(deps.chain, deps.config.splitDeploysPerDay));
      return result.idempotent ? { ok: true, split: result.split, idempotent: true } : { ok: true, split: result.split };
    },
  );

  app.post(
    '/api/receipts/refund',
    {
      config: { auth: 'session' },
      attachValidation: true,
      schema: {
        tags: ['admin'],
        summary: 'Refund a receipt, in full or in part',
        description:
          'With txHash the refund is checked on the chain before it is recorded: the transaction must be mined and ' +
          "successful and hold an ERC-20 Transfer of the receipt's token to buyer of at least usd, that no other refund " +
          'used; otherwise 400 invalid_input with `reason` not_mined, reverted, no_transfer, too_little or already_used, ' +
          'and nothing is recorded. Without txHash the refund is recorded unverified. 503 chain_unavailable: this ' +
          'instance cannot check a txHash now (no chain, or it did not answer); nothing was recorded.',
        security: cookieAuth,
        body: Type.Object({
          receiptId: loose('Receipt id'),
          wallet: loose('Merchant wallet (must be the signed-in wallet)'),
          buyer: loose('Buyer wallet refunded'),
          usd: loose('Amount refunded, USD, at most two decimals'),
          items: loose('Refunded items: [{label, priceUsd, qty}]'),
          txHash: loose('Refund transaction hash, 0x + 64 hex: its transfer to buyer is checked on the chain'),
        }),
        response: {
          200: Type.Object({
            ok: Type.Boolean(),
            refundId: Type.String(),
            refundedUsd: Type.Number(),
            status: Type.String(),
            verified: Type.Boolean({ description: 'The refund carried txHash and its transfer was found on the chain' }),
          }),
          ...adminErrors,
          503: errorRef,
        },
      },
    },
    async (request) => {
      const session = sessionOf(request);
      const parsed = parseRefund((request.body ?? {}) as Record<string, unknown>);
      if (parsed.wallet !== session.wallet) throw new Forbidden('You can refund only your own receipts');
      const result = await refundReceipt(db, { ...parsed, by: session.wallet }, refundChainOf(deps.chain));
      return { ok: true, ...result };
    },
  );

  app.get(
    '/api/receipts/:id/refunds',
    {
      config: { auth: 'session' },
      schema: {
        tags: ['admin'],
        summary: "A receipt's refunds, and the token a refund is sent in",
        security: cookieAuth,
        params: Type.Object({ id: Type.String() }),
        response: {
          200: Type.Object({
            refunds: Type.Array(
              Type.Object({
                id: Type.String(),
                receiptId: Type.String(),
                buyer: Type.String(),
                usd: Type.Number(),
                items: Type.Array(Type.Object({ label: Type.String(), priceUsd: Type.Number(), qty: Type.Integer() })),
                txHash: Type.Union([Type.String(), Type.Null()]),
                verified: Type.Boolean({ description: 'Its transfer was found on the chain' }),
                createdBy: Type.String(),
                createdAt: Type.Integer(),
              }),
            ),
            token: Type.Union(
              [
                Type.Object({
                  chainId: Type.Integer(),
                  address: Type.String(),
                  symbol: Type.String(),
                  decimals: Type.Integer(),
                }),
                Type.Null(),
              ],
              { description: "The receipts' token, for a refund sent from the merchant's wallet; null without a chain" },
            ),
          }),
          ...adminErrors,
        },
      },
    },
    async (request) => ({
      refunds: await listRefunds(db, sessionOf(request).wallet, request.params.id),
      token: refundChainOf(deps.chain)?.token ?? null,
    }),
  );

  app.post(
    '/api/receipts/terminal',
    {
      config: { auth: 'session' },
      attachValidation: true,
      schema: {
        tags: ['admin'],
        summary: 'Create a POS terminal receipt; the service adds the tax line',
        description: 'The receipt belongs to the signed-in wallet; any wallet header a client sends is ignored.',
        security: cookieAuth,
        body: Type.Object({
          amountUsd: loose('Keypad amount, USD, at most two decimals'),
          label: loose('Line label (default "Sale")'),
          currency: loose('USD'),
          jurisdictionCode: loose("A code from the shop's tax table"),
          taxRate: loose('Fraction: 0.0825 means 8.25%'),
          taxComponents: loose('Tax component names'),
        }),
        response: {
          200: Type.Object({
            ok: Type.Boolean(),
            receipt: Type.Object({
              receiptId: Type.String(),
              totalUsd: Type.Number(),
              currency: Type.String(),
              lineItems: Type.Array(Type.Ref('LineItem')),
              createdAt: Type.Integer(),
              status: Type.String(),
              paymentUrl: Type.String(),
              jurisdictionCode: Type.Union([Type.String(), Type.Null()]),
              taxRate: Type.Number(),
              taxComponents: Type.Array(Type.String()),
            }),
          }),
          ...adminErrors,
        },
      },
    },
    async (request) => {
      const wallet = normalizeWallet(sessionOf(request).wallet);
      const receipt = await createTerminalReceipt(db, config.siteUrl, wallet, (request.body ?? {}) as Record<string, unknown>, config.receiptTtlMinutes);
      return { ok: true, receipt };
    },
  );
}
