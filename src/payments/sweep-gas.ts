/**
 * Gas limits for sweeps, learnt from the node's estimates rather than asked for every sweep.
 *
 * An estimate is a call the provider charges for (eth_estimateGas, 20 compute units), pinned to
 * the block the scan read, which a lagging node answers only when asked again: about 30 units and
 * a few hundred milliseconds of every payment, for a figure that is the same for every sweep of a
 * kind. A sweep's gas depends on its factory, its token and whether it deploys the forwarder (an
 * address's first sweep) or finds it there; so there is one limit per kind: the largest estimate
 * seen, with its margin.
 *
 * A limit above what the sweep uses costs nothing (only gas used is paid); one below it makes the
 * sweep revert. So a kind is estimated again every ESTIMATE_EVERY_MS (a token upgrade can make its
 * transfers dearer) and never lowered, and a sweep that reverted drops its kind's limit: the next
 * sweep of that kind is estimated afresh. Kept by the sweeper of one app, not by the process.
 */

/** A kind's limit is estimated again after this long (the largest of old and new is kept). */
export const ESTIMATE_EVERY_MS = 10 * 60_000;
/** Gas limit margin over the estimate: a top-up between the estimate and the block changes the cost. */
export const GAS_MARGIN_PER_CENT = 130n;

/** What a sweep's gas depends on. */
export interface SweepGasKind {
  /** The factory the sweep calls. */
  target: string;
  /** The token it moves (the zero address for native ETH). */
  token: string;
  /** Whether the sweep deploys the address's forwarder: no sweep moved money out of the address before. */
  deploys: boolean;
}

export class SweepGasLimits {
  private readonly limits = new Map<string, { gas: bigint; at: number }>();
  /** Estimates made (for the worker's statistics and the tests). */
  estimates = 0;

  constructor(private readonly now: () => number = Date.now) {}

  /** The gas limit for a sweep of `kind`, from `estimate` (the node's figure) when none is known or it is old. */
  async limit(kind: SweepGasKind, estimate: () => Promise<bigint>): Promise<bigint> {
    const key = keyOf(kind);
    const known = this.limits.get(key);
    if (known !== undefined && this.now() - known.at < ESTIMATE_EVERY_MS) return known.gas;
    this.estimates++;
    const gas = ((await estimate()) * GAS_MARGIN_PER_CENT) / 100n;
    const limit = known !== undefined && known.gas > gas ? known.gas : gas;
    this.limits.set(key, { gas: limit, at: this.now() });
    return limit;
  }

  /** A sweep sent to `target` for `token` reverted: both kinds are estimated again before the next. */
  forget(target: string, token: string): void {
    for (const deploys of [true, false]) this.limits.delete(keyOf({ target, token, deploys }));
  }
}

function keyOf(kind: SweepGasKind): string {
  return `${kind.target.toLowerCase()}\n${kind.token.toLowerCase()}\n${kind.deploys}`;
}
