/** GET /api/admin/sweeps/status: whether the money of the merchant's receipts is being swept. */
import { Type, type Static } from '@sinclair/typebox';

export const SweepStatusAnswer = Type.Object(
  {
    waitingForGas: Type.Integer({ minimum: 0, description: 'Sweeps owed (all merchants) that wait because no key here pays gas or the deployer cannot pay it' }),
    atFeeCap: Type.Integer({ minimum: 0, description: 'Sweeps (all merchants) that wait because network fees are above MAX_FEE_GWEI' }),
    deployerBalanceWei: Type.Union([Type.String({ pattern: '^(0|[1-9][0-9]*)$' }), Type.Null()], { description: "The sweep deployer's ETH balance in wei when last read; null without a key" }),
    deployerLow: Type.Boolean({ description: 'The deployer cannot pay the sweeps owed now plus 20 more' }),
    updatedAt: Type.Union([Type.Integer(), Type.Null()], { description: 'When the chain worker last published these facts (ms since the epoch); null before its first run' }),
    receiptsAtFeeCap: Type.Array(Type.String(), { description: "This merchant's receipts whose sweep waits at the fee cap (at most 100)" }),
  },
  { description: 'Money waits safely at its payment addresses while sweeps wait; it reaches the split once they are sent' },
);
export type SweepStatusAnswer = Static<typeof SweepStatusAnswer>;
