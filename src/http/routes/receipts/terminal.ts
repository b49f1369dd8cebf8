/** POS terminal receipts from the admin app (session cookie + CSRF); the service adds the tax line. */
import { Type } from '@sinclair/typebox';
import type { Deps } from '../../../deps.ts';
import { sessionOf } from '../../../auth/plugin.ts';
import { createTerminalReceipt } from '../../../domain/terminal.ts';
import { normalizeWallet } from '../../../domain/wallet.ts';
import { writeOf } from '../../idempotency.ts';
import { adminErrors, cookieAuth, PositiveUsd, ReceiptStatus } from '../../schemas.ts';
import type { App } from '../../app-type.ts';

const TaxRate = (description: string) =>
  Type.Number({ minimum: 0, maximum: 1, description: `${description}. Fraction with at most six decimals: 0.0825 means 8.25%`, examples: [0.0825] });

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

export function receiptTerminalRoutes(app: App, deps: Deps): void {
  const { database, config } = deps;
  const db = database.db;

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
