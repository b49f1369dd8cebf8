/**
 * Per-address budgets for the routes a client reaches without a credential, and failure budgets
 * for credentials that did not hold. The rule: a client's junk spends only the client's own
 * bucket. Failures (an unknown key, a payment URL that names no receipt, a sign-in that does not
 * verify) are counted per (address, kind of failure) and refused once that bucket is spent;
 * a request that holds (a valid key, a real receipt, a signature that verifies) is counted on a
 * bucket of its own (the subscription, the address and receipt, the address and wallet) and never
 * checked against the failure counter. Behind a proxy without TRUST_PROXY every client shares one
 * address: junk then costs every client's *junk* budget, never their valid requests.
 */
import type { FastifyReply, FastifyRequest } from 'fastify';
import { RateLimited } from '../lib/errors.ts';
import { budgetAddress } from './client-address.ts';
import type { RateDecision, RateLimiter } from './rate-limit.ts';

/** What failed: each kind has its own bucket per address. */
export type FailureKind = 'key-malformed' | 'key-unknown' | 'pay-unknown' | 'login-failed';

const FAILURE_MESSAGES: Record<FailureKind, string> = {
  'key-malformed': 'Too many invalid subscription keys from this address; retry after resetAt',
  'key-unknown': 'Too many invalid subscription keys from this address; retry after resetAt',
  'pay-unknown': 'Too many payment URLs that name no receipt from this address; retry after resetAt',
  'login-failed': 'Too many failed sign-ins from this address; retry after resetAt',
};

export interface BudgetLimits {
  /** Requests per minute on one public bucket (PUBLIC_RATE_LIMIT_PER_MINUTE). */
  publicRateLimitPerMinute: number;
  /** Invalid subscription keys per address and minute (INVALID_KEY_RATE_LIMIT_PER_MINUTE). */
  invalidKeyRateLimitPerMinute: number;
}

export function setRateHeaders(reply: FastifyReply, d: RateDecision): void {
  reply.header('x-ratelimit-limit', d.limit);
  reply.header('x-ratelimit-remaining', d.remaining);
  reply.header('x-ratelimit-reset', Math.ceil(d.resetAt / 1000));
}

export class Budgets {
  constructor(
    private readonly limiter: RateLimiter,
    private readonly limits: BudgetLimits,
  ) {}

  /** The client's budget address (its /64 for IPv6). */
  address(request: FastifyRequest): string {
    return budgetAddress(request.ip);
  }

  /**
   * Spends one request of the client's bucket `name` (an address is added to it): sets the
   * rate-limit headers, and refuses with 429 once the bucket is spent.
   */
  async spend(request: FastifyRequest, reply: FastifyReply, name: string, limit = this.limits.publicRateLimitPerMinute): Promise<void> {
    const decision = await this.limiter.hit(`ip:${this.address(request)}:${name}`, limit);
    setRateHeaders(reply, decision);
    if (!decision.allowed) throw new RateLimited(decision.resetAt);
  }

  /**
   * Counts one failure of `kind` from the client; refuses with 429 once its failures of that
   * kind have spent their budget (the caller answers its own refusal, 401 or 404, otherwise).
   * With `reply`, the answer carries that bucket's rate-limit headers, as a request that held
   * carries its own: the same headers either way.
   */
  async failed(request: FastifyRequest, kind: FailureKind, reply?: FastifyReply): Promise<void> {
    const limit = kind.startsWith('key-') ? this.limits.invalidKeyRateLimitPerMinute : this.limits.publicRateLimitPerMinute;
    const decision = await this.limiter.hit(`fail:${kind}:${this.address(request)}`, limit);
    if (reply !== undefined) setRateHeaders(reply, decision);
    if (!decision.allowed) throw new RateLimited(decision.resetAt, FAILURE_MESSAGES[kind]);
  }
}
