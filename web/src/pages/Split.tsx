import { useEffect, useState, type FormEvent } from 'react';
import { getPlatform, payouts as payoutsApi, split, splitTransactionsCsvUrl, splitVersions, type PayoutSettingsAnswer, type Platform, type Session, type SplitConfig, type SplitVersion } from '../lib/api.ts';
import { bpsToPercent, percentToBps } from '../lib/decimal.ts';
import { ADDRESS, formatDateTime } from '../lib/format.ts';
import { useLoad, useSubmit } from '../lib/hooks.ts';
import { Badge, Button, buttonClass, ErrorNote, Field, FormActions, Loading, Notice, PageHeader, Table } from '../components/ui.tsx';
import { SettlementCard } from './Settlement.tsx';
import { Balances } from './SplitBalances.tsx';

interface Row {
  key: number;
  address: string;
  percent: string;
}

let rowKey = 0;

type Errors = Record<string, string>;

/** Checks the editable rows plus the locked platform line; the recipients to send, or the problems. */
export function validateSplit(rows: Row[], platform: Platform, splitAddress: string) {
  const errors: Errors = {};
  const seen = new Set<string>();
  const platformAddress = platform.platformRecipientAddress?.toLowerCase() ?? null;
  if (platformAddress !== null) seen.add(platformAddress);
  let sum = platformAddress === null ? 0 : platform.platformFeeBps;
  const recipients = rows.map((r) => {
    const address = r.address.trim();
    if (!ADDRESS.test(address)) errors[`address-${r.key}`] = 'A 0x address with 40 hex digits';
    else if (seen.has(address.toLowerCase())) errors[`address-${r.key}`] = 'This address is already in the split';
    seen.add(address.toLowerCase());
    const bps = percentToBps(r.percent);
    if (bps === null || bps === 0) errors[`percent-${r.key}`] = 'A share above 0, at most two decimals';
    sum += bps ?? 0;
    return { address, sharesBps: bps ?? 0 };
  });
  if (rows.length === 0) errors.rows = 'Add at least one recipient';
  if (sum !== 10_000) errors.sum = `The shares add up to ${bpsToPercent(sum)}%; they must add up to exactly 100.00%`;
  if (splitAddress.trim() !== '' && !ADDRESS.test(splitAddress.trim())) errors.splitAddress = 'A 0x address with 40 hex digits';
  if (platformAddress !== null) recipients.push({ address: platformAddress, sharesBps: platform.platformFeeBps });
  return { errors, recipients, sum };
}

export function SplitPage(props: { session: Session }) {
  const loaded = useLoad(() => Promise.all([split.get(), getPlatform()]));
  const [stored, setStored] = useState<SplitConfig | null>(null);
  const [idempotent, setIdempotent] = useState(false);

  useEffect(() => {
    if (loaded.data !== null) setStored(loaded.data[0].split);
  }, [loaded.data]);

  if (loaded.data === null || stored === null) {
    return (
      <section>
        <PageHeader title="Split" />
        <ErrorNote message={loaded.error} />
        {loaded.loading && <Loading what="split" />}
      </section>
    );
  }
  const platform = loaded.data[1];
  const configured = stored.recipients.length > 0;
  return (
    <section>
      <PageHeader
        title="Split"
        subtitle="Every payment is divided on-chain among these recipients. To change them, make a new version: new receipts pay into it, existing ones keep theirs. You pay recipients out from here, by hand or automatically, and they never need to sign in."
        actions={
          configured ? (
            <a className={buttonClass({})} href={splitTransactionsCsvUrl()} download data-testid="split-transactions-csv">
              Export transactions CSV
            </a>
          ) : undefined
        }
      />
      {configured ? (
        <>
          <StoredSplit split={stored} platform={platform} idempotent={idempotent} onChecked={(s) => {
            setStored(s);
            setIdempotent(true);
          }} />
          <Versions
            key={`versions-${stored.version ?? 0}-${stored.address ?? ''}`}
            session={props.session}
            platform={platform}
            onMade={(v) => {
              setStored({ address: v.address, recipients: v.recipients, version: v.version });
              setIdempotent(false);
            }}
          />
          {stored.address !== null && <Balances key={stored.address} chainId={platform.chainId} platform={platform.platformRecipientAddress} />}
          {stored.address !== null && <AutoPayouts />}
          {stored.address !== null && <SettlementCard platform={platform.platformRecipientAddress} />}
        </>
      ) : (
        <SplitEditor session={props.session} platform={platform} onSaved={(s, again) => {
          setStored(s);
          setIdempotent(again);
        }} />
      )}
    </section>
  );
}

function StoredSplit(props: { split: SplitConfig; platform: Platform; idempotent: boolean; onChecked: (s: SplitConfig) => void }) {
  const submit = useSubmit();
  const platform = props.platform.platformRecipientAddress?.toLowerCase();
  return (
    <div className="card" data-testid="stored-split">
      <h2>Your split{props.split.version !== null && props.split.version > 1 ? ` (version ${props.split.version})` : ''}</h2>
      <dl className="facts">
        <dt>Contract</dt>
        {props.split.address === null ? <dd className="muted">Not deployed yet</dd> : <dd className="mono break">{props.split.address}</dd>}
      </dl>
      <Table
        columns={[
          {
            header: 'Recipient',
            className: 'mono break',
            cell: (r) => (
              <>
                {r.address}
                {r.address.toLowerCase() === platform && <Badge tone="info">platform</Badge>}
              </>
            ),
          },
          { header: 'Share', num: true, testId: 'stored-share', cell: (r) => `${bpsToPercent(r.sharesBps)}%` },
        ]}
        rows={props.split.recipients}
        rowKey={(r) => r.address}
        cards={false}
      />
      {props.idempotent ? (
        <Notice kind="info">
          <span data-testid="split-idempotent">
            The split was already set: the server kept the stored configuration unchanged (the call is idempotent).
          </span>
        </Notice>
      ) : (
        <p className="muted small">
          Setting up the split is idempotent: sending it again returns this same configuration, so a retried request
          can never change who gets paid.
        </p>
      )}
      <ErrorNote message={submit.error} />
      <Button
        disabled={submit.busy}
        onClick={() =>
          void submit.run(async () => {
            const res = await split.deploy({ recipients: props.split.recipients });
            props.onChecked(res.split);
          })
        }
      >
        Send again to check
      </Button>
    </div>
  );
}

function SplitEditor(props: {
  session: Session;
  platform: Platform;
  onSaved: (s: SplitConfig, idempotent: boolean) => void;
  /** A new version of an existing split rather than the first one. */
  version?: { onMade: (v: SplitVersion, idempotent: boolean) => void; onCancel: () => void };
}) {
  const { platform } = props;
  const fee = platform.platformRecipientAddress === null ? 0 : platform.platformFeeBps;
  const [rows, setRows] = useState<Row[]>(() => [{ key: ++rowKey, address: props.session.wallet, percent: bpsToPercent(10_000 - fee) }]);
  const [splitAddress, setSplitAddress] = useState('');
  const [errors, setErrors] = useState<Errors>({});
  const submit = useSubmit();
  const live = validateSplit(rows, platform, splitAddress);

  const setRow = (key: number, patch: Partial<Row>) => setRows(rows.map((r) => (r.key === key ? { ...r, ...patch } : r)));

  const onSubmit = (e: FormEvent) => {
    e.preventDefault();
    const checked = validateSplit(rows, platform, splitAddress);
    setErrors(checked.errors);
    if (Object.keys(checked.errors).length > 0) {
      submit.setError(checked.errors.sum ?? checked.errors.rows ?? 'Some fields need attention.');
      return;
    }
    void submit.run(async () => {
      const body = splitAddress.trim() === '' ? { recipients: checked.recipients } : { recipients: checked.recipients, splitAddress: splitAddress.trim() };
      if (props.version !== undefined) {
        const made = await splitVersions.create(body);
        props.version.onMade(made.version, made.idempotent === true);
        return;
      }
      const res = await split.deploy(body);
      props.onSaved(res.split, res.idempotent === true);
    });
  };

  return (
    <form className="card form" onSubmit={onSubmit} noValidate data-testid={props.version === undefined ? 'split-editor' : 'version-editor'}>
      <h2>{props.version === undefined ? 'Recipients' : 'New version'}</h2>
      {props.version !== undefined && (
        <p className="muted small">
          Receipts created from now on pay into the new version's contract. Receipts created before keep paying into the split they were created
          under, and its recipients stay paid from it.
        </p>
      )}
      {platform.platformRecipientAddress === null && (
        <Notice kind="warn">This deployment has no platform recipient: set PLATFORM_RECIPIENT_ADDRESS on the server. Splits and orders are refused until it has one.</Notice>
      )}
      {rows.map((r, i) => (
        <div className="row-editor row-editor-split" key={r.key} data-testid="recipient-row">
          <Field label={`Recipient ${i + 1}`} error={errors[`address-${r.key}`]}>
            {(id, invalid) => (
              <input id={id} name={`address-${i}`} className="mono" value={r.address} placeholder="0x…" aria-invalid={invalid} onChange={(e) => setRow(r.key, { address: e.target.value })} />
            )}
          </Field>
          <Field label="Share (%)" error={errors[`percent-${r.key}`]}>
            {(id, invalid) => (
              <input id={id} name={`percent-${i}`} inputMode="decimal" value={r.percent} placeholder="50.00" aria-invalid={invalid} onChange={(e) => setRow(r.key, { percent: e.target.value })} />
            )}
          </Field>
          <Button size="small" variant="ghost" className="row-remove" disabled={rows.length === 1} onClick={() => setRows(rows.filter((x) => x.key !== r.key))}>
            Remove
          </Button>
        </div>
      ))}
      {platform.platformRecipientAddress !== null && (
        <div className="row-editor row-editor-split locked" data-testid="platform-row">
          <Field label="Platform fee recipient" hint="Set by the platform; it cannot be changed">
            {(id) => <input id={id} className="mono" value={platform.platformRecipientAddress ?? ''} readOnly disabled />}
          </Field>
          <Field label="Share (%)">{(id) => <input id={id} value={bpsToPercent(platform.platformFeeBps)} readOnly disabled />}</Field>
          <span className="row-remove lock" aria-hidden="true">
            Locked
          </span>
        </div>
      )}
      <Button size="small" onClick={() => setRows([...rows, { key: ++rowKey, address: '', percent: '' }])}>
        Add recipient
      </Button>
      <div className={`sum ${live.sum === 10_000 ? 'sum-ok' : 'sum-bad'}`} data-testid="split-sum">
        Total {bpsToPercent(live.sum)}%{live.sum === 10_000 ? ' ✓' : ' — must be 100.00%'}
      </div>
      <details>
        <summary>Use a split contract you already deployed</summary>
        <Field label="Split contract address" hint="Leave empty to have the service deploy one" error={errors.splitAddress}>
          {(id, invalid) => <input id={id} className="mono" value={splitAddress} aria-invalid={invalid} onChange={(e) => setSplitAddress(e.target.value)} />}
        </Field>
      </details>
      <ErrorNote message={submit.error} />
      <FormActions>
        <Button type="submit" variant="primary" busy={submit.busy} busyLabel="Saving…">
          {props.version === undefined ? 'Save split' : 'Make new version'}
        </Button>
        {props.version !== undefined && (
          <Button variant="ghost" onClick={props.version.onCancel}>
            Cancel
          </Button>
        )}
      </FormActions>
    </form>
  );
}

/** Every version of the split, newest first, and the editor for a new one. */
function Versions(props: { session: Session; platform: Platform; onMade: (v: SplitVersion) => void }) {
  const loaded = useLoad(() => splitVersions.list());
  const [editing, setEditing] = useState(false);
  const [same, setSame] = useState(false);
  const platform = props.platform.platformRecipientAddress?.toLowerCase();
  const versions = loaded.data?.versions ?? [];
  return (
    <>
      <div className="card" data-testid="split-versions">
        <h2>Versions</h2>
        <ErrorNote message={loaded.error} />
        {loaded.loading && loaded.data === null && <Loading what="versions" />}
        {loaded.data !== null && (
          <Table
            columns={[
              {
                header: 'Version',
                testId: 'version-number',
                cell: (v: SplitVersion) => (
                  <>
                    {v.version}
                    {v.current && <Badge tone="info">current</Badge>}
                  </>
                ),
              },
              { header: 'Contract', className: 'mono break', cell: (v: SplitVersion) => v.address ?? 'Not deployed yet' },
              {
                header: 'Recipients',
                className: 'mono break',
                cell: (v: SplitVersion) =>
                  v.recipients.map((r) => `${r.address}${r.address === platform ? ' (platform)' : ''} ${bpsToPercent(r.sharesBps)}%`).join(', '),
              },
              { header: 'New receipts from', cell: (v: SplitVersion) => (v.startsAt === 0 ? 'the start' : formatDateTime(v.startsAt)) },
            ]}
            rows={versions}
            rowKey={(v) => String(v.version)}
          />
        )}
        {same && (
          <Notice kind="info">
            <span data-testid="version-idempotent">These are the current version's recipients already: nothing was deployed or changed.</span>
          </Notice>
        )}
        {!editing && (
          <Button onClick={() => setEditing(true)} disabled={loaded.data === null}>
            New version
          </Button>
        )}
      </div>
      {editing && (
        <SplitEditor
          session={props.session}
          platform={props.platform}
          onSaved={() => undefined}
          version={{
            onCancel: () => setEditing(false),
            onMade: (v, idempotent) => {
              setEditing(false);
              setSame(idempotent);
              if (idempotent) loaded.reload();
              else props.onMade(v);
            },
          }}
        />
      )}
    </>
  );
}

/** Automatic payouts: a threshold and an interval; the service releases with its own gas. */
function AutoPayouts() {
  const loaded = useLoad(() => payoutsApi.get());
  const submit = useSubmit();
  const [threshold, setThreshold] = useState('');
  const [hours, setHours] = useState('');
  const [errors, setErrors] = useState<Errors>({});
  const [answer, setAnswer] = useState<PayoutSettingsAnswer | null>(null);

  useEffect(() => {
    if (loaded.data === null) return;
    setAnswer(loaded.data);
    setThreshold(loaded.data.payouts === null ? '' : String(loaded.data.payouts.payoutThresholdUsd));
    setHours(loaded.data.payouts === null ? '24' : String(loaded.data.payouts.payoutIntervalHours));
  }, [loaded.data]);

  if (answer === null) {
    return (
      <div className="card" data-testid="auto-payouts">
        <h2>Automatic payouts</h2>
        {loaded.loading && <Loading what="payout settings" />}
        <ErrorNote message={loaded.error} />
      </div>
    );
  }
  const onSubmit = (e: FormEvent) => {
    e.preventDefault();
    const found: Errors = {};
    const usd = Number(threshold.trim());
    if (!/^\d+(\.\d{1,2})?$/.test(threshold.trim()) || !(usd > 0)) found.threshold = 'An amount above 0, at most two decimals';
    const every = Number(hours.trim());
    if (!/^\d+$/.test(hours.trim()) || every < 1 || every > 8760) found.hours = 'Whole hours from 1 to 8760';
    setErrors(found);
    if (Object.keys(found).length > 0) return;
    void submit.run(async () => setAnswer(await payoutsApi.set({ payoutThresholdUsd: usd, payoutIntervalHours: every })));
  };
  const p = answer.payouts;
  return (
    <form className="card form" onSubmit={onSubmit} noValidate data-testid="auto-payouts">
      <h2>Automatic payouts</h2>
      {!answer.automatic && (
        <Notice kind="warn">This service has no account to pay the gas (SPLIT_DEPLOYER_KEY), so nothing is paid out automatically; use Pay out above.</Notice>
      )}
      <p className="muted small" data-testid="auto-payouts-state">
        {p === null
          ? 'Off: recipients are paid when someone presses Pay out or releases from their own wallet.'
          : `On: every ${p.payoutIntervalHours} h at most, each recipient holding ${p.payoutThresholdUsd} USDC or more is paid out, with the service paying the gas.` +
            (p.lastRunAt === null ? '' : ` Last run ${formatDateTime(p.lastRunAt)}.`)}
      </p>
      <Field label="Pay out from (USD)" hint="A recipient is paid once it is owed at least this much" error={errors.threshold}>
        {(id, invalid) => <input id={id} inputMode="decimal" value={threshold} placeholder="25.00" aria-invalid={invalid} onChange={(e) => setThreshold(e.target.value)} />}
      </Field>
      <Field label="At most every (hours)" error={errors.hours}>
        {(id, invalid) => <input id={id} inputMode="numeric" value={hours} aria-invalid={invalid} onChange={(e) => setHours(e.target.value)} />}
      </Field>
      <ErrorNote message={submit.error} />
      <FormActions>
        <Button type="submit" variant="primary" busy={submit.busy} busyLabel="Saving…">
          {p === null ? 'Turn on' : 'Save'}
        </Button>
        {p !== null && (
          <Button disabled={submit.busy} onClick={() => void submit.run(async () => setAnswer(await payoutsApi.off()))}>
            Turn off
          </Button>
        )}
      </FormActions>
    </form>
  );
}
