/**
 * The chain side of the admin's split set-up (src/domain/split-setup.ts): checking a
 * pre-deployed PaymentSplitter against the recipients, and deploying one server-side when the
 * service has a deployer account (the dev chain's, or SPLIT_DEPLOYER_KEY).
 */
import { AppError } from '../domain/errors.ts';
import type { SplitChain } from '../domain/split-setup.ts';
import type { ChainDeps } from './client.ts';
import { deploySplit, verifySplitMatches } from './split-contract.ts';

/** The chain could not be asked or did not take the transaction: the admin may retry. */
export class ChainUnavailable extends AppError {
  constructor(action: string, cause: unknown) {
    super(503, 'chain_unavailable', `The chain did not answer while ${action}; retry shortly`, {}, { cause });
  }
}

export function splitChainOf(chain: ChainDeps | undefined, deploysPerDay?: number): SplitChain | undefined {
  if (chain === undefined) return undefined;
  const { publicClient, walletClient } = chain;
  return {
    ...(deploysPerDay === undefined ? {} : { deploysPerDay }),
    async verify(address, recipients) {
      const match = await verifySplitMatches({ publicClient, address, recipients }).catch((err: unknown) => {
        throw new ChainUnavailable('checking the split contract', err);
      });
      return match.ok ? { ok: true } : { ok: false, reason: match.reason, message: match.message };
    },
    deploy:
      walletClient === undefined
        ? undefined
        : async (recipients) => {
            const deployed = await deploySplit({ walletClient, publicClient, recipients }).catch((err: unknown) => {
              throw new ChainUnavailable('deploying the split contract', err);
            });
            return deployed.address;
          },
  };
}
