/** Buttons, and links drawn as buttons: one look per purpose, and a busy state that says what is happening. */
import type { ButtonHTMLAttributes, ReactNode } from 'react';
import { Link } from './Link.tsx';
import './button.css';

/** secondary: the default; primary: the one action a screen is for; danger: it cannot be undone. */
export type ButtonVariant = 'secondary' | 'primary' | 'danger' | 'danger-ghost' | 'ghost';

export interface ButtonLook {
  variant?: ButtonVariant;
  size?: 'small' | 'large';
  /** As wide as its container. */
  block?: boolean;
  className?: string;
}

export function buttonClass(look: ButtonLook): string {
  const classes = ['btn'];
  if (look.variant !== undefined && look.variant !== 'secondary') classes.push(`btn-${look.variant}`);
  if (look.size !== undefined) classes.push(`btn-${look.size}`);
  if (look.block === true) classes.push('btn-block');
  if (look.className !== undefined) classes.push(look.className);
  return classes.join(' ');
}

export type ButtonProps = ButtonLook &
  Omit<ButtonHTMLAttributes<HTMLButtonElement>, 'className'> & {
    /** While true the button is disabled and, given `busyLabel`, says that instead of its label. */
    busy?: boolean;
    busyLabel?: ReactNode;
  };

/** A <button>, type="button" unless told otherwise (a form's submit button says type="submit"). */
export function Button(props: ButtonProps) {
  const { variant, size, block, className, busy = false, busyLabel, type = 'button', disabled, children, ...rest } = props;
  return (
    <button {...rest} type={type} className={buttonClass({ variant, size, block, className })} disabled={disabled === true || busy} aria-busy={busy || undefined}>
      {busy && busyLabel !== undefined ? busyLabel : children}
    </button>
  );
}

/** A link to another page of the app that looks like a button. */
export function ButtonLink(props: ButtonLook & { to: string; children: ReactNode }) {
  const { to, children, ...look } = props;
  return (
    <Link to={to} className={buttonClass(look)}>
      {children}
    </Link>
  );
}
