/**
 * The receipt detail's "Sweep" card: what waits at the receipt's payment address (its token and
 * native ETH), and per non-zero amount a button that sends the sweep from the merchant's connected
 * wallet (GET /api/admin/receipts/:id/sweep answers the transaction; anyone may send it, and the
 * money can only reach the split). For ETH the worker leaves waiting as dust, a token it does not
 * sweep, or a deployment with no key to pay the sweeps' gas.
 */
import { Fragment, useState } from 'react';
import { receipts, type RefundToken } from '../lib/api.ts';
import { shiftDecimal } from '../lib/decimal.ts';
import { useLoad, useSubmit } from '../lib/hooks.ts';
import { ApiError, messageOf } from '../lib/http.ts';
import { chainName, connect, ensureChain, injectedWallet, sendTransaction, waitForMined, WalletError } from '../lib/wallet.ts';
import { Button, ErrorNote, Loading, Notice } from './ui.tsx';

type Answer = Awaited<ReturnType<typeof receipts.sweep>>;

interface Line {
  /** The query's token: undefined for the receipt's own, `eth` for native ETH. */
  query: 'eth' | undefined;
  symbol: string;
  decimals: number;
}

/** The route's refusals in words; anything else as the server said it. */
export function sweepProblem(err: unknown, symbol: string): string {
  if (err instanceof ApiError) {
    if (err.code === 'chain_unavailable') return `The chain cannot be read right now, so what waits in ${symbol} is unknown (${err.message}).`;
    if (err.code === 'invalid_input') return `${symbol} cannot be swept from this payment address: ${err.message}.`;
    if (err.code === 'not_found') return `Nothing can be swept: ${err.message}.`;
  }
  return `What waits in ${symbol} cannot be read: ${messageOf(err)}`;
}

type Read = { ok: true; answer: Answer } | { ok: false; problem: string };

async function read(receiptId: string, line: Line): Promise<Read> {
  try {
    return { ok: true, answer: await receipts.sweep(receiptId, line.query) };
  } catch (err) {
    return { ok: false, problem: sweepProblem(err, line.symbol) };
  }
}

export function ReceiptSweep(props: { receiptId: string; token: RefundToken }) {
  const lines: Line[] = [
    { query: undefined, symbol: props.token.symbol, decimals: props.token.decimals },
    { query: 'eth', symbol: 'ETH', decimals: 18 },
  ];
  const loaded = useLoad(() => Promise.all(lines.map((line) => read(props.receiptId, line))), [props.receiptId, props.token.symbol]);
  const submit = useSubmit();
  const [progress, setProgress] = useState<string | null>(null);
  const [swept, setSwept] = useState<{ what: string; hash: string } | null>(null);

  const amount = (line: Line, waiting: string) => `${shiftDecimal(waiting, -line.decimals)} ${line.symbol}`;

  /** Sends the answered sweep from the connected wallet, waits for it to be mined, then reads again. */
  const onSweep = (line: Line, answer: Answer) => {
    setSwept(null);
    void submit.run(async () => {
      try {
        const wallet = injectedWallet();
        if (wallet === null) throw new WalletError('No browser wallet was found. Open this page in a browser with a wallet to sweep.');
        setProgress('Connect your wallet…');
        const from = await connect(wallet);
        setProgress(`Switching your wallet to ${chainName(answer.transaction.chainId)}…`);
        await ensureChain(wallet, answer.transaction.chainId);
        setProgress(`Confirm the sweep of ${amount(line, answer.waiting)} in your wallet…`);
        const hash = await sendTransaction(wallet, from, answer.transaction, 'sweep');
        setSwept({ what: amount(line, answer.waiting), hash });
        setProgress('Waiting for the transaction to be mined…');
        await waitForMined(wallet, hash);
        loaded.reload();
      } finally {
        setProgress(null);
      }
    });
  };

  return (
    <div className="card" data-testid="receipt-sweep">
      <h2>Sweep</h2>
      {loaded.data === null ? (
        <>
          {loaded.loading && <Loading what="the payment address" />}
          <ErrorNote message={loaded.error} />
        </>
      ) : (
        <dl className="facts">
          {lines.map((line, i) => {
            const got = loaded.data![i]!;
            return (
              <Fragment key={line.symbol}>
                <dt>{line.symbol}</dt>
                <dd data-testid="sweep-line" data-token={line.query ?? 'receipt'}>
                  {got.ok ? (
                    <>
                      <span data-testid="sweep-waiting">{amount(line, got.answer.waiting)}</span> waiting
                      {BigInt(got.answer.waiting) > 0n && (
                        <>
                          {' '}
                          <Button size="small" disabled={submit.busy} onClick={() => onSweep(line, got.answer)}>
                            Sweep {line.symbol}
                          </Button>
                        </>
                      )}
                    </>
                  ) : (
                    <span className="muted small" data-testid="sweep-problem">
                      {got.problem}
                    </span>
                  )}
                </dd>
              </Fragment>
            );
          })}
        </dl>
      )}
      {progress !== null && <Notice kind="info">{progress}</Notice>}
      {swept !== null && (
        <Notice kind="ok" testId="sweep-sent">
          Sweep of {swept.what} sent: transaction <span className="mono break">{swept.hash}</span>.
        </Notice>
      )}
      <ErrorNote message={submit.error} detail={submit.errorDetail} testId="sweep-error" />
      <p className="muted small">
        What waits at this receipt&apos;s payment address. Sweep sends it into your split from your connected wallet,
        which pays the gas; the money can only reach the split. The service sweeps the receipt&apos;s token, and ETH worth
        its gas, by itself when it has a key to pay for gas.
      </p>
    </div>
  );
}
