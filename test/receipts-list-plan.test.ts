/**
 * The query plan of GET /api/receipts (ReceiptStore's receipts_page_json, src/db/receipt-views.ts)
 * and of GET /api/events (src/webhooks/events.ts) on the database the tests run on (PGlite, or the
 * PostgreSQL server of DATABASE_URL): with one merchant holding thousands of receipts among other
 * merchants', each page is read from the (wallet, created_at desc, id desc) index in the list's
 * order, the cursor a bound of that index scan, with no sort of the merchant's rows and no OFFSET:
 * a page reads `limit + 2` rows at most however deep it is. docs/decisions.md "The list a page at a
 * time" explains the plans, including the filters the index does not serve.
 */
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { sql } from 'drizzle-orm';
import { receiptPageJson } from '../src/db/receipt-views.ts';
import { rowsOf } from '../src/db/rows.ts';
import { randomWallet, startTestApp } from './helpers/app.ts';

const t = await startTestApp();
const db = t.deps.database.db;
const big = randomWallet();
const RECEIPTS = 3000;
const OTHERS = 20;
const base = Date.now() - 10 * 24 * 3600_000;

after(async () => {
  await t.close();
});

/** Copies of one receipt made through the API: `n` for `wallet`, a minute apart from `from`. */
async function copies(seed: string, wallet: string, n: number, from: number, prefix: string): Promise<void> {
  await db.execute(sql`
    insert into receipts
    select (jsonb_populate_record(null::receipts, to_jsonb(r) || jsonb_build_object(
      'wallet', ${wallet}::text,
      'id', ${prefix} || g,
      'pay_token', md5(${prefix} || ${wallet} || g),
      'pay_address', '0x' || substr(md5('a' || ${prefix} || ${wallet} || g) || md5('b' || ${prefix} || ${wallet} || g), 1, 40),
      'created_at', ${from}::bigint + g * 60000,
      'status', case when g % 100 = 0 then 'completed' else r.status end,
      -- The stored views are the seed's: rendered again from the row when read.
      'summary_json', null, 'state_json', null, 'detail_json', null))).*
    from receipts r, generate_series(1, ${n}) g
    where r.wallet = ${seed.split(' ')[0]!} and r.id = ${seed.split(' ')[1]!}`);
}

interface PlanNode {
  'Node Type': string;
  'Index Name'?: string;
  'Index Cond'?: string;
  Filter?: string;
  'Actual Rows'?: number;
  'Actual Loops'?: number;
  Plans?: PlanNode[];
}

function nodes(plan: PlanNode): PlanNode[] {
  return [plan, ...(plan.Plans ?? []).flatMap(nodes)];
}

/** The SQL of a prepared statement with its placeholders filled as literals, under EXPLAIN ANALYZE. */
async function explain(text: string, params: unknown[]): Promise<PlanNode> {
  let inlined = text;
  for (let i = params.length; i >= 1; i--) {
    // An undefined parameter is sent as null, as the driver sends it (the token without a chain).
    const v = params[i - 1] ?? null;
    if (v !== null && typeof v !== 'number' && typeof v !== 'bigint' && typeof v !== 'boolean' && typeof v !== 'string') throw new Error(`parameter ${i} is neither null, a number, a boolean nor a string: ${typeof v} ${JSON.stringify(v)}`);
    const literal = v === null ? 'null' : typeof v === 'string' ? `'${v.replace(/'/g, "''")}'` : String(v);
    inlined = inlined.replaceAll(`$${i}`, literal);
  }
  const [row] = rowsOf(await db.execute(sql.raw(`explain (analyze, format json) ${inlined}`)));
  const json = Object.values(row!)[0];
  const parsed = (typeof json === 'string' ? JSON.parse(json) : json) as { Plan: PlanNode }[];
  return parsed[0]!.Plan;
}

/** The receipts page statement with these values: its plan. */
async function pagePlan(values: { after: string | null; status: string | null; limit: number }): Promise<PlanNode> {
  const query = receiptPageJson(db).getQuery();
  const named: Record<string, unknown> = { wallet: big, brand: 'Splitline', after: values.after, status: values.status, gte: null, lte: null, limit: values.limit, take: values.limit + 1 };
  const params = query.params.map((p) => (typeof p === 'object' && p !== null && 'name' in p ? named[(p as { name: string }).name] : p));
  return explain(query.sql, params);
}

function indexScanOf(plan: PlanNode, index: string): PlanNode {
  const all = nodes(plan);
  const scan = all.find((n) => n['Index Name'] === index && /Index/.test(n['Node Type']));
  assert.ok(scan, `the plan reads ${index}: ${all.map((n) => `${n['Node Type']}${n['Index Name'] ? ` on ${n['Index Name']}` : ''}`).join(' > ')}`);
  assert.ok(!all.some((n) => n['Node Type'] === 'Sort' || n['Node Type'] === 'Incremental Sort'), 'no sort: the index gives the order');
  return scan;
}

before(async () => {
  const seedWallet = randomWallet();
  const key = await t.key(seedWallet);
  const res = await t.call(key, 'POST', '/api/receipts', { id: 'plan-seed', lineItems: [{ label: 'Tea', priceUsd: 2 }], totalUsd: 2 });
  assert.equal(res.status, 201, JSON.stringify(res.body));
  const seed = `${seedWallet} plan-seed`;
  await copies(seed, big, RECEIPTS, base, 'p-');
  for (let i = 0; i < OTHERS; i++) await copies(seed, randomWallet(), 150, base, `o${i}-`);
  await db.execute(sql`analyze receipts`);
});

describe('GET /api/receipts reads a page from its index, however deep', () => {
  test('the first page: an index scan in the list order that stops after limit + 1 rows', async () => {
    const scan = indexScanOf(await pagePlan({ after: null, status: null, limit: 20 }), 'receipts_wallet_created_idx');
    // limit + 1 for has_more, and PostgreSQL's window reads one row ahead to close its frame.
    assert.ok((scan['Actual Rows'] ?? 0) <= 22, `rows read: ${scan['Actual Rows']}`);
  });

  test('a page deep in the list: the cursor bounds the same index scan, still about limit + 1 rows', async () => {
    const scan = indexScanOf(await pagePlan({ after: 'p-100', status: null, limit: 20 }), 'receipts_wallet_created_idx');
    assert.match(scan['Index Cond'] ?? '', /created_at/, `the cursor is an index condition: ${scan['Index Cond']}`);
    assert.ok((scan['Actual Rows'] ?? 0) <= 22, `rows read: ${scan['Actual Rows']}`);
  });

  test('the page itself is right: the 20 receipts before p-100, newest first', async () => {
    const res = await t.call(await t.key(big), 'GET', '/api/receipts?limit=20&starting_after=p-100');
    assert.equal(res.status, 200, JSON.stringify(res.body));
    assert.deepEqual(res.body.receipts.map((r: { receiptId: string }) => r.receiptId), Array.from({ length: 20 }, (_, i) => `p-${99 - i}`));
    assert.equal(res.body.has_more, true);
  });
});

describe('GET /api/events reads a page from its index', () => {
  test('an index scan on webhook_events_wallet_created_idx in the list order, no sort', async () => {
    const wallet = randomWallet();
    await db.execute(sql`
      insert into webhook_events (wallet, id, type, payload, dedupe_key, created_at)
      select case when g % 10 = 0 then ${wallet}::text else 'other-' || (g % 7) end, 'msg_plan' || g, 'receipt.completed',
        '{"type":"receipt.completed","data":{}}'::jsonb, 'plan:' || g, ${Date.now()}::bigint - g * 1000
      from generate_series(1, 5000) g`);
    await db.execute(sql`analyze webhook_events`);
    const text = `select id, type, created_at, payload from webhook_events
      where wallet = $1 and type <> 'webhook.test' and created_at >= $2
        and (created_at, id) < ($3::bigint, $4::text)
      order by created_at desc nulls last, id desc nulls last limit $5`;
    const scan = indexScanOf(await explain(text, [wallet, Date.now() - 30 * 24 * 3600_000, Date.now() - 100_000, 'msg_plan100', 51]), 'webhook_events_wallet_created_idx');
    assert.ok((scan['Actual Rows'] ?? 0) <= 51, `rows read: ${scan['Actual Rows']}`);
  });
});
