/**
 * Webhook endpoints and their deliveries as the admin app manages them (the rules are in
 * endpoints.ts, outbox.ts and test-event.ts). Built once per app (src/deps.ts) with the target
 * policy of its configuration, so each route handler is one call with a params object.
 */
import type { Db } from '../db/client.ts';
import type { TestQueued } from '../contract/webhooks.ts';
import { createEndpoint, deleteEndpoint, listEndpoints } from './endpoints.ts';
import { listDeliveries, redeliver } from './outbox.ts';
import type { UrlPolicy } from './ssrf.ts';
import { enqueueTestEvent } from './test-event.ts';

export interface WebhookEndpointServiceOptions {
  db: Db;
  /** Which targets an endpoint may name (webhookTargetPolicy of the configuration). */
  policy: Required<UrlPolicy>;
  now?: () => number;
}

export class WebhookEndpointService {
  private readonly now: () => number;

  constructor(private readonly o: WebhookEndpointServiceOptions) {
    this.now = o.now ?? Date.now;
  }

  /** GET /api/admin/webhooks: the merchant's endpoints, and which targets this service accepts. */
  async list(p: { wallet: string }) {
    const targets = { loopback: this.o.policy.allowLoopback, private: this.o.policy.allowPrivate };
    return { webhooks: await listEndpoints(this.o.db, p.wallet), targets };
  }

  /** POST /api/admin/webhooks: registers an endpoint; the answer holds its signing secret, shown once. */
  create(p: { wallet: string; input: { url: unknown; events?: unknown } }) {
    return createEndpoint(this.o.db, p.wallet, p.input, this.o.policy, this.now());
  }

  /** DELETE /api/admin/webhooks/{id}: another merchant's endpoint, or an unknown one, is 404. */
  async remove(p: { wallet: string; id: string }): Promise<{ ok: true }> {
    await deleteEndpoint(this.o.db, p.wallet, p.id, this.now());
    return { ok: true };
  }

  /** POST /api/admin/webhooks/{id}/test: one test event for this endpoint; a retry of the same write answers the same delivery. */
  async sendTest(p: { wallet: string; endpointId: string; writeId: string }): Promise<TestQueued> {
    const { deliveryId } = await enqueueTestEvent(this.o.db, p, this.now());
    return { deliveryId };
  }

  /** GET /api/admin/webhooks/deliveries: recent deliveries with every attempt. */
  async deliveries(p: { wallet: string }) {
    return { deliveries: await listDeliveries(this.o.db, p.wallet) };
  }

  /** POST /api/admin/webhooks/deliveries/{id}/redeliver: sent again now. */
  async redeliver(p: { wallet: string; deliveryId: string }): Promise<{ ok: true }> {
    await redeliver(this.o.db, p.wallet, p.deliveryId, this.now());
    return { ok: true };
  }
}
