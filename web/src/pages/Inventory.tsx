import { useState, type FormEvent } from 'react';
import { inventory, type InventoryInput, type InventoryItem } from '../lib/api.ts';
import { centsToUsd, formatCents, parseUsd, usdToCents } from '../lib/decimal.ts';
import { useLoad, useSubmit } from '../lib/hooks.ts';
import { Badge, Button, Check, ErrorNote, Field, FieldError, FormActions, Loading, Notice, PageHeader, Table, type Column } from '../components/ui.tsx';

interface Form {
  sku: string;
  name: string;
  price: string;
  unlimited: boolean;
  stock: string;
  taxable: boolean;
  category: string;
  description: string;
}

const EMPTY: Form = { sku: '', name: '', price: '', unlimited: false, stock: '0', taxable: true, category: '', description: '' };

function formOf(item: InventoryItem): Form {
  return {
    sku: item.sku,
    name: item.name,
    price: formatCents(usdToCents(item.priceUsd)).replace(/^\$/, '').replace(/,/g, ''),
    unlimited: item.stockQty === -1,
    stock: item.stockQty === -1 ? '0' : String(item.stockQty),
    taxable: item.taxable,
    category: item.category ?? '',
    description: item.description ?? '',
  };
}

const STOCK = /^\d{1,9}$/;

export function validateItem(f: Form, editing: boolean): { body: InventoryInput } | { errors: Record<string, string> } {
  const errors: Record<string, string> = {};
  if (!/^\S{1,64}$/.test(f.sku.trim())) errors.sku = '1-64 characters, no spaces';
  if (f.name.trim() === '' || f.name.trim().length > 200) errors.name = 'A name of 1-200 characters';
  const cents = parseUsd(f.price);
  if (cents === null) errors.price = 'A price such as 4.50 (at most two decimals)';
  if (!f.unlimited && !STOCK.test(f.stock.trim())) errors.stock = 'A whole number of 0 or more';
  if (Object.keys(errors).length > 0) return { errors };
  return {
    body: {
      sku: f.sku.trim(),
      name: f.name.trim(),
      priceUsd: centsToUsd(cents ?? 0),
      stockQty: f.unlimited ? -1 : Number(f.stock.trim()),
      taxable: f.taxable,
      category: f.category.trim() === '' ? (editing ? null : undefined) : f.category.trim(),
      description: f.description.trim() === '' ? (editing ? null : undefined) : f.description.trim(),
    },
  };
}

export function Inventory() {
  const list = useLoad(() => inventory.list());
  const [editing, setEditing] = useState<InventoryItem | null>(null);
  const [formKey, setFormKey] = useState(0);
  const [saved, setSaved] = useState<string | null>(null);
  const items = list.data?.items ?? [];

  return (
    <section>
      <PageHeader title="Inventory" subtitle="Products your orders are priced from." />
      <div className="split-layout">
        <div>
          <ErrorNote message={list.error} />
          {saved !== null && <Notice kind="ok">{saved}</Notice>}
          {list.loading && list.data === null ? (
            <Loading what="inventory" />
          ) : (
            <Table
              columns={inventoryColumns({
                onSaved: (msg) => {
                  setSaved(msg);
                  list.reload();
                },
                onEdit: (item) => {
                  setEditing(item);
                  setFormKey((k) => k + 1);
                  setSaved(null);
                },
              })}
              rows={items}
              rowKey={(item) => item.id}
              rowData={(item) => ({ 'data-testid': 'inventory-row', 'data-sku': item.sku })}
              empty="No products yet. Add your first one with the form."
              testId="inventory-table"
            />
          )}
        </div>
        <ItemForm
          key={formKey}
          item={editing}
          onCancel={() => { setEditing(null); setFormKey((k) => k + 1); }}
          onSaved={(item, created) => {
            setSaved(created ? `Added ${item.name}.` : `Saved ${item.name}.`);
            setEditing(null);
            setFormKey((k) => k + 1);
            list.reload();
          }}
        />
      </div>
    </section>
  );
}

function inventoryColumns(on: { onSaved: (message: string) => void; onEdit: (item: InventoryItem) => void }): Column<InventoryItem>[] {
  return [
    { header: 'SKU', className: 'mono', cell: (item) => item.sku },
    {
      header: 'Name',
      cell: (item) => (
        <>
          {item.name}
          {!item.taxable && <Badge tone="muted">no tax</Badge>}
        </>
      ),
    },
    { header: 'Price', num: true, cell: (item) => formatCents(usdToCents(item.priceUsd)) },
    { header: 'Stock', cell: (item) => <StockCell item={item} onSaved={on.onSaved} /> },
    {
      header: 'Actions',
      hiddenHeader: true,
      actions: true,
      cell: (item) => (
        <Button size="small" onClick={() => on.onEdit(item)}>
          Edit
        </Button>
      ),
    },
  ];
}

/** Sets the stock of one item in place: the rest of the item is sent unchanged. */
function StockCell(props: { item: InventoryItem; onSaved: (message: string) => void }) {
  const { item } = props;
  const [value, setValue] = useState(item.stockQty === -1 ? '' : String(item.stockQty));
  const submit = useSubmit();
  const onSubmit = (e: FormEvent) => {
    e.preventDefault();
    const text = value.trim();
    if (!(text === '' || STOCK.test(text))) {
      submit.setError('A whole number, or empty for unlimited');
      return;
    }
    void submit.run(async () => {
      const res = await inventory.save({ sku: item.sku, name: item.name, priceUsd: item.priceUsd, stockQty: text === '' ? -1 : Number(text) });
      props.onSaved(`Stock of ${res.item.name} is now ${res.item.stockQty === -1 ? 'unlimited' : res.item.stockQty}.`);
    });
  };
  return (
    <form className="stock-form" onSubmit={onSubmit} noValidate>
      <input aria-label={`Stock of ${item.sku}`} name="stock" inputMode="numeric" value={value} placeholder="∞" onChange={(e) => setValue(e.target.value)} />
      <Button type="submit" size="small" disabled={submit.busy}>
        Set
      </Button>
      {submit.error !== null && <FieldError alert>{submit.error}</FieldError>}
    </form>
  );
}

function ItemForm(props: { item: InventoryItem | null; onSaved: (item: InventoryItem, created: boolean) => void; onCancel: () => void }) {
  const editing = props.item !== null;
  const [form, setForm] = useState<Form>(props.item === null ? EMPTY : formOf(props.item));
  const [errors, setErrors] = useState<Record<string, string>>({});
  const submit = useSubmit();
  const set = (patch: Partial<Form>) => setForm({ ...form, ...patch });

  const onSubmit = (e: FormEvent) => {
    e.preventDefault();
    const checked = validateItem(form, editing);
    if ('errors' in checked) {
      setErrors(checked.errors);
      submit.setError('Some fields need attention.');
      return;
    }
    setErrors({});
    void submit.run(async () => {
      const res = await inventory.save(checked.body);
      props.onSaved(res.item, !editing);
    });
  };

  return (
    <form className="card form" onSubmit={onSubmit} noValidate data-testid="item-form">
      <h2>{editing ? `Edit ${props.item?.name}` : 'Add a product'}</h2>
      <Field label="SKU" hint={editing ? 'The SKU identifies the product; it cannot change' : 'Your code for it, e.g. COFFEE-12'} error={errors.sku}>
        {(id, invalid) => <input id={id} name="sku" value={form.sku} readOnly={editing} aria-invalid={invalid} onChange={(e) => set({ sku: e.target.value })} />}
      </Field>
      <Field label="Name" error={errors.name}>
        {(id, invalid) => <input id={id} name="name" value={form.name} aria-invalid={invalid} onChange={(e) => set({ name: e.target.value })} />}
      </Field>
      <div className="grid-2">
        <Field label="Price (USD)" error={errors.price}>
          {(id, invalid) => <input id={id} name="price" inputMode="decimal" value={form.price} placeholder="0.00" aria-invalid={invalid} onChange={(e) => set({ price: e.target.value })} />}
        </Field>
        <Field label="In stock" error={errors.stock}>
          {(id, invalid) => (
            <input id={id} name="stockQty" inputMode="numeric" value={form.unlimited ? '' : form.stock} disabled={form.unlimited} placeholder={form.unlimited ? 'Unlimited' : '0'} aria-invalid={invalid} onChange={(e) => set({ stock: e.target.value })} />
          )}
        </Field>
      </div>
      <Check label="Unlimited stock" name="unlimited" checked={form.unlimited} onChange={(unlimited) => set({ unlimited })} />
      <Check label="Taxable" name="taxable" checked={form.taxable} onChange={(taxable) => set({ taxable })} />
      <Field label="Category (optional)">{(id) => <input id={id} name="category" value={form.category} onChange={(e) => set({ category: e.target.value })} />}</Field>
      <Field label="Description (optional)">
        {(id) => <textarea id={id} name="description" rows={2} value={form.description} onChange={(e) => set({ description: e.target.value })} />}
      </Field>
      <ErrorNote message={submit.error} />
      <FormActions>
        {editing && (
          <Button variant="ghost" onClick={props.onCancel}>
            Cancel
          </Button>
        )}
        <Button type="submit" variant="primary" busy={submit.busy} busyLabel="Saving…">
          {editing ? 'Save changes' : 'Add product'}
        </Button>
      </FormActions>
    </form>
  );
}
