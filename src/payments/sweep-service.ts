/**
 * Sweeps as the admin app sees them: the transaction that sweeps one receipt's payment address,
 * sent from the merchant's own wallet (src/payments/manual-sweep.ts), and whether sweeps are
 * waiting (src/payments/sweeper.ts). Built once per app (src/deps.ts) with its chain, so each
 * route handler is one call with a params object.
 */
import type { ChainDeps } from '../chain/client.ts';
import type { Db } from '../db/client.ts';
import { NoChain } from '../lib/errors.ts';
import { manualSweep, type ManualSweep } from './manual-sweep.ts';
import { sweepStatus, type SweepStatus } from './sweeper.ts';

export class SweepService {
  /** Without `chain`, a manual sweep answers 503 chain_unavailable; the status is read from the database alone. */
  constructor(private readonly o: { db: Db; chain?: ChainDeps }) {}

  /** GET /api/admin/receipts/{id}/sweep: `token` is the query's (the receipt's token when absent). */
  async manual(p: { wallet: string; receiptId: string; token?: string }): Promise<ManualSweep> {
    if (this.o.chain === undefined) throw new NoChain();
    return manualSweep(this.o.db, this.o.chain, p.wallet, p.receiptId, p.token);
  }

  /** GET /api/admin/sweeps/status: the chain worker's published facts and this merchant's receipts at the fee cap. */
  async status(p: { wallet: string }): Promise<SweepStatus> {
    return sweepStatus(this.o.db, p.wallet);
  }
}
