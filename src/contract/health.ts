/** Liveness for load balancers and monitors: GET /healthz. */
import { Type, type Static } from '@sinclair/typebox';

export const Health = Type.Object({
  status: Type.Literal('ok'),
  database: Type.Union([Type.Literal('up'), Type.Literal('unavailable')]),
  journalPending: Type.Integer({ description: 'Writes waiting in the local journal for the database' }),
  payments: Type.Optional(
    Type.Object(
      {
        leader: Type.Boolean({ description: 'This instance runs the chain worker now' }),
        scannedBlock: Type.Union([Type.String(), Type.Null()], { description: 'The newest block its last pass read' }),
        sweepsWaitingForGas: Type.Integer({
          description: 'Receipts whose money waits at its payment address because no key here pays the sweep gas (SPLIT_DEPLOYER_KEY)',
        }),
      },
      { description: 'Present when the instance has a chain' },
    ),
  ),
}, { description: 'The service is up; database says whether the database answers' });
export type Health = Static<typeof Health>;
