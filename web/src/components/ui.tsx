import { useId, useState, type ReactNode } from 'react';
import { messageOf } from '../lib/http.ts';
import { hrefOf, navigate } from '../lib/router.ts';
import { statusLabel } from '../lib/format.ts';
import { ErrorText } from './ErrorText.tsx';

export function Link(props: { to: string; className?: string; children: ReactNode; 'aria-current'?: 'page' | undefined }) {
  return (
    <a
      href={hrefOf(props.to)}
      className={props.className}
      aria-current={props['aria-current']}
      onClick={(e) => {
        if (e.button !== 0 || e.metaKey || e.ctrlKey || e.shiftKey || e.altKey) return;
        e.preventDefault();
        navigate(props.to);
      }}
    >
      {props.children}
    </a>
  );
}

export function PageHeader(props: { title: string; subtitle?: ReactNode; actions?: ReactNode }) {
  return (
    <header className="page-header">
      <div>
        <h1>{props.title}</h1>
        {props.subtitle !== undefined && <p className="muted">{props.subtitle}</p>}
      </div>
      {props.actions !== undefined && <div className="page-actions">{props.actions}</div>}
    </header>
  );
}

/** An error in one sentence; `detail` (a wallet's full error, say) is folded underneath. */
export function ErrorNote(props: { message: string | null; detail?: string | null; testId?: string }) {
  if (props.message === null) return null;
  return (
    <div className="note note-error" role="alert" data-testid={props.testId}>
      <ErrorText message={props.message} detail={props.detail} />
    </div>
  );
}

export function Notice(props: { kind?: 'ok' | 'info' | 'warn'; children: ReactNode }) {
  return (
    <div className={`note note-${props.kind ?? 'info'}`} role="status">
      {props.children}
    </div>
  );
}

export function Loading(props: { what?: string }) {
  return <p className="muted loading">Loading{props.what ? ` ${props.what}` : ''}…</p>;
}

/** A labelled form control; `error` is shown under it and marks the control invalid. */
export function Field(props: { label: string; hint?: ReactNode; error?: string | null; children: (id: string, invalid: boolean) => ReactNode }) {
  const id = useId();
  const invalid = props.error !== undefined && props.error !== null;
  return (
    <div className={`field${invalid ? ' field-invalid' : ''}`}>
      <label htmlFor={id}>{props.label}</label>
      {props.children(id, invalid)}
      {invalid ? (
        <span className="field-error">{props.error}</span>
      ) : (
        props.hint !== undefined && <span className="field-hint">{props.hint}</span>
      )}
    </div>
  );
}

/** A receipt status in the shop owner's words; the raw value in the title (and data-status) for whoever needs it. */
export function StatusBadge(props: { status: string; count?: number }) {
  const tone =
    props.status === 'completed' || props.status === 'recipient_validated' || props.status === 'tx_mined' || props.status === 'checkout_success'
      ? 'ok'
      : props.status === 'failed' || props.status === 'tx_mismatch'
        ? 'bad'
        : props.status.startsWith('refund')
          ? 'warn'
          : 'pending';
  const repeated = props.count !== undefined && props.count > 1;
  return (
    <span className={`badge badge-status badge-${tone}`} title={props.status} data-status={props.status}>
      {statusLabel(props.status)}
      {repeated && <span className="badge-count"> ×{props.count}</span>}
    </span>
  );
}

/** Copies text to the clipboard, saying so; when the browser refuses, it asks for a manual copy. */
export function CopyButton(props: { text: string; label?: string }) {
  const [state, setState] = useState<'idle' | 'copied' | 'failed'>('idle');
  const [detail, setDetail] = useState('');
  return (
    <button
      type="button"
      className="btn btn-small"
      title={state === 'failed' ? `Copy failed (${detail}); select the text and copy it` : undefined}
      onClick={() => {
        navigator.clipboard.writeText(props.text).then(
          () => {
            setState('copied');
            window.setTimeout(() => setState('idle'), 2000);
          },
          (err: unknown) => {
            setDetail(messageOf(err));
            setState('failed');
          },
        );
      }}
    >
      {state === 'copied' ? 'Copied' : state === 'failed' ? 'Select & copy' : (props.label ?? 'Copy')}
    </button>
  );
}

/** A value shown in full, selectable, with a copy button. */
export function Secret(props: { label: string; value: string; testId?: string }) {
  return (
    <div className="secret">
      <span className="secret-label">{props.label}</span>
      <code className="secret-value" data-testid={props.testId}>
        {props.value}
      </code>
      <CopyButton text={props.value} />
    </div>
  );
}
