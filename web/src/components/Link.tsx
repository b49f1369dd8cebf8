import type { ReactNode } from 'react';
import { hrefOf, navigate } from '../lib/router.ts';

/** A link to a page of the app: a real href (new tab, copy link), and in-app navigation on a plain click. */
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

/** The route of a receipt's page. */
export function receiptPath(id: string): string {
  return `receipts/${encodeURIComponent(id)}`;
}

/** A receipt's id, linking to its page. */
export function ReceiptLink(props: { id: string }) {
  return (
    <Link to={receiptPath(props.id)} className="mono">
      {props.id}
    </Link>
  );
}
