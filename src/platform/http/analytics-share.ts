import { AppError } from '../errors';
import { createKeyedSemaphore } from '../keyed-semaphore';

/**
 * A workspace's share of the process's expensive operations (segment calculations, model fits,
 * workspace exports, and whatever else walks a whole workspace on request): at most `limit` of them
 * at once per workspace (its `analytics_concurrency` setting), one more is refused at once with 429
 * and Retry-After rather than queued, so one tenant's burst holds nothing another tenant needs.
 */
export const analyticsSlots = createKeyedSemaphore();

/**
 * One of the workspace's slots, held until the returned function is called (exactly once), or 429
 * RATE_LIMITED at once when all are taken. For work that outlives a promise (an export streams for
 * as long as its client reads); `retryAfterS` says how soon one is likely to be free.
 */
export function acquireAnalyticsShare(workspaceId: string, limit: number, retryAfterS = 1): () => void {
  const release = analyticsSlots.tryAcquire(workspaceId, limit);
  if (!release) {
    throw new AppError(
      'RATE_LIMITED',
      `at most ${limit} expensive operations of this workspace (segment calculations, summaries, model fits, ` +
        'exports) run at once (setting analytics_concurrency); retry when one has finished',
      { headers: { 'retry-after': String(retryAfterS) } },
    );
  }
  return release;
}

export async function withinAnalyticsShare<T>(
  workspaceId: string,
  limit: number,
  fn: () => Promise<T>,
): Promise<T> {
  const release = acquireAnalyticsShare(workspaceId, limit);
  try {
    return await fn();
  } finally {
    release();
  }
}
