import { Type } from '@sinclair/typebox';
import type { Deps } from '../../deps.ts';
import type { App } from '../app-type.ts';

export function healthRoutes(app: App, deps: Deps): void {
  app.get(
    '/healthz',
    {
      // No credential and no budget: load balancers and monitors poll it.
      config: { auth: 'open' },
      schema: {
        tags: ['health'],
        summary: 'Liveness and database reachability (no key)',
        response: {
          200: Type.Object({
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
          }, { description: 'The service is up; database says whether the database answers' }),
        },
      },
    },
    async () => {
      const up = await deps.database.ping().then(
        () => true,
        () => false,
      );
      const worker = deps.chainWorker;
      return {
        status: 'ok' as const,
        database: up ? ('up' as const) : ('unavailable' as const),
        journalPending: deps.journal.pending,
        ...(worker === undefined
          ? {}
          : {
              payments: {
                leader: worker.isLeader,
                scannedBlock: worker.lastPass?.head.toString() ?? null,
                sweepsWaitingForGas: worker.sweepsWaiting,
              },
            }),
      };
    },
  );
}
