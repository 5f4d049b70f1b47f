import { Agent as HttpAgent, request as httpRequest, type IncomingMessage } from 'node:http';
import { Agent as HttpsAgent, request as httpsRequest } from 'node:https';
import { setTimeout as delay } from 'node:timers/promises';
import { UsageError } from './commands';

/**
 * What `cdp export` and `cdp import` share: they talk HTTP to a running service, as any client
 * does (its URL and an API key), retry what is worth retrying with backoff (honouring Retry-After),
 * and show their progress on stderr.
 */

export const DEFAULT_URL = 'http://127.0.0.1:8080';

export interface ServiceTarget {
  url: string;
  key: string;
}

/** `--url` (default $CDP_URL, else http://127.0.0.1:8080) and `--key` (default $CDP_API_KEY). */
export function serviceTarget(
  values: { url?: string | undefined; key?: string | undefined },
  env: NodeJS.ProcessEnv = process.env,
): ServiceTarget {
  const url = values.url ?? env.CDP_URL ?? DEFAULT_URL;
  let parsed: URL;
  try {
    parsed = new URL(url);
  } catch {
    throw new UsageError(`--url ${url} is not a URL (http://host:port)`);
  }
  if (parsed.protocol !== 'http:' && parsed.protocol !== 'https:') {
    throw new UsageError(`--url ${url} must be http:// or https://`);
  }
  const key = values.key ?? env.CDP_API_KEY;
  if (!key) throw new UsageError('an API key is needed: --key KEY or CDP_API_KEY');
  return { url: url.replace(/\/+$/, ''), key };
}

const agents = { http: new HttpAgent({ keepAlive: true }), https: new HttpsAgent({ keepAlive: true }) };

/** One request; resolves with the response as soon as its headers arrived (the body is the caller's). */
export function send(
  target: ServiceTarget,
  method: 'GET' | 'POST',
  path: string,
  body?: string,
): Promise<IncomingMessage> {
  const url = new URL(path, `${target.url}/`);
  const tls = url.protocol === 'https:';
  const headers: Record<string, string | number> = { 'x-api-key': target.key, accept: '*/*' };
  if (body !== undefined) {
    headers['content-type'] = 'application/json';
    headers['content-length'] = Buffer.byteLength(body);
  }
  return new Promise((resolve, reject) => {
    const req = (tls ? httpsRequest : httpRequest)(
      url,
      { method, headers, agent: tls ? agents.https : agents.http },
      resolve,
    );
    req.on('error', reject);
    req.end(body);
  });
}

export interface ErrorAnswer {
  status: number;
  error_code: string | null;
  message: string;
  details: Array<{ path: string; message: string }>;
  retryAfterMs: number | null;
}

/** Reads a non-2xx answer: the envelope's code, message and details, and its Retry-After. */
export async function readError(res: IncomingMessage): Promise<ErrorAnswer> {
  let text = '';
  res.setEncoding('utf8');
  for await (const chunk of res) {
    if (text.length < 1_000_000) text += chunk as string;
  }
  let body: { error_code?: string; message?: string; details?: Array<{ path: string; message: string }> } =
    {};
  try {
    body = JSON.parse(text);
  } catch {
    // Not the envelope (a proxy's page): the status says enough.
  }
  const retryAfter = Number(res.headers['retry-after']);
  return {
    status: res.statusCode ?? 0,
    error_code: body.error_code ?? null,
    message: body.message ?? `${res.statusCode} ${res.statusMessage ?? ''}`.trim(),
    details: Array.isArray(body.details) ? body.details : [],
    retryAfterMs: Number.isFinite(retryAfter) && retryAfter >= 0 ? Math.min(retryAfter, 300) * 1000 : null,
  };
}

/** Answers worth trying again as they are: the service was busy, shutting down, or failed. */
export const retryable = (status: number): boolean => status === 429 || status === 503 || status >= 500;

/**
 * Retries of one step: at most `max` failures in a row without progress, each waiting its
 * Retry-After or an exponential backoff (0.5 s, 1 s, 2 s, … up to 30 s, with jitter).
 */
export interface Retries {
  /** Waits before the next try; false when the tries are used up. */
  wait(retryAfterMs?: number | null): Promise<boolean>;
  /** Progress was made: the count starts again. */
  reset(): void;
  readonly failures: number;
}

export function createRetries(max = 10, baseMs = 500, capMs = 30_000): Retries {
  let failures = 0;
  return {
    async wait(retryAfterMs) {
      failures++;
      if (failures > max) return false;
      const backoff = Math.min(capMs, baseMs * 2 ** (failures - 1));
      await delay(retryAfterMs ?? backoff * (0.75 + Math.random() * 0.5));
      return true;
    },
    reset() {
      failures = 0;
    },
    get failures() {
      return failures;
    },
  };
}

// ---------------------------------------------------------------------------------------------
// Progress on stderr: one line rewritten in place on a terminal, plain lines now and then otherwise.

export interface Progress {
  /** Records the figures; redraws at most every 200 ms (a line every 5 s when not a terminal). */
  update(fields: ProgressFields): void;
  /** Clears the line on a terminal, so that a message can follow. */
  clear(): void;
}

export interface ProgressFields {
  /** What moves, e.g. "12,345 events". */
  count: string;
  /** Per second, e.g. "3,456 events/s". */
  rate: string;
  /** 0–1 when the total is known (a bar is drawn), else null (a bar that only shows activity). */
  fraction: number | null;
  extra?: string;
}

export const thousands = (n: number): string => Math.round(n).toLocaleString('en-US');

export const megabytes = (bytes: number): string => `${(bytes / 1024 / 1024).toFixed(1)} MB`;

const clock = (ms: number) => {
  const s = Math.floor(ms / 1000);
  return `${Math.floor(s / 60)}:${String(s % 60).padStart(2, '0')}`;
};

export function createProgress(
  label: string,
  out: { isTTY?: boolean; write(s: string): unknown } = process.stderr,
): Progress {
  const t0 = performance.now();
  // A terminal shows the line at once; a log gets its first line after the first interval.
  let drawnAt = out.isTTY ? Number.NEGATIVE_INFINITY : t0;
  let tick = 0;
  const interval = out.isTTY ? 200 : 5_000;
  const WIDTH = 24;
  const bar = (fraction: number | null) => {
    if (fraction !== null) {
      const full = Math.round(Math.min(1, Math.max(0, fraction)) * WIDTH);
      return `[${'#'.repeat(full)}${'-'.repeat(WIDTH - full)}] ${Math.floor(fraction * 100)}%`;
    }
    // No total known: a block that moves while records arrive.
    const at = tick++ % (2 * (WIDTH - 3));
    const pos = at < WIDTH - 3 ? at : 2 * (WIDTH - 3) - at;
    return `[${' '.repeat(pos)}<=>${' '.repeat(WIDTH - 3 - pos)}]`;
  };
  return {
    update(f) {
      const now = performance.now();
      if (now - drawnAt < interval) return;
      drawnAt = now;
      const parts = [label, bar(f.fraction), f.count, f.rate, ...(f.extra ? [f.extra] : []), clock(now - t0)];
      if (out.isTTY) out.write(`\r\x1b[K${parts.join('  ')}`);
      else out.write(`${parts.filter((_, i) => i !== 1 || f.fraction !== null).join('  ')}\n`);
    },
    clear() {
      if (out.isTTY && drawnAt !== Number.NEGATIVE_INFINITY) out.write('\r\x1b[K');
    },
  };
}
