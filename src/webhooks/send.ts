/**
 * POSTs a webhook. The SSRF rule is applied to the address actually connected to (the lookup
 * hook), so a host that resolved publicly at registration but privately now is still refused.
 * Redirects are not followed. One deadline covers the whole attempt (lookup, connect, TLS, the
 * answer), so an endpoint that trickles bytes cannot hold an attempt open past it.
 */
import { request as httpRequest } from 'node:http';
import { request as httpsRequest } from 'node:https';
import { lookup as dnsLookup, type LookupAddress } from 'node:dns';
import { isIP, type LookupFunction } from 'node:net';
import { NO_ADDRESS, PRIVATE_ADDRESS, rawDeliveryError, rawFromError, rawTimeout } from './errors.ts';
import { isRefusedAddress, type UrlPolicy } from './ssrf.ts';

export interface SendResult {
  statusCode: number | null;
  /** Why there was no answer, as `CODE: message` (src/webhooks/errors.ts); null when one came. */
  error: string | null;
  durationMs: number;
  ok: boolean;
}

/** An answer's body is read (so the socket is freed) up to this much; its content is not needed. */
const BODY_CAP = 64 * 1024;

class CodedError extends Error {
  constructor(
    readonly code: string,
    message: string,
  ) {
    super(message);
  }
}

function guardedLookup(policy: UrlPolicy): LookupFunction {
  return (hostname, options, callback) => {
    dnsLookup(hostname, { ...options, all: true }, (err, addresses) => {
      if (err) return callback(err, '', 4);
      const list = addresses;
      const bad = list.find((a) => isRefusedAddress(a.address, policy));
      if (bad !== undefined) return callback(new CodedError(PRIVATE_ADDRESS, `refused private address ${bad.address}`), '', 4);
      if ((options as { all?: boolean }).all) return (callback as unknown as (e: null, a: LookupAddress[]) => void)(null, list);
      const first = list[0];
      if (first === undefined) return callback(new CodedError(NO_ADDRESS, `no address for ${hostname}`), '', 4);
      callback(null, first.address, first.family);
    });
  };
}

export async function postWebhook(
  url: string,
  headers: Record<string, string>,
  body: string,
  opts: UrlPolicy & { timeoutMs: number },
): Promise<SendResult> {
  const started = performance.now();
  const u = new URL(url);
  const send = u.protocol === 'https:' ? httpsRequest : httpRequest;
  // Node connects to an IP literal without any lookup, so literals are judged here.
  const literal = u.hostname.replace(/^\[|\]$/g, '');
  if (isIP(literal) !== 0 && isRefusedAddress(literal, opts)) {
    return { statusCode: null, error: rawDeliveryError(PRIVATE_ADDRESS, `refused private address ${literal}`), durationMs: 0, ok: false };
  }
  return new Promise<SendResult>((resolve) => {
    let settled = false;
    const done = (statusCode: number | null, error: string | null) => {
      if (settled) return;
      settled = true;
      clearTimeout(deadline);
      resolve({
        statusCode,
        error,
        durationMs: Math.round(performance.now() - started),
        ok: statusCode !== null && statusCode >= 200 && statusCode < 300,
      });
    };
    const req = send(
      u,
      {
        method: 'POST',
        headers: { ...headers, 'content-length': Buffer.byteLength(body), 'user-agent': 'Splitline-Webhooks/1' },
        lookup: guardedLookup(opts),
        // A connection of its own per attempt: a pooled keep-alive socket that the endpoint has
        // meanwhile closed would fail the attempt with ECONNRESET through no fault of the endpoint.
        agent: false,
      },
      (res) => {
        const status = res.statusCode ?? null;
        let seen = 0;
        res.on('data', (chunk: Buffer) => {
          seen += chunk.length;
          if (seen > BODY_CAP) {
            // The status is what counts; the rest of a long answer is not waited for.
            done(status, null);
            res.destroy();
          }
        });
        res.on('end', () => done(status, null));
        res.on('error', () => done(status, null));
        res.on('close', () => done(status, null));
      },
    );
    const deadline = setTimeout(() => {
      done(null, rawTimeout(opts.timeoutMs));
      req.destroy();
    }, opts.timeoutMs);
    req.on('error', (err) => done(null, rawFromError(err)));
    req.end(body);
  });
}
