import { useEffect, useState, type FormEvent } from 'react';
import { shop, type ShopConfig, type ShopConfigInput } from '../lib/api.ts';
import { fractionToPercent, parseFeePercent, percentToFraction } from '../lib/decimal.ts';
import { isOrigin } from '../lib/format.ts';
import { useLoad, useSubmit } from '../lib/hooks.ts';
import { Button, Empty, ErrorNote, Field, Fieldset, FormActions, Loading, Notice, PageHeader } from '../components/ui.tsx';

interface JurisdictionRow {
  key: number;
  code: string;
  percent: string;
  components: string;
}

interface Form {
  name: string;
  fee: string;
  jurisdictions: JurisdictionRow[];
  origins: string;
}

let rowKey = 0;

function formOf(c: ShopConfig): Form {
  return {
    name: c.name ?? '',
    fee: String(c.processingFeePct),
    jurisdictions: c.taxJurisdictions.map((j) => ({
      key: ++rowKey,
      code: j.code,
      percent: fractionToPercent(j.rate),
      components: j.components.join(', '),
    })),
    origins: c.allowedEmbedOrigins.join('\n'),
  };
}

type Errors = Record<string, string>;

/** Checks the whole form; the body to send, or the problems keyed by field. */
export function validateShop(f: Form): { body: ShopConfigInput } | { errors: Errors } {
  const errors: Errors = {};
  const fee = parseFeePercent(f.fee);
  if (fee === null) errors.fee = 'A percentage from 0 to 100 with at most two decimals, such as 2.5';
  if (f.name.trim().length > 100) errors.name = 'At most 100 characters';
  const codes = new Set<string>();
  const taxJurisdictions = f.jurisdictions.map((j) => {
    const code = j.code.trim();
    if (!/^[A-Za-z0-9-]{1,32}$/.test(code)) errors[`code-${j.key}`] = '1-32 letters, digits or hyphens';
    else if (codes.has(code.toLowerCase())) errors[`code-${j.key}`] = 'This code appears twice';
    codes.add(code.toLowerCase());
    const rate = percentToFraction(j.percent);
    if (rate === null) errors[`rate-${j.key}`] = 'A percent from 0 to 100, at most four decimals';
    const components = j.components
      .split(',')
      .map((c) => c.trim())
      .filter((c) => c !== '');
    return { code, rate: rate ?? 0, components };
  });
  const origins = f.origins
    .split(/[\n,]/)
    .map((o) => o.trim())
    .filter((o) => o !== '');
  const badOrigin = origins.find((o) => !isOrigin(o));
  if (badOrigin !== undefined) errors.origins = `"${badOrigin}" is not an origin such as https://shop.example (no path)`;
  else if (origins.length > 20) errors.origins = 'At most 20 origins';
  if (Object.keys(errors).length > 0) return { errors };
  const body: ShopConfigInput = { processingFeePct: fee ?? 0, taxJurisdictions, allowedEmbedOrigins: origins };
  if (f.name.trim() !== '') body.name = f.name.trim();
  return { body };
}

export function ShopSettings() {
  const loaded = useLoad(() => shop.get());
  const [form, setForm] = useState<Form | null>(null);
  const [errors, setErrors] = useState<Errors>({});
  const [saved, setSaved] = useState<ShopConfig | null>(null);
  const submit = useSubmit();

  useEffect(() => {
    if (loaded.data !== null && form === null) setForm(formOf(loaded.data.config));
  }, [loaded.data, form]);

  if (form === null) {
    return (
      <section>
        <PageHeader title="Shop settings" />
        <ErrorNote message={loaded.error} />
        {loaded.loading && <Loading what="settings" />}
      </section>
    );
  }

  const set = (patch: Partial<Form>) => {
    setSaved(null);
    setForm({ ...form, ...patch });
  };
  const setRow = (key: number, patch: Partial<JurisdictionRow>) =>
    set({ jurisdictions: form.jurisdictions.map((j) => (j.key === key ? { ...j, ...patch } : j)) });

  const onSubmit = (e: FormEvent) => {
    e.preventDefault();
    const checked = validateShop(form);
    if ('errors' in checked) {
      setErrors(checked.errors);
      submit.setError('Some fields need attention.');
      return;
    }
    setErrors({});
    void submit.run(async () => {
      const res = await shop.save(checked.body);
      setSaved(res.config);
      setForm(formOf(res.config));
    });
  };

  return (
    <section>
      <PageHeader title="Shop settings" subtitle="Your shop's name, fees, tax table and where its payment page may be embedded." />
      <form className="card form" onSubmit={onSubmit} noValidate>
        <div className="grid-2">
          <Field label="Shop name" hint="Shown on receipts and the payment page" error={errors.name}>
            {(id, invalid) => (
              <input id={id} name="name" value={form.name} aria-invalid={invalid} maxLength={100} onChange={(e) => set({ name: e.target.value })} />
            )}
          </Field>
          <Field label="Processing fee (%)" hint="Added to orders as a fee line, e.g. 2.5" error={errors.fee}>
            {(id, invalid) => (
              <input id={id} name="processingFeePct" inputMode="decimal" value={form.fee} aria-invalid={invalid} onChange={(e) => set({ fee: e.target.value })} />
            )}
          </Field>
        </div>

        <Fieldset legend="Tax jurisdictions">
          <p className="muted small">Orders and terminal sales pick a jurisdiction; its rate applies to taxable lines.</p>
          {form.jurisdictions.length === 0 && <Empty>No jurisdictions yet.</Empty>}
          {form.jurisdictions.map((j, i) => (
            <div className="row-editor" key={j.key} data-testid="jurisdiction-row">
              <Field label="Code" error={errors[`code-${j.key}`]}>
                {(id, invalid) => (
                  <input id={id} name={`code-${i}`} value={j.code} placeholder="CA" aria-invalid={invalid} onChange={(e) => setRow(j.key, { code: e.target.value })} />
                )}
              </Field>
              <Field label="Rate (%)" error={errors[`rate-${j.key}`]}>
                {(id, invalid) => (
                  <input id={id} name={`rate-${i}`} value={j.percent} inputMode="decimal" placeholder="7.25" aria-invalid={invalid} onChange={(e) => setRow(j.key, { percent: e.target.value })} />
                )}
              </Field>
              <Field label="Components">
                {(id) => (
                  <input id={id} name={`components-${i}`} value={j.components} placeholder="state, county" onChange={(e) => setRow(j.key, { components: e.target.value })} />
                )}
              </Field>
              <Button
                size="small"
                variant="ghost"
                className="row-remove"
                aria-label={`Remove ${j.code || 'jurisdiction'}`}
                onClick={() => set({ jurisdictions: form.jurisdictions.filter((x) => x.key !== j.key) })}
              >
                Remove
              </Button>
            </div>
          ))}
          <Button size="small" onClick={() => set({ jurisdictions: [...form.jurisdictions, { key: ++rowKey, code: '', percent: '', components: '' }] })}>
            Add jurisdiction
          </Button>
        </Fieldset>

        <Field label="Allowed embed origins" hint="One per line, e.g. https://shop.example. Only these sites may frame your payment page." error={errors.origins}>
          {(id, invalid) => (
            <textarea id={id} name="allowedEmbedOrigins" rows={3} value={form.origins} aria-invalid={invalid} onChange={(e) => set({ origins: e.target.value })} />
          )}
        </Field>

        <ErrorNote message={submit.error} />
        {saved !== null && <Notice kind="ok">Settings saved.</Notice>}
        <FormActions>
          <Button type="submit" variant="primary" busy={submit.busy} busyLabel="Saving…">
            Save settings
          </Button>
        </FormActions>
      </form>
    </section>
  );
}
