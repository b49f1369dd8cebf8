/**
 * The Split page's Balances card: what each version's split contract holds for each recipient and
 * what it released, with Pay out buttons. Receipts created under an earlier version still pay into
 * that version's contract, so its money is shown and paid out from there, not from the current one.
 */
import { useEffect, useState } from 'react';
import { encodeFunctionData, type Hex } from 'viem';
import { getSplitBalances, type SplitBalances } from '../lib/api.ts';
import { shiftDecimal } from '../lib/decimal.ts';
import { useLoad } from '../lib/hooks.ts';
import { Badge, Button, ErrorNote, FormActions, Loading, Notice, Table } from '../components/ui.tsx';
import { recipientColumn } from './Settlement.tsx';
import { chainName, connect, ensureChain, errorParts, injectedWallet, sendTransaction, WalletError } from '../lib/wallet.ts';

/** One version's contract and what it holds; the answer's top level is the current one's. */
type VersionBalances = SplitBalances['versions'][number];

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

/** How long the page watches for sent payouts to show up in the contract's numbers. */
const RELEASE_WATCH_MS = 90_000;

type Provider = NonNullable<ReturnType<typeof injectedWallet>>;

interface SentPayout {
  recipient: string;
  hash: string;
  releasedBefore: string;
}

/** One payout at a time across the card (the wallet confirms one transaction at a time); `version` says whose contract. */
type PayoutStep =
  | { kind: 'idle' }
  | { kind: 'busy'; version: number; recipients: string[]; what: string }
  | { kind: 'sent'; version: number; sent: SentPayout[] }
  | { kind: 'done'; version: number; message: string }
  | { kind: 'error'; version: number; message: string; detail: string | null };

/** Sends release(token, account) to the version's split from the connected wallet; the hash once broadcast. */
async function sendRelease(wallet: Provider, from: Hex, split: VersionBalances, account: string): Promise<string> {
  const data = encodeFunctionData({ abi: RELEASE_ABI, functionName: 'release', args: [split.token as Hex, account as Hex] });
  return sendTransaction(wallet, from, { to: split.address, data }, 'release');
}

/**
 * The current version always, with its full table even when empty; an earlier version only if its
 * contract ever received money (held now or released), since a merchant looks there for money to
 * pay out or already paid. Earlier versions that never received anything are only named.
 */
function arrange(b: SplitBalances): { shown: VersionBalances[]; empty: number[] } {
  const current = b.versions.find((v) => v.version === b.version) ?? b;
  const earlier = b.versions.filter((v) => v.version !== b.version);
  return {
    shown: [current, ...earlier.filter((v) => BigInt(v.totalReceived) > 0n)],
    empty: earlier.filter((v) => BigInt(v.totalReceived) === 0n).map((v) => v.version),
  };
}

/**
 * What each version's split contract holds for each recipient and what it released, with Pay out
 * buttons: the merchant's connected wallet (any wallet: the contract lets anyone call release) pays
 * the gas, and the money goes straight from that contract to the recipient, who never signs in.
 */
export function Balances(props: { chainId: number; platform: string | null }) {
  const loaded = useLoad(() => getSplitBalances());
  const [step, setStep] = useState<PayoutStep>({ kind: 'idle' });
  const { reload } = loaded;

  // After sending, watch the paying version's contract until every paid recipient's released amount moves.
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
        const paying = now?.versions.find((v) => v.version === step.version);
        const rows = step.sent.map((p) => ({ p, row: paying?.recipients.find((r) => r.address === p.recipient) }));
        if (rows.every(({ p, row }) => row !== undefined && row.released !== p.releasedBefore)) {
          const lines = rows.map(({ p, row }) => `${usdc(BigInt(row!.released) - BigInt(p.releasedBefore))} to ${p.recipient}`);
          setStep({ kind: 'done', version: step.version, message: `Paid out ${lines.join('; ')}.` });
          reload();
          return;
        }
        if (Date.now() > deadline) {
          const hashes = step.sent.map((p) => p.hash).join(', ');
          setStep({
            kind: 'error',
            version: step.version,
            message: `The payout (transaction ${hashes}) was sent but has not reached the split yet; reload the page in a moment.`,
            detail: null,
          });
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
  const { shown, empty } = arrange(b);

  /** One release per recipient from `split`, each confirmed in the wallet; the ones sent are watched even if a later one is refused. */
  async function payOut(split: VersionBalances, recipients: string[]) {
    const { version } = split;
    const sent: SentPayout[] = [];
    try {
      const wallet = injectedWallet();
      if (wallet === null) throw new WalletError('No browser wallet was found. Open this page in a browser with a wallet to pay recipients out.');
      setStep({ kind: 'busy', version, recipients, what: 'Connect your wallet…' });
      const from = await connect(wallet);
      setStep({ kind: 'busy', version, recipients, what: `Switching your wallet to ${chainName(props.chainId)}…` });
      await ensureChain(wallet, props.chainId);
      for (const [i, recipient] of recipients.entries()) {
        const of = recipients.length > 1 ? ` (${i + 1} of ${recipients.length})` : '';
        setStep({ kind: 'busy', version, recipients, what: `Confirm the payout to ${recipient} in your wallet${of}…` });
        const releasedBefore = split.recipients.find((r) => r.address === recipient)?.released ?? '0';
        sent.push({ recipient, hash: await sendRelease(wallet, from, split, recipient), releasedBefore });
      }
      setStep({ kind: 'sent', version, sent });
    } catch (err) {
      if (sent.length > 0) console.warn('a payout was not sent:', err);
      setStep(sent.length > 0 ? { kind: 'sent', version, sent } : { kind: 'error', version, ...errorParts(err) });
    }
  }

  return (
    <div className="card" data-testid="split-balances">
      <h2>Balances</h2>
      {shown.map((v) => (
        <VersionSection
          key={v.version}
          split={v}
          current={v.version === b.version}
          platform={props.platform}
          step={step.kind !== 'idle' && step.version === v.version ? step : null}
          busy={step.kind === 'busy' || step.kind === 'sent'}
          onPayOut={(recipients) => void payOut(v, recipients)}
        />
      ))}
      {empty.length > 0 && (
        <p className="muted small" data-testid="empty-versions">
          {empty.length === 1 ? `Version ${empty[0]}` : `Versions ${empty.join(', ')}`}: nothing was ever paid into{' '}
          {empty.length === 1 ? 'its contract' : 'their contracts'}, so there is nothing to pay out.
        </p>
      )}
      <p className="muted small">
        Pay out sends the contract's release function from your connected wallet, which pays the gas; the money goes
        straight from the split to the recipient, never to the wallet that sends it. Receipts created before a new
        version keep paying into their version's contract, so its recipients are paid out from there. Recipients can
        also release their own share from their own wallets, and automatic payouts (below) do it for them.
      </p>
    </div>
  );
}

/** One version's contract: its totals, each recipient's line with its Pay out button, and the payout under way from it. */
function VersionSection(props: {
  split: VersionBalances;
  current: boolean;
  platform: string | null;
  /** The payout step when it concerns this version's contract. */
  step: Exclude<PayoutStep, { kind: 'idle' }> | null;
  /** A payout is under way from some version: the wallet confirms one at a time. */
  busy: boolean;
  onPayOut: (recipients: string[]) => void;
}) {
  const { split: v, step } = props;
  const owed = v.recipients.filter((r) => BigInt(r.releasable) > 0n).map((r) => r.address);
  const payingOut = (address: string) => step?.kind === 'busy' && step.recipients.includes(address);
  return (
    <section className="balance-version" data-testid="balance-version" data-version={v.version}>
      <h3>
        Version {v.version}
        {props.current && <Badge tone="info">current</Badge>}
      </h3>
      <dl className="facts">
        <dt>Contract</dt>
        <dd className="mono break" data-testid="split-contract">
          {v.address}
        </dd>
        <dt>Received</dt>
        <dd data-testid="split-received">{usdc(v.totalReceived)}</dd>
        <dt>Released</dt>
        <dd data-testid="split-released">{usdc(v.totalReleased)}</dd>
        <dt>Held now</dt>
        <dd data-testid="split-held">{usdc(v.balance)}</dd>
      </dl>
      <Table
        columns={[
          recipientColumn(props.platform),
          { header: 'Held for them', num: true, testId: 'balance-releasable', cell: (r) => usdc(r.releasable) },
          { header: 'Released', num: true, testId: 'balance-released', cell: (r) => usdc(r.released) },
          {
            header: 'Pay out',
            hiddenHeader: true,
            actions: true,
            cell: (r) =>
              BigInt(r.releasable) > 0n && (
                <Button size="small" disabled={props.busy} onClick={() => props.onPayOut([r.address])}>
                  {payingOut(r.address) ? 'Paying out…' : 'Pay out'}
                </Button>
              ),
          },
        ]}
        rows={v.recipients}
        rowKey={(r) => r.address}
        rowData={(r) => ({ 'data-testid': 'balance-row', 'data-address': r.address })}
      />
      {owed.length > 1 && (
        <FormActions>
          <Button variant="primary" disabled={props.busy} onClick={() => props.onPayOut(owed)}>
            Pay out all ({owed.length})
          </Button>
        </FormActions>
      )}
      {step?.kind === 'busy' && <Notice kind="info">{step.what}</Notice>}
      {step?.kind === 'sent' && (
        <Notice kind="info">
          Payout sent (<span className="mono break">{step.sent.map((p) => p.hash).join(', ')}</span>); waiting for the split to pay it out…
        </Notice>
      )}
      {step?.kind === 'done' && <Notice kind="ok">{step.message}</Notice>}
      <ErrorNote message={step?.kind === 'error' ? step.message : null} detail={step?.kind === 'error' ? step.detail : null} />
    </section>
  );
}
