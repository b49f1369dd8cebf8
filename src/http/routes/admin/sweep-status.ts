/** Whether sweeps are waiting (gas, fees), for the admin app's banner (src/payments/sweeper.ts, through deps.sweeps). */
import type { Deps } from '../../../deps.ts';
import { merchantOf } from '../../../gateway/plugin.ts';
import { adminErrors, cookieAuth } from '../../../contract/common.ts';
import { SweepStatusAnswer } from '../../../contract/sweeps.ts';
import type { App } from '../../app-type.ts';

export function adminSweepStatusRoutes(app: App, deps: Deps): void {
  app.get(
    '/api/admin/sweeps/status',
    {
      config: { auth: 'session' },
      schema: {
        tags: ['admin'],
        summary: 'Whether sweeps into the split are waiting for gas or for fees to fall',
        description:
          'The chain worker publishes these facts after each run, so any instance answers the same. While sweeps wait, ' +
          'the money is safe at the payment addresses and receipts stay tx_mined; fund the deployer (deployerLow) or wait for ' +
          'fees below MAX_FEE_GWEI (atFeeCap).',
        security: cookieAuth,
        response: { 200: SweepStatusAnswer, ...adminErrors },
      },
    },
    async (request) => deps.sweeps.status({ wallet: merchantOf(request) }),
  );
}
