/**
 * Fills a fresh database for the bench through a direct connection, before the service starts
 * (PGlite allows one process per data directory): receipts, users, what an order needs, and one
 * subscription key per benched route, so no route eats another's rate-limit budget.
 */
import { sql } from 'drizzle-orm';
import type { Database } from '../src/db/client.ts';
import { createSubscription } from '../src/gateway/subscriptions.ts';
import type { BenchOptions } from './options.ts';
import { optionalModule, type Optional } from './optional-module.ts';
import { createRng } from './rng.ts';
import { seedReceipts } from './seed-receipts.ts';
import { seedUsers } from './seed-users.ts';

export const MERCHANT = '0x00000000000000000000000000000000000b3ac0';
export const PLATFORM_RECIPIENT = '0x000000000000000000000000000000000000beef';
/** Far above what the bench can send in a minute: the bench measures the service, not its limiter. */
const RATE_LIMIT_PER_MINUTE = 1_000_000;

type OrderBody = { items: { sku: string; qty: number }[]; jurisdictionCode: string };

export interface OrderSetup {
  /** Unlimited items only: no two orders wait for each other. */
  body: OrderBody;
  /** Every order takes the same limited-stock sku: each one waits for the stock of the one before. */
  contendedBody: OrderBody;
}

/** The contended sku's stock: limited (it is decremented), and more than any run can sell. */
export const CONTENDED_STOCK = 1_000_000_000;

export interface Seeded {
  /** Subscription key per route label. */
  keys: Map<string, string>;
  receipts: number;
  otherReceipts: number;
  users: Optional<{ count: number }>;
  orders: Optional<OrderSetup>;
}

type Shop = typeof import('../src/domain/shop.ts');
type Splits = typeof import('../src/domain/splits.ts');
type Inventory = typeof import('../src/domain/inventory.ts');
type Orders = typeof import('../src/domain/orders.ts');
type Users = typeof import('../src/domain/users.ts');

function progress(label: string, total: number): (done: number) => void {
  const started = Date.now();
  let shown = 0;
  return (done) => {
    if (done < total && done - shown < total / 10) return;
    shown = done;
    const s = ((Date.now() - started) / 1000).toFixed(1);
    console.log(`  ${label.padEnd(26)} ${done.toLocaleString('en-US').padStart(7)} / ${total.toLocaleString('en-US')}  (${s} s)`);
  };
}

/** Shop settings, split, unlimited items and one limited item: everything POST /api/orders needs. */
async function seedOrderSetup(database: Database): Promise<Optional<OrderSetup>> {
  const db = database.db;
  const [shop, splits, inventory, orders] = await Promise.all([
    optionalModule<Shop>('src/domain/shop.ts', ['saveShopConfig']),
    optionalModule<Splits>('src/domain/splits.ts', ['storeSplitConfig']),
    optionalModule<Inventory>('src/domain/inventory.ts', ['upsertInventoryItem']),
    optionalModule<Orders>('src/domain/orders.ts', ['OrderService']),
  ]);
  if (!shop.ok || !splits.ok || !inventory.ok || !orders.ok) {
    const reasons = [shop, splits, inventory, orders].flatMap((m) => (m.ok ? [] : [m.reason]));
    return { ok: false, reason: reasons.join('; ') };
  }
  await shop.value.saveShopConfig(db, MERCHANT, {
    name: 'Bench Coffee',
    processingFeePct: 2.9,
    taxJurisdictions: [{ code: 'US-CA', rate: 0.0825, components: ['state', 'county'] }],
  });
  await splits.value.storeSplitConfig(db, MERCHANT, {
    address: null,
    recipients: [
      { address: MERCHANT, sharesBps: 9950 },
      { address: PLATFORM_RECIPIENT, sharesBps: 50 },
    ],
  });
  await inventory.value.upsertInventoryItem(db, MERCHANT, { sku: 'latte', name: 'Latte', priceUsd: 4.5, stockQty: -1, taxable: true });
  await inventory.value.upsertInventoryItem(db, MERCHANT, { sku: 'beans', name: 'Beans 250 g', priceUsd: 14, stockQty: -1, taxable: false });
  await inventory.value.upsertInventoryItem(db, MERCHANT, { sku: 'ticket', name: 'Concert ticket', priceUsd: 35, stockQty: CONTENDED_STOCK, taxable: true });
  return {
    ok: true,
    value: {
      body: { items: [{ sku: 'latte', qty: 2 }, { sku: 'beans', qty: 1 }], jurisdictionCode: 'US-CA' },
      contendedBody: { items: [{ sku: 'ticket', qty: 1 }], jurisdictionCode: 'US-CA' },
    },
  };
}

export async function seed(database: Database, opts: BenchOptions, routeLabels: readonly string[]): Promise<Seeded> {
  const db = database.db;
  const rng = createRng(20_240_601);
  const now = Date.now();
  console.log(`Seeding ${database.describe}`);

  await seedReceipts(db, { wallet: MERCHANT, count: opts.receipts, newestAt: now, rng, progress: progress('receipts (benched merchant)', opts.receipts) });
  const others = opts.otherReceipts * opts.otherMerchants;
  const othersDone = progress('receipts (other merchants)', others);
  for (let m = 0; m < opts.otherMerchants; m++) {
    const wallet = `0x${'0'.repeat(39)}${m + 1}`;
    await seedReceipts(db, { wallet, count: opts.otherReceipts, newestAt: now - m * 1000, rng, progress: (d) => othersDone(m * opts.otherReceipts + d) });
  }

  let users: Optional<{ count: number }>;
  const usersModule = await optionalModule<Users>('src/domain/users.ts', ['upsertUsers']);
  if (usersModule.ok) {
    await seedUsers(db, usersModule.value.upsertUsers, { count: opts.users, rng, now, progress: progress('users', opts.users) });
    users = { ok: true, value: { count: opts.users } };
  } else {
    users = usersModule;
    console.log(`  users                      skipped: ${usersModule.reason}`);
  }

  const orders = await seedOrderSetup(database);
  console.log(`  order set-up               ${orders.ok ? 'shop, split, unlimited and limited inventory stored' : `skipped: ${orders.reason}`}`);

  const keys = new Map<string, string>();
  for (const label of routeLabels) {
    // The user directory's key carries users:read, which only a superadmin grants.
    const sub = await createSubscription(db, { wallet: MERCHANT, name: `bench ${label}`, rateLimitPerMinute: RATE_LIMIT_PER_MINUTE, grantedBySuperadmin: true });
    keys.set(label, sub.primaryKey);
  }
  // A service that has been running has planner statistics, and its rows have long been
  // vacuumed and written out. A bulk load leaves none of that until autovacuum and the
  // checkpointer come round, which would then happen during the measured runs: the first reads
  // of fresh rows set their hint bits (dirtying the pages they read), and the plans would be
  // ones no deployment sees.
  await db.execute(sql`vacuum (analyze)`);
  try {
    await db.execute(sql`checkpoint`);
  } catch (err) {
    // CHECKPOINT needs a superuser (or pg_checkpoint); without it the checkpointer does it later.
    console.log(`  checkpoint                 skipped: ${err instanceof Error ? err.message : String(err)}`);
  }
  return { keys, receipts: opts.receipts, otherReceipts: others, users, orders };
}
