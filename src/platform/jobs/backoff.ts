/**
 * Retry delays: exponential with full jitter (a uniformly random delay below an exponentially
 * growing, capped ceiling), so jobs that failed together do not all come back together.
 */
export interface BackoffPolicy {
  /** Ceiling of the first retry's delay. */
  baseMs: number;
  /** No delay is ever longer than this. */
  capMs: number;
}

export const DEFAULT_BACKOFF: BackoffPolicy = { baseMs: 1_000, capMs: 10 * 60_000 };

/** The ceiling of the delay after failed attempt number `attempt` (1-based): base·2^(attempt−1), capped. */
export function backoffCeilingMs(attempt: number, policy: BackoffPolicy = DEFAULT_BACKOFF): number {
  const n = Math.max(1, Math.floor(attempt));
  // 2^n overflows to Infinity past n≈1024, which min() then caps: no special case needed.
  return Math.min(policy.capMs, policy.baseMs * 2 ** (n - 1));
}

/** A delay in [0, ceiling) for the retry after failed attempt `attempt`. */
export function backoffMs(
  attempt: number,
  policy: BackoffPolicy = DEFAULT_BACKOFF,
  random: () => number = Math.random,
): number {
  return Math.floor(random() * backoffCeilingMs(attempt, policy));
}
