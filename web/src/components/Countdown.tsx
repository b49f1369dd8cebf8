/** The time left to pay a receipt, ticking every second; shared by the payment page and the admin cards. */
import { useEffect, useState } from 'react';

const pad = (n: number) => String(n).padStart(2, '0');

/** `mm:ss` under an hour, `h:mm:ss` under a day, `N d h h` beyond (expiries reach 30 days). */
export function formatCountdown(ms: number): string {
  const total = Math.max(0, Math.ceil(ms / 1000));
  const days = Math.floor(total / 86_400);
  const hours = Math.floor((total % 86_400) / 3600);
  const minutes = Math.floor((total % 3600) / 60);
  const seconds = total % 60;
  if (days > 0) return `${days} d ${hours} h`;
  if (hours > 0) return `${hours}:${pad(minutes)}:${pad(seconds)}`;
  return `${pad(minutes)}:${pad(seconds)}`;
}

/** The clock, re-read every `everyMs` while `running`; a stopped clock keeps its last reading. */
export function useNow(running: boolean, everyMs = 1000): number {
  const [now, setNow] = useState(() => Date.now());
  useEffect(() => {
    if (!running) return;
    setNow(Date.now());
    const timer = window.setInterval(() => setNow(Date.now()), everyMs);
    return () => window.clearInterval(timer);
  }, [running, everyMs]);
  return now;
}

/**
 * "Pay within 59:58". Past the time it says so, but the server alone decides that a receipt has
 * expired (the buyer's clock may be wrong, and money that still arrives is credited).
 */
export function Countdown(props: { expiresAt: number; className?: string }) {
  const now = useNow(true);
  const left = props.expiresAt - now;
  return (
    <p className={props.className ?? 'countdown'} data-testid="countdown" data-expires-at={props.expiresAt}>
      {left > 0 ? (
        <>
          Pay within <time dateTime={new Date(props.expiresAt).toISOString()}>{formatCountdown(left)}</time>
        </>
      ) : (
        'Time is up: this receipt is expiring.'
      )}
    </p>
  );
}
