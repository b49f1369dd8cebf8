/**
 * POSTs a webhook. The SSRF rule is applied to the address actually connected to (the lookup
 * hook), so a host that resolved publicly at registration but privately now is still refused.
 * Redirects are not followed.
 */
import { request as httpRequest } from 'node:http';
import { request as httpsRequest } from 'node:https';
import { lookup as dnsLookup, type LookupAddress } from 'node:dns';
import { isIP, type LookupFunction } from 'node:net';
import { isPrivateAddress } from './ssrf.ts';

export interface SendResult {
  statusCode: number | null;
  error: string | null;
  durationMs: number;
  ok: boolean;
}

function guardedLookup(allowPrivate: boolean): LookupFunction {
  return (hostname, options, callback) => {
    dnsLookup(hostname, { ...options, all: true }, (err, addresses) => {
      if (err) return callback(err, '', 4);
      const list = addresses as unknown as LookupAddress[];
      const bad = list.find((a) => !allowPrivate && isPrivateAddress(a.address));
      if (bad !== undefined) return callback(new Error(`refused private address ${bad.address}`), '', 4);
      if ((options as { all?: boolean }).all) return (callback as unknown as (e: null, a: LookupAddress[]) => void)(null, list);
      const first = list[0];
      if (first === undefined) return callback(new Error(`no address for ${hostname}`), '', 4);
      callback(null, first.address, first.family);
    });
  };
}

export async function postWebhook(
  url: string,
  headers: Record<string, string>,
  body: string,
  opts: { allowPrivate: boolean; timeoutMs: number },
): Promise<SendResult> {
  const started = performance.now();
  const u = new URL(url);
  const send = u.protocol === 'https:' ? httpsRequest : httpRequest;
  // Node connects to an IP literal without any lookup, so literals are judged here.
  const literal = u.hostname.replace(/^\[|\]$/g, '');
  if (isIP(literal) !== 0 && !opts.allowPrivate && isPrivateAddress(literal)) {
    return { statusCode: null, error: `refused private address ${literal}`, durationMs: 0, ok: false };
  }
  return new Promise<SendResult>((resolve) => {
    const done = (statusCode: number | null, error: string | null) =>
      resolve({
        statusCode,
        error,
        durationMs: Math.round(performance.now() - started),
        ok: statusCode !== null && statusCode >= 200 && statusCode < 300,
      });
    const req = send(
      u,
      {
        method: 'POST',
        headers: { ...headers, 'content-length': Buffer.byteLength(body), 'user-agent': 'Splitline-Webhooks/1' },
        lookup: guardedLookup(opts.allowPrivate),
        timeout: opts.timeoutMs,
      },
      (res) => {
        // Read (and cap) the body so the socket is freed; its content is not needed.
        let seen = 0;
        res.on('data', (chunk: Buffer) => {
          seen += chunk.length;
          if (seen > 64 * 1024) res.destroy();
        });
        res.on('end', () => done(res.statusCode ?? null, null));
        res.on('error', () => done(res.statusCode ?? null, null));
      },
    );
    req.on('timeout', () => req.destroy(new Error(`timed out after ${opts.timeoutMs} ms`)));
    req.on('error', (err) => done(null, err.message));
    req.end(body);
  });
}
