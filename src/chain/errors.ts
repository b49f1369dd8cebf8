/**
 * Errors of the chain layer. Each names what failed in fields a caller can act on, and keeps the
 * underlying error (an RPC failure, a revert, a process error) as its `cause`.
 */
import { BaseError, ContractFunctionRevertedError, ContractFunctionZeroDataError } from 'viem';

export class ChainError extends Error {
  constructor(message: string, options?: { cause?: unknown }) {
    super(message, options);
    this.name = new.target.name;
  }
}

/** The dev chain (anvil) could not be started, or stopped starting. */
export class DevChainStartError extends ChainError {
  constructor(
    readonly binary: string,
    readonly reason: string,
    readonly output: string,
    options?: { cause?: unknown },
  ) {
    super(`The dev chain (${binary}) did not start: ${reason}${output === '' ? '' : `\n${output}`}`, options);
  }
}

/** The test USDC could not be deployed or checked on the dev chain. */
export class TestUsdcError extends ChainError {
  constructor(
    readonly step: 'deploy' | 'check',
    readonly address: string | undefined,
    options?: { cause?: unknown },
  ) {
    super(`Test USDC ${step} failed${address === undefined ? '' : ` at ${address}`}`, options);
  }
}

export class SplitDeployError extends ChainError {
  constructor(
    readonly deployer: string,
    readonly payees: readonly string[],
    readonly transactionHash: string | undefined,
    options?: { cause?: unknown },
  ) {
    super(
      `Deploying a PaymentSplitter from ${deployer} for ${payees.length} payees failed` +
        (transactionHash === undefined ? '' : ` (transaction ${transactionHash})`),
      options,
    );
  }
}

/**
 * A split contract could not be read: nothing is deployed there (`no_code`), the contract does
 * not answer as a PaymentSplitter (`not_a_splitter`), or the node could not be asked (`rpc`).
 */
export class SplitReadError extends ChainError {
  constructor(
    readonly address: string,
    readonly call: string,
    readonly reason: 'no_code' | 'not_a_splitter' | 'rpc',
    options?: { cause?: unknown },
  ) {
    super(`Reading ${call} from split contract ${address} failed (${reason})`, options);
  }
}

export class SplitReleaseError extends ChainError {
  constructor(
    readonly split: string,
    readonly token: string,
    readonly account: string,
    readonly transactionHash: string | undefined,
    options?: { cause?: unknown },
  ) {
    super(
      `Releasing ${token} from split ${split} to ${account} failed` +
        (transactionHash === undefined ? '' : ` (transaction ${transactionHash})`),
      options,
    );
  }
}

/**
 * The first error in `err`'s cause chain, `err` itself first, that is a `type`: viem's errors are
 * told apart by their classes, never by their names. viem's BaseError.walk does this along a chain
 * of viem errors; this also walks through the errors of ours and of Node that wrap them.
 */
export function causeOf<T extends Error>(err: unknown, type: abstract new (...args: never[]) => T): T | undefined {
  const seen = new Set<unknown>();
  for (let e: unknown = err; e instanceof Error && !seen.has(e); e = e.cause) {
    seen.add(e);
    if (e instanceof type) return e;
  }
  return undefined;
}

/**
 * True when a contract call failed because of what the contract is (it reverted, or answered
 * nothing because no such function exists there), not because the node could not be reached.
 */
export function isContractRefusal(err: unknown): boolean {
  if (!(err instanceof BaseError)) return false;
  return err.walk((e) => e instanceof ContractFunctionRevertedError || e instanceof ContractFunctionZeroDataError) !== null;
}

/** An existing dev chain named by RPC_URL (CHAIN=dev) could not be joined. */
export class DevChainAttachError extends ChainError {
  constructor(
    readonly rpcUrl: string,
    readonly reason: string,
    options?: { cause?: unknown },
  ) {
    super(`The dev chain at ${rpcUrl} cannot be used: ${reason}`, options);
  }
}
