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
          description:
            'Receipts whose money waits at its payment address because no key here pays the sweep gas (SPLIT_DEPLOYER_KEY), or the deployer cannot pay it',
        }),
        sweepsAtFeeCap: Type.Integer({ description: 'Sweeps that wait because the fee they need is above MAX_FEE_GWEI' }),
        deployerBalanceWei: Type.Union([Type.String(), Type.Null()], { description: "The sweep deployer's ETH balance in wei when last read; null without a key" }),
        deployerLow: Type.Boolean({ description: 'The deployer cannot pay the sweeps owed now plus 20 more: fund it' }),
      },
      { description: 'Present when the instance has a chain' },
    ),
  ),
}, { description: 'The service is up; database says whether the database answers' });
export type Health = Static<typeof Health>;
