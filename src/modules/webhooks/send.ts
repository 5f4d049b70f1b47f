import http from 'node:http';
import https from 'node:https';
import type { LookupFunction } from 'node:net';
import { agentFor } from './connections';
import { refusalOfScheme } from './url-guard';

export interface SendResult {
  statusCode: number | null;
  /** A transport failure, a timeout or a refusal; null when an answer arrived. */
  error: string | null;
  retryAfter: string | null;
  durationMs: number;
  /** The address guard refused the destination before any connection: sending again cannot help. */
  refused: boolean;
}

/** Most of an answer body we read (and discard): enough to keep the connection healthy, no more. */
const MAX_ANSWER_BYTES = 64 * 1024;

type Outcome = Omit<SendResult, 'durationMs'> & { staleConnection?: boolean };

/**
 * POSTs one delivery. Node's http client rather than fetch: its agent decides how each connection
 * is made, so the address guard runs on every new connection whatever the host's form
 * (connections.ts), and connections are kept alive per destination. The scheme is checked here at
 * every send: a URL saved while private destinations were allowed is refused once they are not.
 * The whole exchange (connect, send, answer) must finish within `timeoutMs`; redirects are not
 * followed. `lookup` replaces the DNS lookup (tests answer chosen addresses through it).
 */
export async function send(
  url: string,
  body: string,
  headers: Record<string, string>,
  opts: { timeoutMs: number; allowPrivate: boolean; signal: AbortSignal; lookup?: LookupFunction },
): Promise<SendResult> {
  const started = performance.now();
  const done = (r: Outcome): SendResult => ({
    statusCode: r.statusCode,
    error: r.error,
    retryAfter: r.retryAfter,
    refused: r.refused,
    durationMs: Math.round(performance.now() - started),
  });
  let target: URL;
  try {
    target = new URL(url);
  } catch {
    return done({
      statusCode: null,
      error: 'EBLOCKED: url is not a valid absolute URL',
      retryAfter: null,
      refused: true,
    });
  }
  const scheme = refusalOfScheme(target.protocol, opts.allowPrivate);
  if (scheme)
    return done({ statusCode: null, error: `EBLOCKED: ${scheme}`, retryAfter: null, refused: true });
  const signal = AbortSignal.any([opts.signal, AbortSignal.timeout(opts.timeoutMs)]);
  const first = await post(target, body, headers, signal, opts);
  // A pooled connection the receiver closed while it sat idle fails at once. The attempt goes
  // again, once, on a new connection: the receiver most likely never read it, and at worst gets
  // it twice, which at-least-once delivery allows (receivers deduplicate on the delivery id).
  return done(
    first.staleConnection && !signal.aborted ? await post(target, body, headers, signal, opts) : first,
  );
}

function post(
  target: URL,
  body: string,
  headers: Record<string, string>,
  signal: AbortSignal,
  opts: { timeoutMs: number; allowPrivate: boolean; signal: AbortSignal; lookup?: LookupFunction },
): Promise<Outcome> {
  return new Promise((resolve) => {
    const client = target.protocol === 'https:' ? https : http;
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
        agent: agentFor(target.protocol, opts.allowPrivate),
        ...(opts.lookup ? { lookup: opts.lookup } : {}),
      },
      (res) => {
        let seen = 0;
        res.on('data', (chunk: Buffer) => {
          seen += chunk.length;
          if (seen > MAX_ANSWER_BYTES) res.destroy();
        });
        const finish = () =>
          resolve({
            statusCode: res.statusCode ?? null,
            error: null,
            retryAfter: (res.headers['retry-after'] as string | undefined) ?? null,
            refused: false,
          });
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
      resolve({
        statusCode: null,
        error: error.slice(0, 500),
        retryAfter: null,
        refused: err.code === 'EBLOCKED',
        staleConnection: req.reusedSocket && (err.code === 'ECONNRESET' || err.code === 'EPIPE'),
      });
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
