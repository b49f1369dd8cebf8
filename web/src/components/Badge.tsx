/** Small labels beside a value: a tone badge, a receipt's status, a chip for a scope or an event. */
import type { ReactNode } from 'react';
import { statusLabel } from '../lib/format.ts';
import './badge.css';

export type BadgeTone = 'ok' | 'bad' | 'warn' | 'pending' | 'info' | 'muted';

export function Badge(props: { tone: BadgeTone; title?: string; testId?: string; className?: string; children: ReactNode }) {
  return (
    <span className={`badge badge-${props.tone}${props.className === undefined ? '' : ` ${props.className}`}`} title={props.title} data-testid={props.testId}>
      {props.children}
    </span>
  );
}

function statusTone(status: string): BadgeTone {
  if (status === 'completed' || status === 'recipient_validated' || status === 'tx_mined' || status === 'checkout_success') return 'ok';
  if (status === 'failed' || status === 'tx_mismatch') return 'bad';
  if (status.startsWith('refund')) return 'warn';
  return 'pending';
}

/** A receipt status in the shop owner's words; the raw value in the title (and data-status) for whoever needs it. */
export function StatusBadge(props: { status: string; count?: number }) {
  const repeated = props.count !== undefined && props.count > 1;
  return (
    <span className={`badge badge-status badge-${statusTone(props.status)}`} title={props.status} data-status={props.status}>
      {statusLabel(props.status)}
      {repeated && <span className="badge-count"> ×{props.count}</span>}
    </span>
  );
}

/** A value from a closed set (a scope, an event type, a delivery status), set in monospace. */
export function Chip(props: { children: ReactNode }) {
  return <span className="chip">{props.children}</span>;
}

export function Chips(props: { values: readonly string[] }) {
  return (
    <p className="scopes">
      {props.values.map((v) => (
        <Chip key={v}>{v}</Chip>
      ))}
    </p>
  );
}
