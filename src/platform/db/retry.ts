import { AppError } from '../errors';
import { isConflict } from './errors';

/**
 * Bounded retry of a transaction that lost a race with another one. Writers lock profiles in one
 * global order (see lockProfiles), so deadlocks should not happen; this is the safety net for the
 * ones that still can (row locks PostgreSQL takes on its own: unique-index waits, foreign keys)
 * and for serialization failures, plus whatever a caller knows to be a lost race (a stale read).
 * PostgreSQL has already rolled the transaction back when it reports these, so running the whole
 * unit of work again from its first read is always safe.
 */

export interface RetryOptions {
  /** Attempts in all, the first included. */
  tries?: number;
  /** Other failures that mean "lost a race, run again" (e.g. a stale read detected after locking). */
  retryOn?: (err: unknown) => boolean;
  /** Called before each new attempt (for a log line or a counter). */
  onRetry?: (err: unknown, attempt: number) => void;
}

export const DEFAULT_TRIES = 8;

/**
 * Runs `fn` (one whole transaction) until it succeeds, retrying deadlocks, serialization failures and
 * `retryOn` failures with a short jittered backoff (≈ 2 ms doubling to at most 100 ms, so that two
 * transactions that collided do not collide again in lockstep). When the tries run out on such a
 * failure, the request gets a 503 with Retry-After rather than a 500: it was valid, the data was
 * busy.
 */
export async function retryConflicts<T>(fn: () => Promise<T>, opts: RetryOptions = {}): Promise<T> {
  const tries = opts.tries ?? DEFAULT_TRIES;
  for (let attempt = 1; ; attempt++) {
    try {
      return await fn();
    } catch (err) {
      const retryable = isConflict(err) || (opts.retryOn?.(err) ?? false);
      if (!retryable) throw err;
      if (attempt >= tries) {
        throw new AppError('UNAVAILABLE', 'too many concurrent changes to the same data; try again', {
          headers: { 'retry-after': '1' },
          cause: err,
        });
      }
      opts.onRetry?.(err, attempt);
      const ceiling = Math.min(100, 2 * 2 ** attempt);
      await new Promise((resolve) => setTimeout(resolve, ceiling / 2 + Math.random() * (ceiling / 2)));
    }
  }
}
