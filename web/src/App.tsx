import { useCallback, useEffect, useState, type ReactNode } from 'react';
import { auth, type Session } from './lib/api.ts';
import { ApiError, messageOf, setCsrfToken, whenSessionLost } from './lib/http.ts';
import { shortAddress } from './lib/format.ts';
import { useRoute } from './lib/router.ts';
import { Badge, Button, ErrorNote, Link, Loading } from './components/ui.tsx';
import { SignIn } from './pages/SignIn.tsx';
import { Overview } from './pages/Overview.tsx';
import { Terminal } from './pages/Terminal.tsx';
import { ReceiptList } from './pages/Receipts.tsx';
import { ReceiptView } from './pages/ReceiptDetail.tsx';
import { NewOrder } from './pages/NewOrder.tsx';
import { Inventory } from './pages/Inventory.tsx';
import { SplitPage } from './pages/Split.tsx';
import { ShopSettings } from './pages/Shop.tsx';
import { Keys } from './pages/Keys.tsx';
import { Webhooks } from './pages/Webhooks.tsx';
import { Users } from './pages/Users.tsx';
import { Devices } from './pages/Devices.tsx';
import { SweepBanner } from './components/SweepBanner.tsx';
import type { Role } from '../../src/contract/roles.ts';

type State =
  | { kind: 'loading' }
  | { kind: 'signed-out'; notice: string | null }
  | { kind: 'unreachable'; message: string }
  | { kind: 'signed-in'; session: Session };

/** `roles`: shown only to a session holding one of them. */
const NAV: { to: string; label: string; roles?: Role[] }[] = [
  { to: '', label: 'Overview' },
  { to: 'terminal', label: 'Terminal' },
  { to: 'receipts', label: 'Receipts' },
  { to: 'inventory', label: 'Inventory' },
  { to: 'split', label: 'Split' },
  { to: 'shop', label: 'Shop' },
  { to: 'keys', label: 'API keys' },
  { to: 'webhooks', label: 'Webhooks' },
  { to: 'users', label: 'Users', roles: ['superadmin'] },
  { to: 'devices', label: 'Devices', roles: ['admin', 'superadmin'] },
];

export function App() {
  const [state, setState] = useState<State>({ kind: 'loading' });

  const signedIn = useCallback((session: Session) => {
    setCsrfToken(session.csrfToken);
    setState({ kind: 'signed-in', session });
  }, []);

  const checkSession = useCallback(() => {
    setState({ kind: 'loading' });
    auth.me().then(signedIn, (err: unknown) => {
      if (err instanceof ApiError && err.status === 401) setState({ kind: 'signed-out', notice: null });
      else setState({ kind: 'unreachable', message: messageOf(err) });
    });
  }, [signedIn]);

  useEffect(() => {
    checkSession();
    whenSessionLost(() => {
      setCsrfToken(null);
      setState({ kind: 'signed-out', notice: 'Your session ended. Sign in again to continue.' });
    });
    return () => whenSessionLost(null);
  }, [checkSession]);

  if (state.kind === 'loading') {
    return (
      <Centered>
        <Loading />
      </Centered>
    );
  }
  if (state.kind === 'unreachable') {
    return (
      <Centered>
        <ErrorNote message={state.message} />
        <Button onClick={checkSession}>Try again</Button>
      </Centered>
    );
  }
  if (state.kind === 'signed-out') return <SignIn notice={state.notice} onSignedIn={signedIn} />;

  const signOut = async () => {
    try {
      await auth.logout();
    } catch (err) {
      // The server-side session may already be gone; the page forgets it either way.
      console.warn('sign-out request failed', err);
    }
    setCsrfToken(null);
    setState({ kind: 'signed-out', notice: 'You are signed out.' });
  };
  return <Shell session={state.session} onSignOut={() => void signOut()} />;
}

function Centered(props: { children: ReactNode }) {
  return <main className="centered">{props.children}</main>;
}

function Shell(props: { session: Session; onSignOut: () => void }) {
  const route = useRoute();
  const section = route[0] ?? '';
  const [menuOpen, setMenuOpen] = useState(false);
  useEffect(() => setMenuOpen(false), [section]);
  return (
    <div className="shell">
      <header className="topbar">
        <Link to="" className="brand">
          <span className="brand-mark" aria-hidden="true" />
          Splitline
        </Link>
        <button
          type="button"
          className="menu-toggle"
          aria-expanded={menuOpen}
          aria-controls="main-nav"
          onClick={() => setMenuOpen((o) => !o)}
        >
          Menu
        </button>
        <div className="account">
          <span className="wallet" title={props.session.wallet} data-testid="signed-in-wallet">
            {shortAddress(props.session.wallet)}
          </span>
          {props.session.roles.filter((r) => r !== 'owner').map((r) => (
            <Badge key={r} tone="info">
              {r}
            </Badge>
          ))}
          <Button size="small" variant="ghost" onClick={props.onSignOut}>
            Sign out
          </Button>
        </div>
      </header>
      <nav id="main-nav" className={`nav${menuOpen ? ' nav-open' : ''}`} aria-label="Sections">
        {NAV.filter((n) => n.roles === undefined || n.roles.some((r) => props.session.roles.includes(r))).map((n) => (
          <Link key={n.to} to={n.to} className="nav-link" aria-current={section === n.to ? 'page' : undefined}>
            {n.label}
          </Link>
        ))}
        <button type="button" className="nav-link nav-signout" onClick={props.onSignOut}>
          Sign out
        </button>
      </nav>
      <main className="content">
        <SweepBanner section={section} />
        <Page route={route} session={props.session} />
      </main>
    </div>
  );
}

function Page(props: { route: string[]; session: Session }) {
  const [section = '', sub] = props.route;
  switch (section) {
    case '':
      return <Overview />;
    case 'terminal':
      return <Terminal />;
    case 'receipts':
      if (sub === 'new') return <NewOrder />;
      if (sub !== undefined) return <ReceiptView id={sub} session={props.session} />;
      return <ReceiptList />;
    case 'inventory':
      return <Inventory />;
    case 'split':
      return <SplitPage session={props.session} />;
    case 'shop':
      return <ShopSettings />;
    case 'keys':
      return <Keys />;
    case 'webhooks':
      return <Webhooks />;
    case 'users':
      return <Users />;
    case 'devices':
      return <Devices session={props.session} />;
    default:
      return (
        <section>
          <h1>Page not found</h1>
          <p>
            There is no page here. <Link to="">Go to the overview</Link>.
          </p>
        </section>
      );
  }
}
