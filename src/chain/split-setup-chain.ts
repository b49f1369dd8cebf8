/**
 * The chain side of the admin's split set-up (src/domain/split-setup.ts): checking a
 * pre-deployed PaymentSplitter against the recipients, and deploying one server-side when the
 * service has a deployer account (the dev chain's, or SPLIT_DEPLOYER_KEY).
 */
import { InsufficientFundsError } from 'viem';
import { AppError } from '../lib/errors.ts';
import type { SplitChain } from '../domain/split-setup.ts';
import type { ChainDeps } from './client.ts';
import type { Deployer } from './deployer.ts';
import { causeOf } from './errors.ts';
import { deploySplit, verifySplitMatches } from './split-contract.ts';

/** The chain could not be asked or did not take the transaction: the admin may retry. */
export class ChainUnavailable extends AppError {
  constructor(action: string, cause: unknown) {
    super(503, 'chain_unavailable', `The chain did not answer while ${action}; retry shortly`, {}, { cause });
  }
}

/**
 * The service's deployer has too little ETH for the deployment's gas: not the chain's fault, and
 * no retry helps until the operator funds it, so it is not called chain_unavailable.
 */
export class DeployerUnfunded extends AppError {
  constructor(deployer: string, cause: unknown) {
    super(
      503,
      'deployer_unfunded',
      `The service's deployer account ${deployer} has too little ETH to pay for deploying the split contract; ` +
        'the operator must fund it (or deploy the split from your own wallet and send its splitAddress)',
      {},
      { cause },
    );
  }
}

/** viem's InsufficientFundsError, or a node's own words for it. */
function isInsufficientFunds(err: unknown): boolean {
  if (causeOf(err, InsufficientFundsError) !== undefined) return true;
  for (let e: unknown = err, depth = 0; e instanceof Error && depth < 6; e = e.cause, depth++) {
    if (/insufficient funds|exceeds the balance of the account|OutOfFunds/i.test(e.message)) return true;
  }
  return false;
}

/** `deployer` sends the deployment with the service's nonce keeper (deps.deployer). */
export function splitChainOf(chain: ChainDeps | undefined, deploysPerDay?: number, deployer?: Deployer): SplitChain | undefined {
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
            const deployed = await deploySplit({ walletClient, publicClient, recipients, deployer }).catch((err: unknown) => {
              if (isInsufficientFunds(err)) throw new DeployerUnfunded(walletClient.account.address, err);
              throw new ChainUnavailable('deploying the split contract', err);
            });
            return deployed.address;
          },
  };
}
