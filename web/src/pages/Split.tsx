import { useEffect, useState, type FormEvent } from 'react';
import { encodeFunctionData, type Hex } from 'viem';
import { getPlatform, getSplitBalances, split, type Platform, type Session, type SplitBalances, type SplitConfig } from '../lib/api.ts';
import { bpsToPercent, percentToBps, shiftDecimal } from '../lib/decimal.ts';
import { ADDRESS, TX_HASH } from '../lib/format.ts';
import { useLoad, useSubmit } from '../lib/hooks.ts';
import { Badge, Button, ErrorNote, Field, FormActions, Loading, Notice, PageHeader, Table } from '../components/ui.tsx';
import { ask, chainName, connect, ensureChain, errorParts, injectedWallet, WalletError } from '../lib/wallet.ts';

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
        subtitle="Every payment is divided on-chain among these recipients. Shares are set once; each recipient withdraws its own funds from the split contract."
      />
      {configured ? (
        <>
          <StoredSplit split={stored} platform={platform} idempotent={idempotent} onChecked={(s) => {
            setStored(s);
            setIdempotent(true);
          }} />
          {stored.address !== null && <Balances key={stored.address} chainId={platform.chainId} platform={platform.platformRecipientAddress} />}
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
      <h2>Your split</h2>
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

function SplitEditor(props: { session: Session; platform: Platform; onSaved: (s: SplitConfig, idempotent: boolean) => void }) {
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
      const res = await split.deploy(body);
      props.onSaved(res.split, res.idempotent === true);
    });
  };

  return (
    <form className="card form" onSubmit={onSubmit} noValidate>
      <h2>Recipients</h2>
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
          Save split
        </Button>
      </FormActions>
    </form>
  );
}

/** The service takes USDC (6 decimals); the balances are its base units. */
const usdc = (units: string | bigint) => `${shiftDecimal(units.toString(), -6)} USDC`;

/** PaymentSplitter's ERC-20 release: pays `account` what it is due; anyone may send it. */
const RELEASE_ABI = [
  {
    type: 'function',
    name: 'release',
    stateMutability: 'nonpayable',
    inputs: [
      { name: 'token', type: 'address' },
      { name: 'account', type: 'address' },
    ],
    outputs: [],
  },
] as const;

/** How long the page watches for a sent release to show up in the contract's numbers. */
const RELEASE_WATCH_MS = 90_000;

type Provider = NonNullable<ReturnType<typeof injectedWallet>>;

type ReleaseStep =
  | { kind: 'idle' }
  | { kind: 'busy'; recipient: string; what: string }
  | { kind: 'sent'; recipient: string; hash: string; releasedBefore: string }
  | { kind: 'done'; message: string }
  | { kind: 'error'; message: string; detail: string | null };

/** Sends release(token, account) to the split from the connected wallet; the hash once broadcast. */
async function sendRelease(wallet: Provider, from: Hex, b: SplitBalances, account: string): Promise<string> {
  const data = encodeFunctionData({ abi: RELEASE_ABI, functionName: 'release', args: [b.token as Hex, account as Hex] });
  const hash = await ask<unknown>(wallet, 'release', 'eth_sendTransaction', [{ from, to: b.address, data, value: '0x0' }]);
  if (typeof hash !== 'string' || !TX_HASH.test(hash)) throw new WalletError('The wallet returned no transaction hash.');
  return hash;
}

/**
 * What the split contract holds for each recipient and what it released, with a Release button
 * that a recipient sends from its own wallet: the money goes straight from the contract to it.
 */
function Balances(props: { chainId: number; platform: string | null }) {
  const loaded = useLoad(() => getSplitBalances());
  const [step, setStep] = useState<ReleaseStep>({ kind: 'idle' });
  const { reload } = loaded;

  // After sending, watch the contract until the recipient's released amount moves.
  useEffect(() => {
    if (step.kind !== 'sent') return;
    let live = true;
    const deadline = Date.now() + RELEASE_WATCH_MS;
    const watch = async () => {
      while (live) {
        await new Promise((resolve) => setTimeout(resolve, 1000));
        // A read that fails is tried again on the next turn, until the deadline.
        const now = await getSplitBalances().catch((err: unknown) => {
          console.warn('reading the split balances failed:', err);
          return null;
        });
        if (!live) return;
        const row = now?.recipients.find((r) => r.address === step.recipient);
        if (row !== undefined && row.released !== step.releasedBefore) {
          const paid = BigInt(row.released) - BigInt(step.releasedBefore);
          setStep({ kind: 'done', message: `Released ${usdc(paid)} to ${row.address}.` });
          reload();
          return;
        }
        if (Date.now() > deadline) {
          setStep({ kind: 'error', message: `The release (transaction ${step.hash}) was sent but has not reached the split yet; reload the page in a moment.`, detail: null });
          return;
        }
      }
    };
    void watch();
    return () => {
      live = false;
    };
  }, [step, reload]);

  if (loaded.data === null) {
    return (
      <div className="card" data-testid="split-balances">
        <h2>Balances</h2>
        {loaded.loading && <Loading what="balances" />}
        <ErrorNote message={loaded.error === null ? null : `The balances cannot be read right now: ${loaded.error}`} />
      </div>
    );
  }
  const b = loaded.data;
  const busy = step.kind === 'busy' || step.kind === 'sent';

  async function release(recipient: string) {
    const releasedBefore = b.recipients.find((r) => r.address === recipient)?.released ?? '0';
    try {
      const wallet = injectedWallet();
      if (wallet === null) throw new WalletError(`No browser wallet was found. Open this page with the wallet of ${recipient} to release its funds.`);
      setStep({ kind: 'busy', recipient, what: 'Connect your wallet…' });
      const from = await connect(wallet);
      if (from.toLowerCase() !== recipient) {
        throw new WalletError(`Your wallet is connected as ${from.toLowerCase()}. Switch it to ${recipient} to release that recipient's funds.`);
      }
      setStep({ kind: 'busy', recipient, what: `Switching your wallet to ${chainName(props.chainId)}…` });
      await ensureChain(wallet, props.chainId);
      setStep({ kind: 'busy', recipient, what: 'Confirm the release in your wallet…' });
      const hash = await sendRelease(wallet, from, b, recipient);
      setStep({ kind: 'sent', recipient, hash, releasedBefore });
    } catch (err) {
      setStep({ kind: 'error', ...errorParts(err) });
    }
  }

  return (
    <div className="card" data-testid="split-balances">
      <h2>Balances</h2>
      <dl className="facts">
        <dt>Received</dt>
        <dd data-testid="split-received">{usdc(b.totalReceived)}</dd>
        <dt>Released</dt>
        <dd data-testid="split-released">{usdc(b.totalReleased)}</dd>
        <dt>Held now</dt>
        <dd data-testid="split-held">{usdc(b.balance)}</dd>
      </dl>
      <Table
        columns={[
          {
            header: 'Recipient',
            cell: (r) => (
              <span className="mono break">
                {r.address}
                {r.address === props.platform?.toLowerCase() && <Badge tone="info">platform</Badge>}
              </span>
            ),
          },
          { header: 'Held for them', num: true, testId: 'balance-releasable', cell: (r) => usdc(r.releasable) },
          { header: 'Released', num: true, testId: 'balance-released', cell: (r) => usdc(r.released) },
          {
            header: 'Release',
            hiddenHeader: true,
            actions: true,
            cell: (r) =>
              BigInt(r.releasable) > 0n && (
                <Button size="small" disabled={busy} onClick={() => void release(r.address)}>
                  {step.kind === 'busy' && step.recipient === r.address ? 'Releasing…' : 'Release'}
                </Button>
              ),
          },
        ]}
        rows={b.recipients}
        rowKey={(r) => r.address}
        rowData={(r) => ({ 'data-testid': 'balance-row', 'data-address': r.address })}
      />
      {step.kind === 'busy' && <Notice kind="info">{step.what}</Notice>}
      {step.kind === 'sent' && (
        <Notice kind="info">
          Release sent (<span className="mono break">{step.hash}</span>); waiting for the split to pay it out…
        </Notice>
      )}
      {step.kind === 'done' && <Notice kind="ok">{step.message}</Notice>}
      <ErrorNote message={step.kind === 'error' ? step.message : null} detail={step.kind === 'error' ? step.detail : null} />
      <p className="muted small">
        Each recipient withdraws its own share with the contract's release function, from its own wallet; the money goes
        straight from the split to that recipient. Connect the recipient's wallet, then press Release on its line.
      </p>
    </div>
  );
}
