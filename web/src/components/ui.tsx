/**
 * The admin app's shared pieces, in one import: page headers, buttons, tables, badges, notes and
 * form fields. Each lives in its own module with its own stylesheet; the colours, spacing and
 * fonts they use are the tokens of web/src/tokens.css, shared with the payment page.
 */
import { useState, type ReactNode } from 'react';
import { messageOf } from '../lib/http.ts';
import { Button } from './Button.tsx';

export { Link, ReceiptLink, receiptPath } from './Link.tsx';
export { Button, ButtonLink, buttonClass, type ButtonVariant } from './Button.tsx';
export { Table, Empty, type Column } from './Table.tsx';
export { Badge, Chip, Chips, StatusBadge, type BadgeTone } from './Badge.tsx';
export { Notice, ErrorNote, type NoticeKind } from './Notice.tsx';
export { Check, Field, FieldError, Fieldset, FormActions, StaticField } from './Field.tsx';

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

/** A card's heading with an action beside it (Refresh, Delete). */
export function SectionHead(props: { title: ReactNode; level?: 2 | 3; titleClassName?: string; children?: ReactNode }) {
  const Heading = props.level === 3 ? 'h3' : 'h2';
  return (
    <header className="sub-head">
      <Heading className={props.titleClassName}>{props.title}</Heading>
      {props.children}
    </header>
  );
}

export function Loading(props: { what?: string }) {
  return <p className="muted loading">Loading{props.what ? ` ${props.what}` : ''}…</p>;
}

/** Copies text to the clipboard, saying so; when the browser refuses, it asks for a manual copy. */
export function CopyButton(props: { text: string; label?: string }) {
  const [state, setState] = useState<'idle' | 'copied' | 'failed'>('idle');
  const [detail, setDetail] = useState('');
  return (
    <Button
      size="small"
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
    </Button>
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
