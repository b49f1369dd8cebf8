/** Writes acknowledged during a database outage that could never apply: GET /api/admin/rejected-writes. */
import { Type, type Static } from '@sinclair/typebox';

export const JOURNALED_WRITE_KINDS = ['receipt.create', 'receipt.status'] as const;
export type JournaledWriteKind = (typeof JOURNALED_WRITE_KINDS)[number];

export const RejectedWrite = Type.Object({
  writeId: Type.String(),
  kind: Type.Union([Type.Literal('receipt.create'), Type.Literal('receipt.status')]),
  receiptId: Type.Union([Type.String(), Type.Null()], { examples: ['order-1001'] }),
  reason: Type.String({
    description: 'Why it can never apply, starting with a code: conflict, receipt_not_found, ...',
    examples: ['conflict: receipt order-1001 exists with another body'],
  }),
  acknowledgedAt: Type.Integer({ description: 'When the client was told it was accepted (Unix ms)' }),
  rejectedAt: Type.Integer({ description: 'When replay found it could never apply (Unix ms)' }),
  request: Type.Record(Type.String(), Type.Unknown(), {
    description: 'What the request asked for, as journaled',
    examples: [{ id: 'order-1001', lineItems: [{ label: 'Flat white', priceUsd: 3.5, qty: 2 }], totalUsd: 7 }],
  }),
});
export type RejectedWrite = Static<typeof RejectedWrite>;

export const RejectedWritesQuery = Type.Object({
  limit: Type.Optional(Type.Integer({ minimum: 1, maximum: 200, default: 50, description: 'How many, newest first', examples: [20] })),
});
export type RejectedWritesQuery = Static<typeof RejectedWritesQuery>;

export const RejectedWriteList = Type.Object({ writes: Type.Array(RejectedWrite) }, { description: 'The rejected writes, newest first' });
export type RejectedWriteList = Static<typeof RejectedWriteList>;
