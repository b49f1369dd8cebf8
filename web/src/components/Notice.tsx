/** Notes in a tone: what happened, what to watch out for, what went wrong. */
import type { ReactNode } from 'react';
import { ErrorText } from './ErrorText.tsx';
import './notice.css';

export type NoticeKind = 'ok' | 'info' | 'warn' | 'error';

type DataAttributes = { [name: `data-${string}`]: string | undefined };

/**
 * A note in a tone. Its role is `alert` for an error and `status` otherwise, unless `role` says
 * another (or `null`, none: a warning that sits on the page from the start announces nothing).
 */
export function Notice(
  props: { kind?: NoticeKind; role?: 'alert' | 'status' | 'note' | null; testId?: string; small?: boolean; children: ReactNode } & DataAttributes,
) {
  const { kind = 'info', role, testId, small = false, children, ...data } = props;
  return (
    <div
      {...data}
      className={`note note-${kind}${small ? ' small' : ''}`}
      role={role === null ? undefined : (role ?? (kind === 'error' ? 'alert' : 'status'))}
      data-testid={testId}
    >
      {children}
    </div>
  );
}

/** An error in one sentence; `detail` (a wallet's full error, say) is folded underneath. */
export function ErrorNote(props: { message: string | null; detail?: string | null; testId?: string }) {
  if (props.message === null) return null;
  return (
    <Notice kind="error" testId={props.testId}>
      <ErrorText message={props.message} detail={props.detail} />
    </Notice>
  );
}
