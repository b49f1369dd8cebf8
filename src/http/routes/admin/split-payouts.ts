/**
 * The signed-in merchant's automatic payouts (src/payments/payouts.ts): read, set, turn off.
 * Settings are stored whether or not this service can pay the gas; `automatic` says whether it can.
 */
import type { Deps } from '../../../deps.ts';
import { sessionOf } from '../../../auth/plugin.ts';
import { adminErrors, cookieAuth } from '../../../contract/common.ts';
import { PayoutSettingsAnswer, PayoutSettingsBody } from '../../../contract/split.ts';
import type { App } from '../../app-type.ts';

export function adminSplitPayoutRoutes(app: App, deps: Deps): void {
  const description =
    'Automatic payouts: at most once per payoutIntervalHours, the service releases every recipient of the split whose ' +
    'releasable amount has reached payoutThresholdUsd, paying the gas with its deployer account. automatic is false ' +
    'when this service has no deployer (SPLIT_DEPLOYER_KEY unset on a public chain): the settings are kept, and nothing ' +
    'is paid out automatically.';

  app.get(
    '/api/admin/split/payouts',
    {
      config: { auth: 'session' },
      schema: { tags: ['admin'], summary: "The merchant's automatic payouts", description, security: cookieAuth, response: { 200: PayoutSettingsAnswer, ...adminErrors } },
    },
    async (request) => deps.payouts.get({ wallet: sessionOf(request).wallet }),
  );

  app.put(
    '/api/admin/split/payouts',
    {
      config: { auth: 'session' },
      schema: {
        tags: ['admin'],
        summary: 'Turn automatic payouts on, or change them',
        description: `${description} A change keeps the time of the last run, so it never allows a run sooner than the new interval does.`,
        security: cookieAuth,
        body: PayoutSettingsBody,
        response: { 200: PayoutSettingsAnswer, ...adminErrors },
      },
    },
    async (request) => deps.payouts.set({ wallet: sessionOf(request).wallet, settings: request.body }),
  );

  app.delete(
    '/api/admin/split/payouts',
    {
      config: { auth: 'session' },
      schema: { tags: ['admin'], summary: 'Turn automatic payouts off', security: cookieAuth, response: { 200: PayoutSettingsAnswer, ...adminErrors } },
    },
    async (request) => deps.payouts.set({ wallet: sessionOf(request).wallet, settings: null }),
  );
}
