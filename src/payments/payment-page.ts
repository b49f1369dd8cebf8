/**
 * The payment page's API as one service, built per app (src/deps.ts): the receipt a payment URL
 * names, what the page shows, its tracking statuses, its hints and its gasless payments. Each
 * route of src/http/routes/pay.ts is one call here.
 *
 * A payment URL is its own credential (the receipt id with its unguessable token), so every call
 * resolves it first, on the client's budgets: a URL that names no receipt spends the budget for
 * such URLs, so junk never locks a buyer out of a real payment page, even from the same address.
 */
import type { Hex } from 'viem';
import type { ChainDeps } from '../chain/client.ts';
import type { Deployer } from '../chain/deployer.ts';
import type { PaymentView } from '../contract/pay.ts';
import type { ReceiptStatus } from '../contract/receipts.ts';
import type { Db } from '../db/client.ts';
import { AppError, NotFound, RateLimited } from '../lib/errors.ts';
import { centsToUsd } from '../lib/money.ts';
import { lineItemViews, recordTrackingStatus, type TrackingStatus } from '../domain/receipts.ts';
import { returnUrlShown } from '../domain/return-url.ts';
import { brandOf, getShopSettings } from '../domain/shop.ts';
import type { RateLimiter } from '../gateway/rate-limit.ts';
import { gaslessDomain, relayAuthorization, type AuthorizationInput, type TokenDomains } from './gasless.ts';
import { recordHint } from './hints.ts';
import { pageAsksForBalances } from './other-money.ts';
import { quoteFor, receiptByPayToken, type ReceiptRow } from './quote.ts';

/** Payments need a chain: an instance without one answers 503 before it looks at the URL. */
export class ChainUnavailable extends AppError {
  constructor() {
    super(503, 'chain_unavailable', 'Payments are not available: this instance runs without a chain');
  }
}

/** The client's budgets a payment URL spends as it is resolved (src/gateway/budgets.ts). */
export interface PayBudget {
  /** The URL names no receipt: the client's budget for such URLs. */
  unknown(): Promise<void>;
  /** The receipt the URL names: the client's budget for that receipt. */
  spend(receipt: { wallet: string; id: string }): Promise<void>;
}

/** A payment URL as a request sends it: the receipt id, its token, and the client's budgets. */
export interface PaymentUrl {
  id: string;
  token: string | undefined;
  budget: PayBudget;
}

export interface PaymentPageOptions {
  db: Db;
  limiter: RateLimiter;
  /** The brand of merchants who have not named their shop. */
  brandName: string;
  /** The tokens' EIP-712 domains gasless payments read (deps.tokenDomains). */
  tokenDomains: TokenDomains;
  /** Absent: no payments (views show payment: null, hints and relays answer 503). */
  chain?: ChainDeps;
  /** Pays a relay's gas; absent without a key for gas. */
  deployer?: Deployer;
  /** Looks for a payment sooner when a hint or a relay says where (deps.chainWorker). */
  chainWorker?: { kick(): void };
  /** Counts what relays cost the service (deps.relayGas). */
  relayGas?: { follow(hash: Hex): void };
  now?: () => number;
}

/** Gasless relays per receipt and per payer a minute (each costs the service gas). */
const RELAYS_PER_RECEIPT = 10;
const RELAYS_PER_PAYER = 10;

export class PaymentPage {
  private readonly now: () => number;

  constructor(private readonly o: PaymentPageOptions) {
    this.now = o.now ?? Date.now;
  }

  /** The receipt a payment URL names, on the client's budgets. */
  async #receipt(url: PaymentUrl): Promise<ReceiptRow> {
    let row;
    try {
      row = await receiptByPayToken(this.o.db, url.id, url.token);
    } catch (err) {
      if (err instanceof NotFound) await url.budget.unknown();
      throw err;
    }
    await url.budget.spend(row);
    return row;
  }

  #chain(): ChainDeps {
    if (this.o.chain === undefined) throw new ChainUnavailable();
    return this.o.chain;
  }

  /**
   * The origins the shop lets frame the page a payment URL opens (its Content-Security-Policy,
   * src/http/pay-page.ts); found: false when the URL names no receipt. Spends no budget: the
   * page's own API calls do.
   */
  async embedOrigins(p: { id: string; token: string | undefined }): Promise<{ found: boolean; origins: string[] }> {
    try {
      const row = await receiptByPayToken(this.o.db, p.id, p.token);
      return { found: true, origins: (await getShopSettings(this.o.db, row.wallet)).allowedEmbedOrigins };
    } catch (err) {
      if (err instanceof AppError && err.status === 404) return { found: false, origins: [] };
      throw err;
    }
  }

  /** GET /api/pay/:id: what the page shows and what the buyer must send. */
  async view(url: PaymentUrl): Promise<PaymentView> {
    const { db, chain } = this.o;
    const row = await this.#receipt(url);
    const [shop] = await Promise.all([
      getShopSettings(db, row.wallet),
      // ETH or another token sent here is found by its balance: the worker reads it soon (once a
      // minute per receipt; most loads write nothing). Only payment addresses hold such money.
      chain?.paymentFactory === undefined ? undefined : pageAsksForBalances(db, this.o.limiter, { ...row, receiptId: row.id }, this.now()),
    ]);
    return {
      receiptId: row.id,
      // The shop's name, else the deployment's brand: the brand its receipts show (src/domain/shop.ts).
      brandName: brandOf(shop, this.o.brandName),
      lineItems: lineItemViews(row.lineItems),
      totalUsd: centsToUsd(row.totalCents),
      currency: row.currency,
      status: row.status,
      exception: row.exception,
      expiresAt: row.expiresAt,
      transactionHash: row.transactionHash,
      allowedEmbedOrigins: shop.allowedEmbedOrigins,
      returnUrl: returnUrlShown(row.returnUrl, shop.allowedEmbedOrigins),
      payment: chain === undefined ? null : { ...(await quoteFor(db, row, chain)), gasless: await gaslessDomain(chain, this.o.tokenDomains, row) },
    };
  }

  /**
   * POST /api/pay/:id/status: a tracking status, authorised by the URL. A URL that names no
   * receipt gets the answer an unpaid receipt gives (the status sent): no credential beyond the
   * URL, so the answer tells nothing about which receipts exist.
   */
  async track(p: PaymentUrl & { status: TrackingStatus }): Promise<{ status: ReceiptStatus }> {
    try {
      const row = await this.#receipt(p);
      return await recordTrackingStatus(this.o.db, { wallet: row.wallet, receiptId: row.id, status: p.status });
    } catch (err) {
      if (err instanceof NotFound) return { status: p.status };
      throw err;
    }
  }

  /** POST /api/pay/:id/transaction: where to look for the payment sooner (a hint, never attribution). */
  async hint(p: PaymentUrl & { transactionHash: string }): Promise<{ status: ReceiptStatus }> {
    this.#chain();
    const row = await this.#receipt(p);
    await recordHint(this.o.db, { wallet: row.wallet, receiptId: row.id, hash: p.transactionHash, now: this.now() });
    this.o.chainWorker?.kick();
    return { status: row.status };
  }

  /** POST /api/pay/:id/authorization: a gasless payment, relayed with the service paying the gas. */
  async relay(p: PaymentUrl & { authorization: AuthorizationInput }): Promise<{ transactionHash: Hex }> {
    const chain = this.#chain();
    const row = await this.#receipt(p);
    const { limiter } = this.o;
    for (const [key, limit] of [[`relay:receipt:${row.wallet}:${row.id}`, RELAYS_PER_RECEIPT], [`relay:from:${p.authorization.from.toLowerCase()}`, RELAYS_PER_PAYER]] as const) {
      const decision = await limiter.hit(key, limit);
      if (!decision.allowed) throw new RateLimited(decision.resetAt, 'Too many gasless payments for this receipt or payer; retry after resetAt');
    }
    const now = this.now();
    const transactionHash = await relayAuthorization(this.o.db, chain, row, p.authorization, now, { domains: this.o.tokenDomains, deployer: this.o.deployer });
    // Where to look sooner, like a payment page's own hint.
    await recordHint(this.o.db, { wallet: row.wallet, receiptId: row.id, hash: transactionHash, now }).catch(() => undefined);
    this.o.chainWorker?.kick();
    // What the relay cost the service, for /healthz, once it is mined.
    this.o.relayGas?.follow(transactionHash);
    return { transactionHash };
  }
}
