import { useState, type FormEvent } from 'react';
import { receipts, shop, type CreatedReceipt } from '../lib/api.ts';
import { centsToUsd, formatCents, fractionToPercent, percentToFraction } from '../lib/decimal.ts';
import { useLoad, useSubmit } from '../lib/hooks.ts';
import { Button, ErrorNote, Field, PageHeader } from '../components/ui.tsx';
import { CreatedReceiptCard } from '../components/CreatedReceipt.tsx';

/** The keypad types cents, as a till does: 1, 2, 5 reads $1.25. */
const MAX_DIGITS = 9;
const KEYS = ['1', '2', '3', '4', '5', '6', '7', '8', '9', '00', '0', '⌫'] as const;
const CUSTOM = '__custom';

export function pressKey(digits: string, key: string): string {
  if (key === '⌫') return digits.slice(0, -1);
  const next = (digits + key).replace(/^0+/, '');
  return next.length > MAX_DIGITS ? digits : next;
}

export function Terminal() {
  const shopConfig = useLoad(() => shop.get());
  const [digits, setDigits] = useState('');
  const [label, setLabel] = useState('Sale');
  const [tax, setTax] = useState('');
  const [customRate, setCustomRate] = useState('');
  const [errors, setErrors] = useState<Record<string, string>>({});
  const [created, setCreated] = useState<CreatedReceipt | null>(null);
  const submit = useSubmit();
  const cents = digits === '' ? 0 : Number(digits);
  const jurisdictions = shopConfig.data?.config.taxJurisdictions ?? [];

  if (created !== null) {
    return (
      <section>
        <PageHeader title="Terminal" />
        <CreatedReceiptCard
          receipt={created}
          title="Ready to pay"
          nextLabel="New sale"
          onNext={() => {
            setCreated(null);
            setDigits('');
          }}
        />
      </section>
    );
  }

  const onSubmit = (e: FormEvent) => {
    e.preventDefault();
    const errs: Record<string, string> = {};
    if (cents === 0) errs.amount = 'Type an amount on the keypad';
    if (label.trim() === '' || label.trim().length > 200) errs.label = 'A label of 1-200 characters';
    let taxRate: number | undefined;
    if (tax === CUSTOM) {
      const rate = percentToFraction(customRate);
      if (rate === null) errs.rate = 'A percent from 0 to 100, at most four decimals';
      else taxRate = rate;
    }
    setErrors(errs);
    if (Object.keys(errs).length > 0) {
      submit.setError(errs.amount ?? 'Some fields need attention.');
      return;
    }
    void submit.run(async () => {
      const body = {
        amountUsd: centsToUsd(cents),
        label: label.trim(),
        ...(tax !== '' && tax !== CUSTOM ? { jurisdictionCode: tax } : {}),
        ...(taxRate !== undefined ? { taxRate } : {}),
      };
      const res = await receipts.terminal(body);
      setCreated(res.receipt);
    });
  };

  return (
    <section>
      <PageHeader title="Terminal" subtitle="Ring up a sale; the buyer scans the code to pay." />
      <form className="terminal card" onSubmit={onSubmit} noValidate>
        <output className={`display${errors.amount ? ' display-invalid' : ''}`} data-testid="terminal-amount" aria-live="polite">
          {formatCents(cents)}
        </output>
        <div className="keypad" role="group" aria-label="Keypad">
          {KEYS.map((k) => (
            <button
              key={k}
              type="button"
              className="key"
              aria-label={k === '⌫' ? 'Delete last digit' : k}
              onClick={() => {
                setDigits(pressKey(digits, k));
                submit.setError(null);
              }}
            >
              {k}
            </button>
          ))}
        </div>
        <Button variant="ghost" size="small" onClick={() => setDigits('')}>
          Clear
        </Button>
        <Field label="Label" error={errors.label}>
          {(id, invalid) => <input id={id} name="label" value={label} aria-invalid={invalid} onChange={(e) => setLabel(e.target.value)} />}
        </Field>
        <Field label="Tax" error={shopConfig.error}>
          {(id) => (
            <select id={id} name="tax" value={tax} onChange={(e) => setTax(e.target.value)}>
              <option value="">No tax</option>
              {jurisdictions.map((j) => (
                <option key={j.code} value={j.code}>
                  {j.code} ({fractionToPercent(j.rate)}%)
                </option>
              ))}
              <option value={CUSTOM}>Another rate…</option>
            </select>
          )}
        </Field>
        {tax === CUSTOM && (
          <Field label="Tax rate (%)" error={errors.rate}>
            {(id, invalid) => <input id={id} name="taxRate" inputMode="decimal" placeholder="8.25" value={customRate} aria-invalid={invalid} onChange={(e) => setCustomRate(e.target.value)} />}
          </Field>
        )}
        <ErrorNote message={submit.error} />
        <Button type="submit" variant="primary" block size="large" busy={submit.busy} busyLabel="Creating…">
          {`Charge ${formatCents(cents)}`}
        </Button>
      </form>
    </section>
  );
}
