/**
 * A banner on every admin page while sweeps into the split wait: the deployer that pays their gas
 * is out of (or low on) ETH, or network fees are above MAX_FEE_GWEI. The money is safe at the
 * payment addresses meanwhile; receipts complete once it is swept.
 */
import { useEffect, useState } from 'react';
import { getSweepStatus } from '../lib/api.ts';
import type { SweepStatusAnswer } from '../../../src/contract/sweeps.ts';
import { Notice } from './Notice.tsx';

const ETH = 10n ** 18n;

function eth(wei: string): string {
  const w = BigInt(wei);
  const frac = ((w % ETH) * 10_000n) / ETH;
  return `${w / ETH}.${frac.toString().padStart(4, '0')} ETH`;
}

export function SweepBanner(props: { section: string }) {
  const [status, setStatus] = useState<SweepStatusAnswer | null>(null);
  useEffect(() => {
    let live = true;
    // Without an answer there is nothing to say: the banner is a warning, never a blocker.
    getSweepStatus().then(
      (s) => live && setStatus(s),
      () => live && setStatus(null),
    );
    return () => {
      live = false;
    };
  }, [props.section]);
  if (status === null) return null;
  const gas = status.waitingForGas > 0 || status.deployerLow;
  const fees = status.atFeeCap > 0;
  if (!gas && !fees) return null;
  return (
    <Notice kind="warn" testId="sweep-banner">
      {gas && (
        <p>
          {status.waitingForGas > 0
            ? `${status.waitingForGas} payment${status.waitingForGas === 1 ? '' : 's'} wait to be swept into splits: `
            : 'Sweeps into splits will soon wait: '}
          the deployer account that pays their gas is {status.waitingForGas > 0 ? 'out of' : 'low on'} ETH
          {status.deployerBalanceWei === null ? '' : ` (${eth(status.deployerBalanceWei)})`}. Fund it, or sweep a receipt from
          your own wallet on its page.
        </p>
      )}
      {fees && (
        <p>
          {status.atFeeCap === 1 ? '1 sweep waits' : `${status.atFeeCap} sweeps wait`} for network fees to fall below the service&apos;s cap
          {status.receiptsAtFeeCap.length > 0 ? ` (your receipts: ${status.receiptsAtFeeCap.join(', ')})` : ''}.
        </p>
      )}
      <p>The money is safe at the payment addresses; those receipts complete once it is swept.</p>
    </Notice>
  );
}
