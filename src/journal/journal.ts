/**
 * Durable local journal for writes acknowledged while the database is unreachable.
 * (Interface in place; the durable implementation lands with the degraded-mode work. Until then
 * a write during an outage is refused with 503 rather than acknowledged.)
 */
import type { Logger } from 'pino';
import type { Database } from '../db/client.ts';
import { DatabaseUnavailable } from '../domain/errors.ts';
import type { CreatedReceipt, CreateReceiptParams, ReceiptDetail, TrackingStatus } from '../domain/receipts.ts';

export interface JournalOptions {
  database: Database;
  logger: Logger;
  siteUrl: string;
}

export class Journal {
  private constructor(private readonly opts: JournalOptions) {}

  static async open(_dataDir: string, opts: JournalOptions): Promise<Journal> {
    return new Journal(opts);
  }

  /** Writes waiting for the database. */
  get pending(): number {
    return 0;
  }

  async recordReceipt(_params: CreateReceiptParams): Promise<CreatedReceipt> {
    throw new DatabaseUnavailable();
  }

  async recordTrackingStatus(_p: { wallet: string; receiptId: string; status: TrackingStatus }): Promise<void> {
    throw new DatabaseUnavailable();
  }

  findReceipt(_wallet: string, _id: string): ReceiptDetail | undefined {
    return undefined;
  }

  start(): void {}

  async close(): Promise<void> {}
}
