/**
 * Data tables drawn from columns and rows. On a phone a `cards` table turns each row into a small
 * card of "label: value" lines, the labels being the column headers.
 */
import type { ReactNode } from 'react';
import { Link } from './Link.tsx';
import './table.css';

type DataAttributes = { [name: `data-${string}`]: string | boolean | undefined };

export interface Column<T> {
  /** The header, and the cell's label on a phone. */
  header: string;
  /** A header only screen readers hear (an actions column): no heading text, no label on a phone. */
  hiddenHeader?: boolean;
  cell: (row: T) => ReactNode;
  /** Amounts, right-aligned in tabular figures. */
  num?: boolean;
  /** The row's buttons, at the right end. */
  actions?: boolean;
  /** Classes of each cell (mono, small, truncate, break). */
  className?: string;
  /** The data-testid of each cell. */
  testId?: string;
  /** The row's own page: the cell's content links there, its id set in monospace; null for no link. */
  link?: (row: T) => string | null;
}

export interface TableProps<T> {
  columns: readonly Column<T>[];
  rows: readonly T[];
  rowKey: (row: T, index: number) => string | number;
  /** data-testid and data-* attributes of a row. */
  rowData?: (row: T) => DataAttributes;
  /** Shown instead of the table when there are no rows. */
  empty?: ReactNode;
  /** Rows as cards on a phone (the default); false for short two-column tables. */
  cards?: boolean;
  /** False for a table without a header row (line items, refunds). */
  head?: boolean;
  /** The footer row's cells (a total). */
  foot?: ReactNode;
  className?: string;
  testId?: string;
}

function cellClass<T>(c: Column<T>): string | undefined {
  const classes = [c.num ? 'num' : null, c.actions ? 'actions' : null, c.className ?? null].filter((x) => x !== null);
  return classes.length === 0 ? undefined : classes.join(' ');
}

export function Table<T>(props: TableProps<T>) {
  const { columns, rows } = props;
  if (rows.length === 0 && props.empty !== undefined) return <Empty>{props.empty}</Empty>;
  const className = ['table', props.cards === false ? null : 'table-cards', props.className ?? null].filter((x) => x !== null).join(' ');
  return (
    <table className={className} data-testid={props.testId}>
      {props.head !== false && (
        <thead>
          <tr>
            {columns.map((c) =>
              c.hiddenHeader ? (
                <th key={c.header} className={c.actions ? 'actions' : undefined} aria-label={c.header} />
              ) : (
                <th key={c.header} className={c.num ? 'num' : undefined}>
                  {c.header}
                </th>
              ),
            )}
          </tr>
        </thead>
      )}
      <tbody>
        {rows.map((row, i) => (
          <tr key={props.rowKey(row, i)} {...props.rowData?.(row)}>
            {columns.map((c) => {
              const to = c.link?.(row) ?? null;
              return (
                <td key={c.header} data-label={c.hiddenHeader ? undefined : c.header} className={cellClass(c)} data-testid={c.testId}>
                  {to === null ? (
                    c.cell(row)
                  ) : (
                    <Link to={to} className="mono">
                      {c.cell(row)}
                    </Link>
                  )}
                </td>
              );
            })}
          </tr>
        ))}
      </tbody>
      {props.foot !== undefined && (
        <tfoot>
          <tr>{props.foot}</tr>
        </tfoot>
      )}
    </table>
  );
}

/** Where a list has nothing to show yet. */
export function Empty(props: { children: ReactNode }) {
  return <p className="empty">{props.children}</p>;
}
