import type { Redis } from 'ioredis';
import {
  type RateLimiterAbstract,
  RateLimiterMemory,
  RateLimiterRedis,
  RateLimiterRes,
} from 'rate-limiter-flexible';

/**
 * Per-key rate limits (docs/api.md "Rate limits") on rate-limiter-flexible: in memory for one process, or in
 * Redis so that several processes share one budget. Two tiers: `standard` counts requests,
 * `batch` counts events (a batch of N consumes N).
 */
export type Tier = 'standard' | 'batch';

export interface RateDecision {
  allowed: boolean;
  limit: number;
  remaining: number;
  /** Seconds until the window resets. */
  resetSeconds: number;
}

export interface RateLimits {
  consume(keyId: string, tier: Tier, points: number, limitPerMinute: number): Promise<RateDecision>;
}

export const DEFAULT_LIMITS: Record<Tier, number> = { standard: 1000, batch: 10_000 };

/** The workspace's per-minute limit for a tier (settings.rate_limits overrides the defaults). */
export function limitFor(settings: Readonly<Record<string, unknown>>, tier: Tier): number {
  const rl = settings.rate_limits as
    | { requests_per_minute?: unknown; batch_events_per_minute?: unknown }
    | undefined;
  const v = tier === 'standard' ? rl?.requests_per_minute : rl?.batch_events_per_minute;
  return typeof v === 'number' && Number.isInteger(v) && v > 0 ? v : DEFAULT_LIMITS[tier];
}

export interface RateLimitOptions {
  /** Prefix of every Redis key (one per deployment, so deployments sharing a Redis never collide). */
  keyPrefix?: string;
}

/**
 * One limiter per (tier, limit): a fixed 60 s window that starts at a key's first request. The
 * limit is part of the Redis key, so changing a workspace's limit starts a fresh budget.
 */
export function createRateLimits(redis: Redis | null, opts: RateLimitOptions = {}): RateLimits {
  const prefix = opts.keyPrefix ?? 'cdp:rl';
  const limiters = new Map<string, RateLimiterAbstract>();
  const limiterFor = (tier: Tier, points: number): RateLimiterAbstract => {
    const id = `${tier}:${points}`;
    let limiter = limiters.get(id);
    if (!limiter) {
      const base = { points, duration: 60, keyPrefix: `${prefix}:${tier}:${points}` };
      limiter = redis
        ? new RateLimiterRedis({
            ...base,
            storeClient: redis,
            // If Redis is down or slow, keep limiting per process rather than failing requests,
            // and do not wait for a reconnect to find that out.
            rejectIfRedisNotReady: true,
            insuranceLimiter: new RateLimiterMemory(base),
          })
        : new RateLimiterMemory(base);
      limiters.set(id, limiter);
    }
    return limiter;
  };

  return {
    async consume(keyId, tier, points, limit) {
      try {
        const res = await limiterFor(tier, limit).consume(keyId, points);
        return {
          allowed: true,
          limit,
          remaining: res.remainingPoints,
          resetSeconds: Math.ceil(res.msBeforeNext / 1000),
        };
      } catch (err) {
        if (err instanceof RateLimiterRes) {
          return {
            allowed: false,
            limit,
            remaining: 0,
            resetSeconds: Math.max(1, Math.ceil(err.msBeforeNext / 1000)),
          };
        }
        throw err;
      }
    },
  };
}
