/** Liveness for load balancers and monitors: GET /healthz. */
import { Type, type Static } from '@sinclair/typebox';

export const HEALTH_REASONS = ['database_unavailable', 'chain_lagging', 'chain_unreachable', 'sweeps_unpaid'] as const;

export const Health = Type.Object(
  {
    status: Type.Union([Type.Literal('ok'), Type.Literal('degraded')], {
      description:
        'ok, or degraded while the database is unreachable, the chain worker lags the head by more than MAX_LAG_BLOCKS or ' +
        'cannot reach the node, or sweeps cannot be paid. Everything else is shown only with x-edge-secret or a superadmin session',
    }),
    reasons: Type.Optional(
      Type.Array(
        Type.Union([
          Type.Literal('database_unavailable'),
          Type.Literal('chain_lagging'),
          Type.Literal('chain_unreachable'),
          Type.Literal('sweeps_unpaid'),
        ]),
        { description: 'Why the status is degraded (empty when ok)' },
      ),
    ),
    database: Type.Optional(Type.Union([Type.Literal('up'), Type.Literal('unavailable')])),
    journalPending: Type.Optional(Type.Integer({ description: 'Writes waiting in the local journal for the database' })),
    payments: Type.Optional(
      Type.Object(
        {
          leader: Type.Boolean({ description: 'This instance runs the chain worker now' }),
          scannedBlock: Type.Union([Type.String(), Type.Null()], { description: 'The newest block the chain worker has read (any instance)' }),
          headBlock: Type.Union([Type.String(), Type.Null()], { description: "The node's head, read at most every 2 s; null when the node did not answer" }),
          lagBlocks: Type.Union([Type.String(), Type.Null()], { description: 'headBlock minus scannedBlock; degraded beyond MAX_LAG_BLOCKS' }),
          sweepsWaitingForGas: Type.Integer({
            description:
              'Receipts whose money waits at its payment address because no key here pays the sweep gas (SPLIT_DEPLOYER_KEY), or the deployer cannot pay it',
          }),
          sweepsAtFeeCap: Type.Integer({ description: 'Sweeps that wait because the fee they need is above MAX_FEE_GWEI' }),
          deployerBalanceWei: Type.Union([Type.String(), Type.Null()], { description: "The sweep deployer's ETH balance in wei when last read; null without a key" }),
          deployerLow: Type.Boolean({ description: 'The deployer cannot pay the sweeps owed now plus 20 more: fund it' }),
          relays: Type.Union(
            [
              Type.Object({
                relays: Type.Integer({ description: 'Relayed gasless payments mined (reverted ones included)' }),
                reverted: Type.Integer({ description: 'Of those, how many reverted (their gas was spent all the same)' }),
                gasUsed: Type.String({ description: 'Gas units they used in total', examples: ['118000'] }),
                weiSpent: Type.String({ description: 'What they cost the deployer in wei (gas used times effective gas price)', examples: ['118000000000000'] }),
              }),
              Type.Null(),
            ],
            {
              description:
                'The gas the service spent relaying gasless payments (POST /api/pay/{id}/authorization), all instances, counted when ' +
                'each relay is mined; null while the database is unreachable',
            },
          ),
        },
        { description: 'Present when the instance has a chain' },
      ),
    ),
  },
  {
    description:
      'Anonymous callers get {status} alone. With x-edge-secret (when EDGE_SECRET is set) or a superadmin session, also ' +
      'reasons, database, journalPending and payments',
  },
);
export type Health = Static<typeof Health>;
