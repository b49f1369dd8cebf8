import { useState } from 'react';
import type { Session } from '../lib/api.ts';
import { messageOf } from '../lib/http.ts';
import { injectedWallet, signInWithWallet } from '../lib/wallet.ts';
import { ErrorNote, Notice } from '../components/ui.tsx';

export function SignIn(props: { notice: string | null; onSignedIn: (s: Session) => void }) {
  const [busy, setBusy] = useState(false);
  const [error, setError] = useState<string | null>(null);
  const [hasWallet, setHasWallet] = useState(() => injectedWallet() !== null);

  const signIn = async () => {
    setError(null);
    if (injectedWallet() === null) {
      setHasWallet(false);
      return;
    }
    setHasWallet(true);
    setBusy(true);
    try {
      props.onSignedIn(await signInWithWallet());
    } catch (err) {
      setError(messageOf(err));
    } finally {
      setBusy(false);
    }
  };

  return (
    <main className="signin">
      <div className="signin-card">
        <div className="brand brand-large">
          <span className="brand-mark" aria-hidden="true" />
          Splitline
        </div>
        <h1>Sign in to your shop</h1>
        <p className="muted">
          Connect the wallet that receives your payments. You sign a message to prove it is yours; it costs nothing
          and sends no transaction.
        </p>
        {props.notice !== null && <Notice>{props.notice}</Notice>}
        {!hasWallet && (
          <div className="note note-warn" role="alert" data-testid="no-wallet">
            <strong>No browser wallet found.</strong> Install a wallet extension such as MetaMask, Rabby or Coinbase
            Wallet (or open this page in your wallet app&apos;s browser), then reload this page.
          </div>
        )}
        <ErrorNote message={error} />
        <button type="button" className="btn btn-primary btn-block" onClick={signIn} disabled={busy}>
          {busy ? 'Waiting for your wallet…' : 'Sign in with wallet'}
        </button>
      </div>
    </main>
  );
}
