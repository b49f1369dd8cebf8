import { useState, type FormEvent } from 'react';
import { inventory, receipts, shop, type CreatedReceipt } from '../lib/api.ts';
import { formatCents, fractionToPercent, usdToCents } from '../lib/decimal.ts';
import { useLoad, useSubmit } from '../lib/hooks.ts';
import { Button, ButtonLink, Empty, ErrorNote, Field, FormActions, Link, Loading, PageHeader, Table } from '../components/ui.tsx';
import { CreatedReceiptCard } from '../components/CreatedReceipt.tsx';

const QTY = /^\d{1,6}$/;

/** An order paid later: priced from inventory, it leaves a pending receipt and a payment link. */
export function NewOrder() {
  const loaded = useLoad(() => Promise.all([inventory.list(), shop.get()]));
  const [qty, setQty] = useState<Record<string, string>>({});
  const [jurisdiction, setJurisdiction] = useState('');
  const [created, setCreated] = useState<CreatedReceipt | null>(null);
  const submit = useSubmit();

  if (created !== null) {
    return (
      <section>
        <PageHeader title="Order created" actions={<ButtonLink to="receipts">All receipts</ButtonLink>} />
        <CreatedReceiptCard
          receipt={created}
          title="Awaiting payment"
          nextLabel="Create another order"
          onNext={() => {
            setCreated(null);
            setQty({});
          }}
        />
      </section>
    );
  }
  if (loaded.data === null) {
    return (
      <section>
        <PageHeader title="New order" />
        <ErrorNote message={loaded.error} />
        {loaded.loading && <Loading what="inventory" />}
      </section>
    );
  }
  const [{ items }, { config }] = loaded.data;
  const lines = items
    .map((item) => ({ item, text: (qty[item.sku] ?? '').trim() }))
    .filter((l) => l.text !== '' && l.text !== '0');
  const badQty = lines.find((l) => !QTY.test(l.text));
  const subtotalCents = lines.reduce((sum, l) => sum + (QTY.test(l.text) ? usdToCents(l.item.priceUsd) * Number(l.text) : 0), 0);

  const onSubmit = (e: FormEvent) => {
    e.preventDefault();
    if (badQty !== undefined) {
      submit.setError(`The quantity of ${badQty.item.name} must be a whole number.`);
      return;
    }
    if (lines.length === 0) {
      submit.setError('Choose at least one product.');
      return;
    }
    void submit.run(async () => {
      const body = { items: lines.map((l) => ({ sku: l.item.sku, qty: Number(l.text) })), ...(jurisdiction === '' ? {} : { jurisdictionCode: jurisdiction }) };
      const res = await receipts.order(body);
      setCreated(res.receipt);
    });
  };

  return (
    <section>
      <PageHeader
        title="New order"
        subtitle="Price an order from your inventory; the buyer pays later through its payment link."
        actions={<ButtonLink to="receipts">All receipts</ButtonLink>}
      />
      {items.length === 0 ? (
        <Empty>
          Your inventory is empty. <Link to="inventory">Add products</Link> first.
        </Empty>
      ) : (
        <form className="card form" onSubmit={onSubmit} noValidate>
          <Table
            columns={[
              { header: 'Product', cell: (item) => item.name },
              { header: 'Price', num: true, cell: (item) => formatCents(usdToCents(item.priceUsd)) },
              { header: 'Stock', cell: (item) => (item.stockQty === -1 ? 'Unlimited' : item.stockQty) },
              {
                header: 'Quantity',
                cell: (item) => (
                  <input
                    className="qty"
                    aria-label={`Quantity of ${item.sku}`}
                    name={`qty-${item.sku}`}
                    inputMode="numeric"
                    placeholder="0"
                    value={qty[item.sku] ?? ''}
                    onChange={(e) => setQty({ ...qty, [item.sku]: e.target.value })}
                  />
                ),
              },
            ]}
            rows={items}
            rowKey={(item) => item.id}
            rowData={(item) => ({ 'data-sku': item.sku })}
          />
          <Field label="Tax jurisdiction" hint="Tax applies to taxable products; the shop's processing fee is added too.">
            {(id) => (
              <select id={id} name="jurisdictionCode" value={jurisdiction} onChange={(e) => setJurisdiction(e.target.value)}>
                <option value="">No tax</option>
                {config.taxJurisdictions.map((j) => (
                  <option key={j.code} value={j.code}>
                    {j.code} ({fractionToPercent(j.rate)}%)
                  </option>
                ))}
              </select>
            )}
          </Field>
          <p className="sum">Subtotal {formatCents(subtotalCents)} before tax and fees</p>
          <ErrorNote message={submit.error} />
          <FormActions>
            <Button type="submit" variant="primary" busy={submit.busy} busyLabel="Creating…">
              Create order
            </Button>
          </FormActions>
        </form>
      )}
    </section>
  );
}
