/** What each receipt status means to the buyer looking at the payment page. */

/** Statuses after which nothing more will happen on this page. */
export const FINAL = new Set(['completed', 'refunded']);
/** The buyer's transaction is on chain and being checked. */
export const IN_FLIGHT = new Set(['tx_mined', 'recipient_validated']);
/** Tracking statuses and the initial ones: the receipt waits for a payment. */
export const UNPAID = new Set(['pending', 'generated', 'link_opened', 'buyer_logged_in', 'checkout_initialized']);

export type Tone = 'wait' | 'progress' | 'ok' | 'bad';

export function describeStatus(status: string): { tone: Tone; title: string; detail: string } {
  switch (status) {
    case 'tx_mined':
      return { tone: 'progress', title: 'Transaction mined', detail: 'Checking that it pays this receipt…' };
    case 'recipient_validated':
      return { tone: 'progress', title: 'Payment received', detail: 'Waiting for the network to confirm it…' };
    case 'completed':
      return { tone: 'ok', title: 'Paid', detail: 'The payment is confirmed. Thank you!' };
    case 'refunded':
      return { tone: 'ok', title: 'Refunded', detail: 'The merchant refunded this receipt.' };
    case 'tx_mismatch':
      return {
        tone: 'bad',
        title: 'That transaction did not pay this receipt',
        detail:
          'It sent the wrong token, to the wrong address, or too little, so the receipt is still unpaid. ' +
          'Pay the exact amount below, or contact the merchant about the transaction you sent.',
      };
    case 'failed':
      return {
        tone: 'bad',
        title: 'The transaction failed',
        detail: 'It was reverted on chain, so no tokens moved. Check your balance and try again.',
      };
    default:
      return { tone: 'wait', title: 'Awaiting payment', detail: 'Pay with a browser wallet, or scan the code with a mobile wallet.' };
  }
}

export function chainName(chainId: number): string {
  if (chainId === 8453) return 'Base';
  if (chainId === 84532) return 'Base Sepolia';
  if (chainId === 31337) return 'Splitline dev chain';
  return `chain ${chainId}`;
}
