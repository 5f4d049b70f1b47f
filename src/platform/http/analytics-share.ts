import { AppError } from '../errors';
import { createKeyedSemaphore } from '../keyed-semaphore';

/**
 * A workspace's share of the process's expensive operations (segment calculations, model fits, and
 * whatever else walks a whole workspace on request): at most `limit` of them at once per workspace
 * (its `analytics_concurrency` setting), one more is refused at once with 429 and Retry-After
 * rather than queued, so one tenant's burst holds nothing another tenant needs.
 */
export const analyticsSlots = createKeyedSemaphore();

export async function withinAnalyticsShare<T>(
  workspaceId: string,
  limit: number,
  fn: () => Promise<T>,
): Promise<T> {
  const release = analyticsSlots.tryAcquire(workspaceId, limit);
  if (!release) {
    throw new AppError(
      'RATE_LIMITED',
      `at most ${limit} expensive operations of this workspace (segment calculations, summaries, model fits) run ` +
        'at once (setting analytics_concurrency); retry when one has finished',
      { headers: { 'retry-after': '1' } },
    );
  }
  try {
    return await fn();
  } finally {
    release();
  }
}
