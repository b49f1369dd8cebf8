/**
 * Why a webhook attempt got no answer, in words a merchant can act on. The raw form is stored with
 * the attempt (`CODE: message`, the code being Node's own, such as ECONNREFUSED or
 * DEPTH_ZERO_SELF_SIGNED_CERT, or one of ours below), and the sentence is derived when the attempt
 * is shown, so older attempts and changed wording need no migration.
 */

/** Our own codes, for failures Node does not name. */
export const TIMEOUT = 'TIMEOUT';
export const PRIVATE_ADDRESS = 'PRIVATE_ADDRESS';
export const NO_ADDRESS = 'NO_ADDRESS';
/** An error carrying no code at all. */
export const UNKNOWN = 'ERROR';

const SENTENCES: Record<string, string> = {
  ECONNREFUSED: 'Connection refused: nothing is listening at that address and port',
  ECONNRESET: 'The endpoint closed the connection before answering',
  EPIPE: 'The endpoint closed the connection while the request was being sent',
  ENOTFOUND: 'The host name does not resolve (DNS: no such host)',
  EAI_AGAIN: 'The host name could not be resolved just now (DNS lookup failed temporarily)',
  EHOSTUNREACH: "The endpoint's host cannot be reached from here",
  ENETUNREACH: "The endpoint's network cannot be reached from here",
  ETIMEDOUT: 'Connecting to the endpoint timed out',
  CERT_HAS_EXPIRED: "The endpoint's certificate has expired",
  CERT_NOT_YET_VALID: "The endpoint's certificate is not valid yet (check the server's clock)",
  DEPTH_ZERO_SELF_SIGNED_CERT: "The endpoint's certificate is not trusted (self-signed)",
  SELF_SIGNED_CERT_IN_CHAIN: "The endpoint's certificate is not trusted (its chain ends in a self-signed certificate)",
  UNABLE_TO_VERIFY_LEAF_SIGNATURE:
    "The endpoint's certificate cannot be verified: the server does not send its intermediate certificate",
  UNABLE_TO_GET_ISSUER_CERT_LOCALLY: "The endpoint's certificate is not trusted (issued by an unknown authority)",
  UNABLE_TO_GET_ISSUER_CERT: "The endpoint's certificate is not trusted (issued by an unknown authority)",
  CERT_REVOKED: "The endpoint's certificate has been revoked",
  CERT_SIGNATURE_FAILURE: "The endpoint's certificate has an invalid signature",
  ERR_TLS_CERT_ALTNAME_INVALID: "The endpoint's certificate is for another host name",
  EPROTO: 'The TLS handshake failed (is the endpoint serving https on that port?)',
  ERR_SSL_WRONG_VERSION_NUMBER: 'The TLS handshake failed (is the endpoint serving https on that port?)',
  [PRIVATE_ADDRESS]: 'Refused: the host resolves to a private or loopback address, which webhooks may not reach',
  [NO_ADDRESS]: 'The host name resolves to no address',
};

/** The raw form of a failed attempt, as stored: `CODE: message`. */
export function rawDeliveryError(code: string, message: string): string {
  return `${code}: ${message}`;
}

/** The raw form of an error raised while sending (Node's code when it has one). */
export function rawFromError(err: unknown): string {
  const e = err as { code?: unknown; message?: unknown } | null;
  const message = typeof e?.message === 'string' && e.message !== '' ? e.message : String(err);
  const code = typeof e?.code === 'string' && /^[A-Z][A-Z0-9_]*$/.test(e.code) ? e.code : UNKNOWN;
  return rawDeliveryError(code, message);
}

/** The raw form of an attempt that ran out of time. */
export function rawTimeout(timeoutMs: number): string {
  return rawDeliveryError(TIMEOUT, `timed out after ${timeoutMs} ms`);
}

function seconds(ms: number): string {
  const s = ms / 1000;
  return `${Number.isInteger(s) ? s : s.toFixed(1)} s`;
}

export interface ExplainedError {
  /** Node's error code (or TIMEOUT, PRIVATE_ADDRESS, ERROR); null when none can be told. */
  code: string | null;
  /** A sentence for the merchant. */
  text: string;
}

/**
 * The code and sentence of a stored error. Attempts stored before codes were kept carry Node's
 * message alone ("connect ECONNREFUSED 127.0.0.1:9"); a known code inside it is still found.
 */
export function explainDeliveryError(raw: string | null): ExplainedError | null {
  if (raw === null || raw === '') return null;
  const tagged = /^([A-Z][A-Z0-9_]*): ([\s\S]*)$/.exec(raw);
  let code = tagged?.[1] ?? null;
  const message = tagged?.[2] ?? raw;
  if (code === null || code === UNKNOWN) {
    const found = Object.keys(SENTENCES).find((c) => new RegExp(`\\b${c}\\b`).test(message));
    if (found !== undefined) code = found;
    else if (/timed out after \d+ ms/.test(message)) code = TIMEOUT;
    else if (/private address/.test(message)) code = PRIVATE_ADDRESS;
  }
  if (code === TIMEOUT) {
    const ms = /after (\d+) ms/.exec(message);
    return { code, text: ms ? `Timed out after ${seconds(Number(ms[1]))}` : 'Timed out' };
  }
  if (code !== null && code.startsWith('HPE_')) return { code, text: "The endpoint's answer was not valid HTTP" };
  const sentence = code === null ? undefined : SENTENCES[code];
  return { code: code === UNKNOWN ? null : code, text: sentence ?? message };
}
