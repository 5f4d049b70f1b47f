import http from 'node:http';
import https from 'node:https';
import { guardedLookup } from './url-guard';

export interface SendResult {
  statusCode: number | null;
  /** A transport failure or timeout; null when an answer arrived. */
  error: string | null;
  retryAfter: string | null;
  durationMs: number;
}

/** Most of an answer body we read (and discard): enough to keep the connection healthy, no more. */
const MAX_ANSWER_BYTES = 64 * 1024;

/**
 * POSTs one delivery. Node's http client rather than fetch: it takes a `lookup`, so the SSRF guard
 * runs on the address actually connected to (unless private destinations are allowed). The whole
 * exchange (connect, send, answer) must finish within `timeoutMs`; redirects are not followed.
 */
export function send(
  url: string,
  body: string,
  headers: Record<string, string>,
  opts: { timeoutMs: number; allowPrivate: boolean; signal: AbortSignal },
): Promise<SendResult> {
  const started = performance.now();
  const done = (r: Omit<SendResult, 'durationMs'>): SendResult => ({
    ...r,
    durationMs: Math.round(performance.now() - started),
  });
  return new Promise((resolve) => {
    const target = new URL(url);
    const client = target.protocol === 'https:' ? https : http;
    const signal = AbortSignal.any([opts.signal, AbortSignal.timeout(opts.timeoutMs)]);
    const req = client.request(
      target,
      {
        method: 'POST',
        headers: {
          ...headers,
          'content-type': 'application/json',
          'content-length': Buffer.byteLength(body),
        },
        signal,
        agent: false,
        ...(opts.allowPrivate ? {} : { lookup: guardedLookup as never }),
      },
      (res) => {
        let seen = 0;
        res.on('data', (chunk: Buffer) => {
          seen += chunk.length;
          if (seen > MAX_ANSWER_BYTES) res.destroy();
        });
        const finish = () =>
          resolve(
            done({
              statusCode: res.statusCode ?? null,
              error: null,
              retryAfter: (res.headers['retry-after'] as string | undefined) ?? null,
            }),
          );
        res.on('end', finish);
        res.on('close', finish);
        res.on('error', finish);
      },
    );
    req.on('error', (err: NodeJS.ErrnoException) => {
      const timedOut = signal.aborted && !opts.signal.aborted;
      const error = timedOut
        ? `timeout after ${opts.timeoutMs} ms`
        : `${err.code ?? 'ERROR'}: ${err.message}`;
      resolve(done({ statusCode: null, error: error.slice(0, 500), retryAfter: null }));
    });
    req.end(body);
  });
}

/** A Retry-After value (seconds or an HTTP date) in ms from now, or null when absent or unreadable. */
export function retryAfterMs(value: string | null, now = Date.now()): number | null {
  if (value === null) return null;
  if (/^\d+$/.test(value.trim())) return Number(value.trim()) * 1000;
  const at = Date.parse(value);
  return Number.isNaN(at) ? null : Math.max(0, at - now);
}
