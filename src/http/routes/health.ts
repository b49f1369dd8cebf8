import { Health } from '../../contract/health.ts';
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
        response: { 200: Health },
      },
    },
    async () => {
      const up = await deps.database.ping().then(
        () => true,
        () => false,
      );
      const worker = deps.chainWorker;
      const sweeps = worker?.sweepHealth();
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
                sweepsWaitingForGas: sweeps!.waitingForGas,
                sweepsAtFeeCap: sweeps!.atFeeCap,
                deployerBalanceWei: sweeps!.deployerBalanceWei,
                deployerLow: sweeps!.deployerLow,
              },
            }),
      };
    },
  );
}
