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
import { writeOf } from '../../idempotency.ts';
import { MAX_COMPONENTS, MAX_EMBED_ORIGINS, MAX_JURISDICTIONS } from '../../../domain/shop.ts';
import { MAX_LINE_ITEMS } from '../../../domain/receipts.ts';
import {
  errorRef,
  HANDLER_CHECKS,
  HandlerCheckedWallet,
  LineItem,
  PositiveUsd,
  ReceiptId,
  ReceiptStatus,
  TxHash,
  Usd,
  Wallet,
  WALLET,
} from '../../schemas.ts';
import type { App } from '../index.ts';

export const adminErrors = { 400: errorRef, 401: errorRef, 403: errorRef, 404: errorRef, 429: errorRef, 500: errorRef };
export const cookieAuth = [{ sessionCookie: [] }];

const Recipient = Type.Object({
  address: Wallet,
  sharesBps: Type.Integer({ minimum: 1, maximum: 10_000, description: 'Basis points: 10000 = 100%', examples: [9950] }),
});

const SplitSchema = Type.Object({
  address: Type.Union([Wallet, Type.Null()], { description: 'The split contract; null until it is deployed' }),
  recipients: Type.Array(Recipient),
});

const TaxRate = (description: string) =>
  Type.Number({ minimum: 0, maximum: 1, description: `${description}. Fraction with at most six decimals: 0.0825 means 8.25%`, examples: [0.0825] });

const TaxComponents = Type.Array(Type.String({ minLength: 1, maxLength: 64 }), {
  maxItems: MAX_COMPONENTS,
  description: 'Names of the taxes the rate is made of',
  examples: [['state', 'county']],
});

const ShopConfigView = Type.Object({
  name: Type.Union([Type.String(), Type.Null()], { description: 'null until the merchant names the shop', examples: ['Corner Café'] }),
  brandName: Type.String({ description: "The shop's name, else the deployment's brand", examples: ['Corner Café'] }),
  processingFeePct: Type.Number({ minimum: 0, maximum: 100, description: 'Percentage: 2.5 means 2.5%', examples: [2.5], [HANDLER_CHECKS]: { multipleOf: 0.01 } }),
  taxJurisdictions: Type.Array(
    Type.Object({ code: Type.String({ examples: ['CA'] }), rate: TaxRate('The rate'), components: Type.Array(Type.String(), { examples: [['state']] }) }),
  ),
  allowedEmbedOrigins: Type.Array(Type.String({ examples: ['https://shop.example'] })),
});

/**
 * The refund body, documented; the handler checks it itself (attachValidation) in the
 * specification's order so that each field answers its own code.
 */
const RefundBody = Type.Object(
  {
    receiptId: ReceiptId('The receipt refunded (missing or empty: 400 missing_receipt_id)'),
    wallet: Type.String({ ...WALLET, description: 'The merchant wallet: the signed-in one (else 400 invalid_wallet; another wallet: 403)' }),
    buyer: Type.String({ ...WALLET, description: 'The wallet refunded (else 400 invalid_buyer)' }),
    usd: PositiveUsd({
      description: "Amount refunded, USD, at most two decimals; with the earlier refunds at most the receipt's total (else 400 invalid_usd)",
      examples: [3.5],
    }),
    items: Type.Optional(
      Type.Array(
        Type.Object({
          label: Type.String({ minLength: 1, maxLength: 200, pattern: '\\S' }),
          priceUsd: Usd(),
          qty: Type.Optional(Type.Integer({ minimum: 1, description: '1 when omitted' })),
        }),
        { maxItems: MAX_LINE_ITEMS, description: 'The items refunded, for the record' },
      ),
    ),
    txHash: Type.Optional(
      Type.Union([TxHash, Type.Null()], {
        description: "The refund's transaction: its transfer of the receipt's token to buyer is checked on the chain. Omitted or null: recorded unverified",
      }),
    ),
  },
  {
    examples: [
      {
        receiptId: 'order-1001',
        wallet: '0x3c44cdddb6a900fa2b585dd299e03d12fa4293bc',
        buyer: '0x90f79bf6eb2c4f870365e785982e1f101e93b906',
        usd: 3.5,
        items: [{ label: 'Flat white', priceUsd: 3.5, qty: 1 }],
      },
    ],
  },
);

/** The terminal body, documented; the handler checks it itself (amountUsd answers invalid_amount). */
const TerminalBody = Type.Object(
  {
    amountUsd: PositiveUsd({ description: 'Keypad amount, USD, at most two decimals (else 400 invalid_amount)', examples: [12.5] }),
    label: Type.Optional(Type.String({ minLength: 1, maxLength: 200, pattern: '\\S', default: 'Sale', description: 'Line label' })),
    currency: Type.Optional(Type.Literal('USD', { description: 'Receipts are priced in US dollars and paid in USDC' })),
    jurisdictionCode: Type.Optional(Type.String({ minLength: 1, description: "A code from the shop's tax table" })),
    taxRate: Type.Optional(TaxRate('Wins over the jurisdiction rate')),
    taxComponents: Type.Optional(Type.Array(Type.String({ maxLength: 64 }), { description: 'Names of the taxes the rate is made of' })),
  },
  { examples: [{ amountUsd: 12.5, label: 'Sale', currency: 'USD' }] },
);

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
        description: 'processingFeePct is required; the fields left out keep their stored values.',
        body: Type.Object(
          {
            processingFeePct: Type.Number({
              minimum: 0,
              maximum: 100,
              description: 'Percentage added to orders as a fee line, at most two decimals: 2.5 means 2.5%',
              [HANDLER_CHECKS]: { multipleOf: 0.01 },
            }),
            name: Type.Optional(Type.String({ minLength: 1, maxLength: 100, pattern: '\\S', description: 'Shown on receipts and the payment page' })),
            allowedEmbedOrigins: Type.Optional(
              Type.Array(Type.String({ maxLength: 300, description: 'An http(s) origin with no path, such as https://shop.example' }), {
                maxItems: MAX_EMBED_ORIGINS,
                description: 'Origins that may frame the payment page',
              }),
            ),
            taxJurisdictions: Type.Optional(
              Type.Array(
                Type.Object({
                  code: Type.String({ pattern: '^[A-Za-z0-9-]{1,32}$', description: 'Unique, whatever the letter case' }),
                  rate: TaxRate('The rate'),
                  components: Type.Optional(TaxComponents),
                }),
                { maxItems: MAX_JURISDICTIONS },
              ),
            ),
          },
          {
            examples: [
              {
                processingFeePct: 2.5,
                name: 'Corner Café',
                allowedEmbedOrigins: ['https://shop.example'],
                taxJurisdictions: [{ code: 'CA', rate: 0.0825, components: ['state', 'county'] }],
              },
            ],
          },
        ),
        response: {
          200: Type.Object({ ok: Type.Literal(true), config: ShopConfigView }, { description: 'Saved; the configuration as stored' }),
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
        // Checked by the domain, and only on the first call: later calls answer the stored split whatever they send.
        body: Type.Object(
          {
            splitAddress: Type.Optional(HandlerCheckedWallet({ description: 'A PaymentSplitter already deployed, whose payees and shares are the recipients' })),
            recipients: Type.Optional(
              Type.Array(
                Type.Object({
                  address: HandlerCheckedWallet({ description: 'A recipient; no address twice' }),
                  sharesBps: Type.Integer({ description: 'Basis points, 1 to 10000; all of them sum to 10000', [HANDLER_CHECKS]: { minimum: 1, maximum: 10_000 } }),
                }),
                { maxItems: 50, description: "Required on the first call; the platform recipient's share must be PLATFORM_FEE_BPS" },
              ),
            ),
          },
          {
            examples: [
              {
                recipients: [
                  { address: '0x3c44cdddb6a900fa2b585dd299e03d12fa4293bc', sharesBps: 9950 },
                  { address: '0x000000000000000000000000000000000000beef', sharesBps: 50 },
                ],
              },
            ],
          },
        ),
        errorCodes: { 400: ['platform_recipient_not_configured'], 503: ['chain_unavailable'] },
        response: {
          200: Type.Object(
            { ok: Type.Literal(true), split: SplitSchema, idempotent: Type.Optional(Type.Literal(true, { description: 'The split was configured before; nothing changed' })) },
            { description: 'The split as stored' },
          ),
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
        body: RefundBody,
        errorCodes: { 400: ['missing_receipt_id', 'invalid_wallet', 'invalid_buyer', 'invalid_usd'], 503: ['chain_unavailable'] },
        response: {
          200: Type.Object(
            {
              ok: Type.Literal(true),
              refundId: Type.String(),
              refundedUsd: Usd({ description: "The sum of the receipt's refunds now", examples: [3.5] }),
              status: ReceiptStatus,
              verified: Type.Boolean({ description: 'The refund carried txHash and its transfer was found on the chain' }),
            },
            { description: 'The refund is recorded' },
          ),
          ...adminErrors,
          503: errorRef,
        },
      },
    },
    async (request) => {
      const session = sessionOf(request);
      const parsed = parseRefund((request.body ?? {}) as Record<string, unknown>);
      if (parsed.wallet !== session.wallet) throw new Forbidden('You can refund only your own receipts');
      const result = await refundReceipt(db, { ...parsed, by: session.wallet }, refundChainOf(deps.chain), Date.now(), writeOf(request));
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
        params: Type.Object({ id: Type.String({ description: 'The receipt id', examples: ['order-1001'] }) }),
        response: {
          200: Type.Object({
            refunds: Type.Array(
              Type.Object({
                id: Type.String(),
                receiptId: Type.String({ examples: ['order-1001'] }),
                buyer: Wallet,
                usd: PositiveUsd({ examples: [3.5] }),
                items: Type.Array(Type.Object({ label: Type.String(), priceUsd: Usd(), qty: Type.Integer({ minimum: 1 }) })),
                txHash: Type.Union([TxHash, Type.Null()]),
                verified: Type.Boolean({ description: 'Its transfer was found on the chain' }),
                createdBy: Wallet,
                createdAt: Type.Integer({ description: 'Unix ms' }),
              }),
            ),
            token: Type.Union(
              [
                Type.Object({
                  chainId: Type.Integer({ examples: [31337] }),
                  address: Wallet,
                  symbol: Type.String({ examples: ['USDC'] }),
                  decimals: Type.Integer({ examples: [6] }),
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
        body: TerminalBody,
        errorCodes: { 400: ['invalid_amount'], 403: ['split_required'] },
        response: {
          200: Type.Object(
            {
              ok: Type.Literal(true),
              receipt: Type.Object({
                receiptId: Type.String({ examples: ['t-01jh5x2k8q'] }),
                totalUsd: PositiveUsd({ examples: [12.5] }),
                currency: Type.String({ examples: ['USD'] }),
                lineItems: Type.Array(Type.Ref('LineItem')),
                createdAt: Type.Integer({ description: 'Unix ms' }),
                status: ReceiptStatus,
                paymentUrl: Type.String({ description: '{SITE_URL}/pay/<id>?t=<token>' }),
                jurisdictionCode: Type.Union([Type.String(), Type.Null()]),
                taxRate: Type.Number({ minimum: 0, maximum: 1, examples: [0] }),
                taxComponents: Type.Array(Type.String()),
              }),
            },
            { description: 'The terminal receipt, status generated: show the buyer its paymentUrl' },
          ),
          ...adminErrors,
        },
      },
    },
    async (request) => {
      const wallet = normalizeWallet(sessionOf(request).wallet);
      const receipt = await createTerminalReceipt(
        db,
        config.siteUrl,
        wallet,
        (request.body ?? {}) as Record<string, unknown>,
        config.receiptTtlMinutes,
        Date.now(),
        writeOf(request),
      );
      return { ok: true, receipt };
    },
  );
}
