/**
 * The split's settlement on the Split page (GET /api/split/settlements, read with the session):
 * per recipient what its shares came to in the period, what it was paid, and what it accrued and
 * was paid since the split began; a chart of daily volume, in all or for one recipient; the
 * period's lines as CSV.
 */
import { useState } from 'react';
import { getSettlement, settlementCsvUrl, type Settlement } from '../lib/api.ts';
import { shiftDecimal } from '../lib/decimal.ts';
import { useLoad } from '../lib/hooks.ts';
import { Badge, ErrorNote, Field, Loading, Table, type Column } from '../components/ui.tsx';

const DAY_MS = 86_400_000;
/** The chart's widest span: older days of an "all time" period are summed in the report, not drawn. */
const CHART_DAYS = 60;
const PERIODS = [
  { value: '7', label: 'Last 7 days', days: 7 },
  { value: '30', label: 'Last 30 days', days: 30 },
  { value: 'all', label: 'Since the split began', days: null },
] as const;

const usdc = (units: string | bigint) => `${shiftDecimal(units.toString(), -6)} USDC`;
const utcDay = (ms: number) => new Date(ms).toISOString().slice(0, 10);

/** Per UTC day, the gross (recipient -1) or one recipient's shares, from the first day of the period or of the lines to the last. */
export function dailyVolume(s: Settlement, recipient: number, today: number): { day: string; units: bigint }[] {
  const byDay = new Map<string, bigint>();
  for (const l of s.lines) {
    const units = BigInt(recipient < 0 ? l.gross : (l.shares[recipient] ?? '0'));
    byDay.set(utcDay(l.timestamp), (byDay.get(utcDay(l.timestamp)) ?? 0n) + units);
  }
  const last = Math.max(today, ...s.lines.map((l) => l.timestamp));
  const first = Math.max(s.from > 0 ? s.from : Math.min(last, ...s.lines.map((l) => l.timestamp)), last - (CHART_DAYS - 1) * DAY_MS);
  const days: { day: string; units: bigint }[] = [];
  for (let t = Date.parse(utcDay(first)); t <= last; t += DAY_MS) days.push({ day: utcDay(t), units: byDay.get(utcDay(t)) ?? 0n });
  return days;
}

function VolumeChart(props: { days: { day: string; units: bigint }[]; what: string }) {
  const width = 600;
  const height = 140;
  const max = props.days.reduce((m, d) => (d.units > m ? d.units : m), 0n);
  const slot = width / Math.max(props.days.length, 1);
  return (
    <figure className="volume-chart" data-testid="volume-chart">
      <svg viewBox={`0 0 ${width} ${height + 18}`} role="img" aria-label={`Daily volume, ${props.what}`} preserveAspectRatio="none" width="100%">
        {props.days.map((d, i) => {
          // Bar heights in thousandths of the highest day, in bigint, then to pixels.
          const h = max === 0n ? 0 : (Number((d.units * 1000n) / max) / 1000) * height;
          return (
            <rect key={d.day} data-testid="volume-bar" data-day={d.day} data-units={d.units.toString()} x={i * slot + slot * 0.1} y={height - h} width={slot * 0.8} height={h} fill="currentColor">
              <title>{`${d.day}: ${usdc(d.units)}`}</title>
            </rect>
          );
        })}
        <line x1="0" y1={height} x2={width} y2={height} stroke="currentColor" strokeOpacity="0.3" />
      </svg>
      <figcaption className="muted small">
        {props.days.length > 0 && `${props.days[0]!.day} to ${props.days.at(-1)!.day} (UTC), ${props.what}; highest day ${usdc(max)}`}
      </figcaption>
    </figure>
  );
}

export function SettlementCard(props: { platform: string | null }) {
  const [period, setPeriod] = useState<(typeof PERIODS)[number]['value']>('30');
  const [recipient, setRecipient] = useState(-1);
  const days = PERIODS.find((p) => p.value === period)?.days ?? null;
  const from = days === null ? undefined : Date.parse(utcDay(Date.now())) - (days - 1) * DAY_MS;
  const loaded = useLoad(() => getSettlement({ from }), [from]);
  const s = loaded.data;
  return (
    <div className="card" data-testid="settlement">
      <h2>Settlement</h2>
      <div className="settlement-controls">
        <Field label="Period">
          {(id) => (
            <select id={id} value={period} onChange={(e) => setPeriod(e.target.value as typeof period)}>
              {PERIODS.map((p) => (
                <option key={p.value} value={p.value}>
                  {p.label}
                </option>
              ))}
            </select>
          )}
        </Field>
        <Field label="Chart">
          {(id) => (
            <select id={id} value={recipient} onChange={(e) => setRecipient(Number(e.target.value))}>
              <option value={-1}>All money received</option>
              {(s?.recipients ?? []).map((r, i) => (
                <option key={r.address} value={i}>
                  {r.platform ? `Platform (${r.address})` : r.address}
                </option>
              ))}
            </select>
          )}
        </Field>
      </div>
      {s === null ? (
        <>
          {loaded.loading && <Loading what="settlement" />}
          <ErrorNote message={loaded.error} />
        </>
      ) : (
        <>
          <VolumeChart days={dailyVolume(s, recipient, Date.now())} what={recipient < 0 ? 'all money received' : `the share of ${s.recipients[recipient]?.address ?? ''}`} />
          <dl className="facts">
            <dt>Received</dt>
            <dd data-testid="settlement-gross">{usdc(s.totals.gross)}</dd>
            <dt>Platform fee</dt>
            <dd data-testid="settlement-fee">{usdc(s.totals.platformFee)}</dd>
            <dt>Paid out</dt>
            <dd data-testid="settlement-released">{usdc(s.totals.released)}</dd>
          </dl>
          <Table
            columns={[
              recipientColumn(props.platform),
              { header: 'Share in the period', num: true, testId: 'settlement-share', cell: (r) => usdc(r.share) },
              { header: 'Paid in the period', num: true, testId: 'settlement-paid', cell: (r) => usdc(r.released) },
              { header: 'Accrued to date', num: true, testId: 'settlement-accrued', cell: (r) => usdc(r.accrued) },
              { header: 'Paid to date', num: true, testId: 'settlement-paid-to-date', cell: (r) => usdc(r.releasedToDate) },
            ]}
            rows={s.recipients}
            rowKey={(r) => r.address}
            rowData={(r) => ({ 'data-testid': 'settlement-row', 'data-address': r.address })}
          />
          <p className="muted small">
            {s.lines.length} transfers into the split. Each recipient's share of a transfer is what the contract owes it
            after that transfer less what it owed before, so the shares add up exactly to what the contract pays.{' '}
            <a href={settlementCsvUrl({ from })} download data-testid="settlement-csv">
              Download CSV
            </a>
          </p>
        </>
      )}
    </div>
  );
}

/** A split's recipient as a table column: the address, marked when it is the platform's. */
export function recipientColumn<T extends { address: string }>(platform: string | null | undefined): Column<T> {
  return {
    header: 'Recipient',
    cell: (r) => (
      <span className="mono break">
        {r.address}
        {r.address === platform?.toLowerCase() && <Badge tone="info">platform</Badge>}
      </span>
    ),
  };
}
