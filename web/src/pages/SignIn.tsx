import { useEffect, useState } from 'react';
import type { Session } from '../lib/api.ts';
import { chainName, devChain, errorParts, injectedWallet, signInWithWallet, type DevChainInfo } from '../lib/wallet.ts';
import { Button, ErrorNote, Notice, Secret } from '../components/ui.tsx';

export function SignIn(props: { notice: string | null; onSignedIn: (s: Session) => void }) {
  const [step, setStep] = useState<string | null>(null);
  const [error, setError] = useState<{ message: string; detail: string | null } | null>(null);
  const [hasWallet, setHasWallet] = useState(() => injectedWallet() !== null);
  const dev = useDevChain();

  const signIn = async () => {
    setError(null);
    if (injectedWallet() === null) {
      setHasWallet(false);
      return;
    }
    setHasWallet(true);
    setStep('Connect your wallet…');
    try {
      const session = await signInWithWallet((s, chainId) => {
        if (s === 'switch' && chainId !== undefined) setStep(`Switching your wallet to ${chainName(chainId)}…`);
        else if (s === 'sign') setStep('Sign the message in your wallet…');
      });
      props.onSignedIn(session);
    } catch (err) {
      setError(errorParts(err));
    } finally {
      setStep(null);
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
          <Notice kind="warn" role="alert" testId="no-wallet">
            <strong>No browser wallet found.</strong> Install a wallet extension such as MetaMask, Rabby or Coinbase
            Wallet (or open this page in your wallet app&apos;s browser), then reload this page.
          </Notice>
        )}
        {step !== null && (
          <p className="step" role="status" data-testid="signin-step">
            {step}
          </p>
        )}
        <ErrorNote message={error?.message ?? null} detail={error?.detail} testId="signin-error" />
        <Button variant="primary" block onClick={() => void signIn()} busy={step !== null} busyLabel="Waiting for your wallet…">
          Sign in with wallet
        </Button>
        {dev !== null && <DevChainHelp dev={dev} />}
      </div>
    </main>
  );
}

/** The dev chain's details, when this server runs one (GET /dev/chain answers only then). */
function useDevChain(): DevChainInfo | null {
  const [dev, setDev] = useState<DevChainInfo | null>(null);
  useEffect(() => {
    let live = true;
    devChain().then(
      (info) => {
        if (live) setDev(info);
      },
      (err: unknown) => {
        // Not a dev-chain server (404), or it did not answer: the page simply shows no dev help.
        console.info('no dev chain on this server:', err instanceof Error ? err.message : String(err));
      },
    );
    return () => {
      live = false;
    };
  }, []);
  return dev;
}

/** How a newcomer gets a wallet onto the dev chain: its network details and a funded test account. */
function DevChainHelp(props: { dev: DevChainInfo }) {
  const { dev } = props;
  const account = dev.testAccount ?? null;
  return (
    <section className="dev-chain" aria-labelledby="dev-chain-title" data-testid="dev-chain">
      <h2 id="dev-chain-title">Trying Splitline on the dev chain</h2>
      <p className="muted small">
        This server runs its own test chain. Signing in switches your wallet to it (and adds it if the wallet does not
        know it yet); you can also add it by hand:
      </p>
      <dl className="facts dev-chain-facts">
        <dt>Network</dt>
        <dd data-testid="dev-chain-name">{chainName(dev.chainId)}</dd>
        <dt>Chain id</dt>
        <dd className="mono" data-testid="dev-chain-id">
          {dev.chainId}
        </dd>
      </dl>
      <Secret label="RPC URL" value={dev.rpcUrl} testId="dev-chain-rpc" />
      {account !== null && (
        <>
          <p className="muted small">
            To sign in and pay without money of your own, import this funded test account into your wallet (it holds
            test ETH and test USDC):
          </p>
          <Secret label="Test account address" value={account.address} testId="dev-account-address" />
          <Secret label="Test account private key" value={account.privateKey} testId="dev-account-key" />
          <Notice kind="warn" small role="note" testId="dev-test-only">
            <strong>Test only, never real money.</strong> This key is public: every Ethereum developer tool ships it, and
            anyone can take what is sent to it on a real network. Use it on this dev chain only, ideally in a separate
            wallet profile.
          </Notice>
        </>
      )}
    </section>
  );
}
