/**
 * GET /healthz. Every caller learns `status` (ok or degraded): a load balancer needs no more, and
 * nobody else learns when the database is away. The details (why, the database, the journal, the
 * chain worker's lag and sweeps) need the edge secret or a superadmin session.
 */
import type { FastifyRequest } from 'fastify';
import { SESSION_COOKIE } from '../../auth/sessions.ts';
import { errorRef } from '../../contract/common.ts';
import { Health, type HEALTH_REASONS } from '../../contract/health.ts';
import type { Deps } from '../../deps.ts';
import type { App } from '../app-type.ts';

type Reason = (typeof HEALTH_REASONS)[number];

/** The chain worker's cursor (src/payments/scanner.ts). */
const PAYMENTS_CURSOR = 'payments';
/** The node's head is asked at most this often, whoever polls. */
const HEAD_CACHE_MS = 2_000;
const HEAD_TIMEOUT_MS = 2_000;

/** The node's head, read at most every HEAD_CACHE_MS and shared by concurrent callers; null when it does not answer. */
function nodeHead(deps: Deps): () => Promise<bigint | null> {
  let cached: { at: number; head: Promise<bigint | null> } | undefined;
  return () => {
    const chain = deps.chain;
    if (chain === undefined) return Promise.resolve(null);
    const now = Date.now();
    if (cached === undefined || now - cached.at >= HEAD_CACHE_MS) {
      const timeout = new Promise<null>((resolve) => setTimeout(() => resolve(null), HEAD_TIMEOUT_MS).unref());
      const read = chain.publicClient.getBlockNumber({ cacheTime: 0 }).catch(() => null);
      cached = { at: now, head: Promise.race([read, timeout]) };
    }
    return cached.head;
  };
}

/** Whether the caller may see the details: the edge secret, or a superadmin's session. */
async function mayReadDetails(request: FastifyRequest, deps: Deps): Promise<boolean> {
  if (request.edgeVerified) return true;
  const token = request.cookies?.[SESSION_COOKIE];
  if (token === undefined || token === '') return false;
  const session = await deps.auth.authenticate(token).catch(() => null);
  return session?.roles.includes('superadmin') === true;
}

export function healthRoutes(app: App, deps: Deps): void {
  const head = nodeHead(deps);

  async function scannedBlock(): Promise<bigint | null> {
    const mine = deps.chainWorker?.lastPass?.head;
    if (mine !== undefined && deps.chainWorker?.isLeader === true) return mine;
    // Another instance runs the worker: its cursor says how far it read.
    const block = await deps.stores.cursors.block(PAYMENTS_CURSOR).catch(() => null);
    return block ?? mine ?? null;
  }

  app.get(
    '/healthz',
    {
      // A budget per address like every credential-free route; EDGE_SECRET is not needed for {status}.
      config: { auth: 'public' },
      schema: {
        tags: ['health'],
        summary: 'Liveness: ok or degraded (details with x-edge-secret or a superadmin session)',
        response: { 200: Health, 429: errorRef },
      },
    },
    async (request) => {
      const up = await deps.database.ping().then(
        () => true,
        () => false,
      );
      const reasons: Reason[] = [];
      if (!up) reasons.push('database_unavailable');
      const worker = deps.chainWorker;
      let payments: Health['payments'];
      if (worker !== undefined) {
        const sweeps = worker.sweepHealth();
        const [nodeAt, scanned] = await Promise.all([head(), up ? scannedBlock() : Promise.resolve(worker.lastPass?.head ?? null)]);
        const lag = nodeAt !== null && scanned !== null ? (nodeAt > scanned ? nodeAt - scanned : 0n) : null;
        if (nodeAt === null) reasons.push('chain_unreachable');
        else if (lag !== null && lag > BigInt(deps.config.maxLagBlocks)) reasons.push('chain_lagging');
        if (sweeps.deployerLow || sweeps.waitingForGas > 0) reasons.push('sweeps_unpaid');
        payments = {
          leader: worker.isLeader,
          scannedBlock: scanned?.toString() ?? null,
          headBlock: nodeAt?.toString() ?? null,
          lagBlocks: lag?.toString() ?? null,
          sweepsWaitingForGas: sweeps.waitingForGas,
          sweepsAtFeeCap: sweeps.atFeeCap,
          deployerBalanceWei: sweeps.deployerBalanceWei,
          deployerLow: sweeps.deployerLow,
          relays: null,
        };
      }
      const status = reasons.length === 0 ? ('ok' as const) : ('degraded' as const);
      if (!(await mayReadDetails(request, deps))) return { status };
      if (payments !== undefined) payments.relays = up && deps.relayGas !== undefined ? await deps.relayGas.totals().catch(() => null) : null;
      return {
        status,
        reasons,
        database: up ? ('up' as const) : ('unavailable' as const),
        journalPending: deps.journal.pending,
        ...(payments === undefined ? {} : { payments }),
      };
    },
  );
}
