import type { FastifyReply, FastifyRequest } from 'fastify';
import type { Logger } from 'pino';
import { AppError } from '../errors';
import { createHostPatternIndex, type IndexWork, requestHost } from './origins';

/**
 * CORS for browser ingestion. Only routes with `config.cors: true` (the ingest endpoints) get a
 * preflight answer; the route registry adds an OPTIONS route beside each of them. A preflight
 * carries no key, so it is answered for any origin that some active key allows; the real request
 * is then checked against its own key's `allowed_domains` by the auth hook.
 */
export const PREFLIGHT_MAX_AGE_SECONDS = 600;
export const CORS_ALLOW_HEADERS = 'Content-Type, X-API-Key';
/** Browsers hide response headers from scripts unless listed here. */
export const CORS_EXPOSE_HEADERS = 'RateLimit-Limit, RateLimit-Remaining, RateLimit-Reset, Retry-After';

/** What a preflight asks: does some active key allow this host? Answered from memory. */
export interface OriginPolicy {
  allows(host: string): boolean;
}

/** One owner's (a key's) patterns. */
export interface OwnerPatterns {
  owner: string;
  patterns: readonly string[];
}

/** Where the patterns come from (the api-keys module's store, wired by runtime.ts). */
export interface OriginSource {
  /** Every owner that has patterns, a page at a time. */
  loadAll(): AsyncIterable<readonly OwnerPatterns[]>;
  /** The current patterns of these owners; an owner left out of the answer has none any more. */
  load(owners: readonly string[]): Promise<readonly OwnerPatterns[]>;
  /**
   * Calls `onChange` with each owner whose patterns changed, in this process or another;
   * `onLost` when changes may have been missed. Resolves to the way to stop.
   */
  watch(onChange: (owner: string) => void, onLost: () => void): Promise<() => Promise<void>>;
  /** True while changes are known to arrive (checked once a tick). */
  readonly watching: boolean;
}

export interface OriginIndexStats {
  /** Owners (keys) with at least one pattern, and the distinct patterns they hold. */
  owners: number;
  patterns: number;
  /** Full loads of every pattern: the first, the periodic safety net, and after lost changes. */
  fullLoads: number;
  /** Reads of changed owners (batched). */
  ownerLoads: number;
  /** Origins checked, and the set lookups it took (at most the labels of each host, plus one). */
  checks: number;
  probes: number;
  /** True while changes may have been missed and a full load is due. */
  stale: boolean;
}

export interface OriginIndex extends OriginPolicy {
  /** This process changed an owner: resolves once the index holds its current patterns. */
  changed(owner: string): Promise<void>;
  stats(): OriginIndexStats;
  /** Watches for changes, then loads every pattern. */
  start(): Promise<void>;
  stop(): Promise<void>;
}

export interface OriginIndexOptions {
  /** The safety net: every pattern is read again this often (default 10 min). */
  refreshMs?: number;
  /** The least time between two full loads after lost changes or a failed read (default 5 s). */
  retryMs?: number;
  /**
   * While changes cannot arrive at all (no notifications: a proxy that pools transactions), every
   * pattern is read this often instead (default 30 s).
   */
  blindRefreshMs?: number;
  /** How often the index looks whether a full load is due (default 1 s). */
  tickMs?: number;
  now?: () => number;
  log?: Pick<Logger, 'warn'>;
}

/** Owners read in one statement when many changed at once. */
const OWNERS_PER_READ = 500;

/**
 * The origins a preflight may be answered for, in memory, kept up to date by changes rather than
 * by misses. Preflights are unauthenticated, so an origin that matches nothing must cost no more
 * than one that matches: a check is a few set lookups (`createHostPatternIndex`), and nothing a
 * request does ever reads the database.
 *
 * - The index is loaded whole at start, then each changed key is read again when its change is
 *   notified (a key created or revoked on any process; this process's own writes also call
 *   `changed` and wait for it). Changes are read one batch at a time, in order with full loads.
 * - If changes may have been missed (the notification stream dropped, a read failed), a full load
 *   follows once notifications arrive again, at most every `retryMs`; while they cannot arrive, one
 *   runs every `blindRefreshMs`; and every `refreshMs` one runs anyway (a row edited by hand sends
 *   no notification).
 * - Meanwhile answers come from the index as it is: a preflight is advice to the browser, and the
 *   request that follows is checked against its own key.
 */
export function createOriginIndex(source: OriginSource, opts: OriginIndexOptions = {}): OriginIndex {
  const refreshMs = opts.refreshMs ?? 600_000;
  const retryMs = opts.retryMs ?? 5_000;
  const blindRefreshMs = opts.blindRefreshMs ?? 30_000;
  const tickMs = opts.tickMs ?? 1_000;
  const now = opts.now ?? Date.now;
  const work: IndexWork = { probes: 0 };
  let index = createHostPatternIndex(work);
  let checks = 0;
  let fullLoads = 0;
  let ownerLoads = 0;
  let stale = true;
  let loadedAt = Number.NEGATIVE_INFINITY;
  let triedAt = Number.NEGATIVE_INFINITY;
  /** A full load asked for by the clock and not finished: the clock asks for no other meanwhile. */
  let loadQueued = false;
  /** Owners whose change is not applied yet; the next read takes them all. */
  const pending = new Set<string>();
  let queuedRead: Promise<void> | null = null;
  /** Reads and full loads run one at a time, in the order they were asked for. */
  let chain: Promise<void> = Promise.resolve();
  let timer: NodeJS.Timeout | null = null;
  let unwatch: (() => Promise<void>) | null = null;

  const serial = (what: string, fn: () => Promise<void>): Promise<void> => {
    chain = chain.then(fn).catch((err: unknown) => {
      stale = true;
      opts.log?.warn({ err: String(err) }, `browser origins: ${what} failed; reading them all again soon`);
    });
    return chain;
  };

  const readChanged = async () => {
    queuedRead = null;
    const owners = [...pending];
    pending.clear();
    try {
      for (let i = 0; i < owners.length; i += OWNERS_PER_READ) {
        const batch = owners.slice(i, i + OWNERS_PER_READ);
        ownerLoads++;
        const found = new Map((await source.load(batch)).map((o) => [o.owner, o.patterns]));
        for (const owner of batch) index.set(owner, found.get(owner) ?? []);
      }
    } catch (err) {
      for (const owner of owners) pending.add(owner);
      throw err;
    }
  };

  const requestRead = (owner: string): Promise<void> => {
    pending.add(owner);
    queuedRead ??= serial('reading changed keys', readChanged);
    return queuedRead;
  };

  const loadAll = async () => {
    triedAt = now();
    // Set first: a loss while the pages are read makes the next load due again.
    stale = false;
    const fresh = createHostPatternIndex(work);
    for await (const page of source.loadAll()) {
      for (const o of page) fresh.set(o.owner, o.patterns);
    }
    // Changes notified meanwhile are in `pending`, read again after this (they run in order).
    index = fresh;
    loadedAt = now();
    fullLoads++;
  };

  const tick = () => {
    if (loadQueued) return;
    let due: boolean;
    if (!source.watching) {
      // Changes made meanwhile may never be notified: read everything once they can be again.
      stale = true;
      due = now() - triedAt >= blindRefreshMs;
    } else {
      due = stale ? now() - triedAt >= retryMs : now() - loadedAt >= refreshMs;
    }
    if (!due) return;
    loadQueued = true;
    void serial('loading every origin', () => loadAll().finally(() => (loadQueued = false)));
  };

  return {
    allows(host) {
      checks++;
      return index.matches(host);
    },

    changed: (owner) => requestRead(owner),

    stats: () => ({
      owners: index.owners,
      patterns: index.patterns,
      fullLoads,
      ownerLoads,
      checks,
      probes: work.probes,
      stale,
    }),

    async start() {
      unwatch = await source.watch(
        (owner) => void requestRead(owner),
        () => {
          stale = true;
        },
      );
      // In order with the reads of changes notified meanwhile; and it must succeed: a service
      // that cannot read its keys does not start.
      const first = chain.then(loadAll);
      chain = first.catch(() => {});
      await first;
      timer = setInterval(tick, tickMs);
      timer.unref();
    },

    async stop() {
      if (timer) clearInterval(timer);
      timer = null;
      await unwatch?.();
      unwatch = null;
      await chain;
    },
  };
}

/** A list of header names as a preflight asks for them: tokens and commas, bounded. */
const HEADER_LIST = /^[A-Za-z0-9!#$%&'*+.^_`|~-]+(\s*,\s*[A-Za-z0-9!#$%&'*+.^_`|~-]+){0,31}$/;

/**
 * The headers a preflight allows: the ones it asks for (`Access-Control-Request-Headers`), echoed
 * when they are a plain list of header names, so that a client sending its own (Segment's browser
 * library adds `Authorization` and `X-Retry-Count`) is let through; the request that follows is
 * checked against its own key whatever it sends. Without a (usable) list: the API's own.
 */
export function allowedHeaders(requested: string | string[] | undefined): string {
  const asked = typeof requested === 'string' ? requested.trim() : '';
  return asked !== '' && asked.length <= 1024 && HEADER_LIST.test(asked) ? asked : CORS_ALLOW_HEADERS;
}

/** Handler of the OPTIONS routes the registry adds beside `cors: true` routes. */
export function createPreflightHandler(policy: OriginPolicy) {
  return async function preflight(req: FastifyRequest, reply: FastifyReply): Promise<void> {
    // Caches must not serve one origin's answer to another, refusals included.
    void reply.header('vary', 'Origin');
    const origin = req.headers.origin;
    const host = typeof origin === 'string' ? requestHost(origin, undefined) : null;
    if (!origin || host === null || !policy.allows(host)) {
      throw new AppError('ORIGIN_NOT_ALLOWED', 'this origin is not allowed by any API key');
    }
    await reply
      .code(204)
      .headers({
        'access-control-allow-origin': origin,
        'access-control-allow-methods': req.routeOptions.config.corsMethods ?? 'POST',
        'access-control-allow-headers': allowedHeaders(req.headers['access-control-request-headers']),
        'access-control-max-age': String(PREFLIGHT_MAX_AGE_SECONDS),
      })
      .send();
  };
}
