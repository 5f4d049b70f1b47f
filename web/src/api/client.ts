// The console's only way to the API: same-origin requests carrying the session cookie, the CSRF
// token on every state-changing request, and errors turned into ApiError (the API's error envelope).

export interface Pagination {
  limit: number;
  next_cursor: string | null;
  has_more: boolean;
}

export interface Page<T> {
  data: T[];
  pagination: Pagination;
}

export class ApiError extends Error {
  readonly status: number;
  readonly code: string;
  readonly details: { path: string; message: string }[];
  /** Seconds from `Retry-After`, when the answer had one. */
  readonly retryAfter: number | null;

  constructor(
    status: number,
    code: string,
    message: string,
    details: { path: string; message: string }[] = [],
    retryAfter: number | null = null,
  ) {
    super(message);
    this.name = 'ApiError';
    this.status = status;
    this.code = code;
    this.details = details;
    this.retryAfter = retryAfter;
  }
}

// Kept in memory only: a reload asks GET /tenant/session for it again. Never in any Web Storage.
let csrfToken: string | null = null;

export function setCsrfToken(token: string | null): void {
  csrfToken = token;
}

/** Called when an answer says the session is gone (401), so the app can show the sign-in form. */
let onUnauthorized: (() => void) | null = null;
export function setUnauthorizedHandler(handler: (() => void) | null): void {
  onUnauthorized = handler;
}

type Method = 'GET' | 'POST' | 'PUT' | 'PATCH' | 'DELETE';
export type QueryParams = Record<string, string | number | boolean | null | undefined>;

export function withQuery(path: string, params?: QueryParams): string {
  if (!params) return path;
  const search = new URLSearchParams();
  for (const [k, v] of Object.entries(params)) {
    if (v !== undefined && v !== null && v !== '') search.set(k, String(v));
  }
  const s = search.toString();
  return s ? `${path}?${s}` : path;
}

function parseRetryAfter(value: string | null): number | null {
  if (!value) return null;
  const n = Number(value);
  if (Number.isFinite(n)) return Math.max(0, n);
  const at = Date.parse(value);
  return Number.isNaN(at) ? null : Math.max(0, (at - Date.now()) / 1000);
}

interface ErrorBody {
  error_code?: string;
  message?: string;
  details?: { path: string; message: string }[];
  // Some answers nest it: {error: {code, message}}.
  error?: { code?: string; message?: string; details?: { path: string; message: string }[] };
}

async function request<T>(method: Method, path: string, body?: unknown, signal?: AbortSignal): Promise<T> {
  const headers: Record<string, string> = { Accept: 'application/json' };
  if (body !== undefined) headers['Content-Type'] = 'application/json';
  if (method !== 'GET' && csrfToken) headers['X-CSRF-Token'] = csrfToken;
  let res: Response;
  try {
    res = await fetch(path, {
      method,
      headers,
      credentials: 'same-origin',
      body: body === undefined ? undefined : JSON.stringify(body),
      signal,
    });
  } catch (err) {
    if ((err as Error).name === 'AbortError') throw err;
    throw new ApiError(0, 'NETWORK', 'The service cannot be reached; retrying.');
  }
  const text = await res.text();
  let json: unknown = null;
  if (text) {
    try {
      json = JSON.parse(text);
    } catch {
      json = null;
    }
  }
  if (!res.ok) {
    const b = (json ?? {}) as ErrorBody;
    const code = b.error_code ?? b.error?.code ?? `HTTP_${res.status}`;
    const message = b.message ?? b.error?.message ?? res.statusText ?? 'Request failed';
    const err = new ApiError(
      res.status,
      code,
      message,
      b.details ?? b.error?.details ?? [],
      parseRetryAfter(res.headers.get('Retry-After')),
    );
    if (res.status === 401 && !path.startsWith('/tenant/session')) onUnauthorized?.();
    throw err;
  }
  return json as T;
}

export const api = {
  get: <T>(path: string, params?: QueryParams, signal?: AbortSignal) =>
    request<T>('GET', withQuery(path, params), undefined, signal),
  post: <T>(path: string, body?: unknown) => request<T>('POST', path, body ?? {}),
  put: <T>(path: string, body?: unknown) => request<T>('PUT', path, body ?? {}),
  patch: <T>(path: string, body?: unknown) => request<T>('PATCH', path, body ?? {}),
  delete: <T>(path: string, params?: QueryParams) => request<T>('DELETE', withQuery(path, params)),
};

/** Reads `data` out of the success envelope. */
export async function data<T>(p: Promise<{ data: T }>): Promise<T> {
  return (await p).data;
}

/** How a person should read an error: the 503 and network cases say that the console keeps trying. */
export function describeError(err: unknown): string {
  if (err instanceof ApiError) {
    if (err.status === 503) return 'The database is unavailable, retrying…';
    if (err.status === 0) return err.message;
    if (err.status === 429) {
      const wait = err.retryAfter != null ? ` (retry in ${Math.ceil(err.retryAfter)} s)` : '';
      return `Too many requests right now${wait}: ${err.message}`;
    }
    if (err.status === 403) return `Not allowed: ${err.message}`;
    if (err.status === 404) return `Not found: ${err.message}`;
    return err.message;
  }
  return err instanceof Error ? err.message : String(err);
}

/** Should TanStack Query try again? Only for what passes by itself: 503, 429, network, 5xx. */
export function isTransient(err: unknown): boolean {
  return err instanceof ApiError && (err.status === 0 || err.status === 503 || err.status === 429);
}

/** Delay before the next try: the server's Retry-After when it gave one, otherwise a backoff. */
export function retryDelay(attempt: number, err: unknown): number {
  if (err instanceof ApiError && err.retryAfter != null) return Math.min(30_000, err.retryAfter * 1000 + 50);
  return Math.min(30_000, 500 * 2 ** attempt);
}
