/**
 * Status messages to the page that frames this one. They go only to origins the shop allows,
 * each with its own explicit targetOrigin, so the browser delivers a message only when the
 * parent really is that origin; never to "*".
 */
export const MESSAGE_TYPE = 'splitline:payment';

export interface PaymentMessage {
  type: typeof MESSAGE_TYPE;
  status: string;
  receiptId: string;
}

export function isFramed(): boolean {
  return window.parent !== window;
}

/**
 * The allowed origins worth posting to. Where the browser names the parent's origin
 * (location.ancestorOrigins: Chromium, Safari), only a matching allowed origin is kept, which
 * spares the console an error per non-matching origin; elsewhere every allowed origin is tried
 * and the browser drops the ones that do not match.
 */
export function targetOrigins(allowed: readonly string[]): string[] {
  const ancestors = (window.location as Location & { ancestorOrigins?: DOMStringList }).ancestorOrigins;
  const parent = ancestors !== undefined && ancestors.length > 0 ? ancestors.item(0) : null;
  return parent === null ? [...allowed] : allowed.filter((o) => o === parent);
}

export function postStatus(allowed: readonly string[], receiptId: string, status: string): number {
  if (!isFramed()) return 0;
  const message: PaymentMessage = { type: MESSAGE_TYPE, status, receiptId };
  const targets = targetOrigins(allowed);
  for (const origin of targets) window.parent.postMessage(message, origin);
  return targets.length;
}
