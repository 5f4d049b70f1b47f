import { waitRescored } from '../src/modules/intelligence/intelligence.test-kit';
import { waitProcessed } from '../src/modules/processing/processing.test-kit';
import { waitSegmentsSettled } from '../src/modules/segments/segments.test-kit';
import type { Db } from '../src/platform/db';

/**
 * Everything the background work does after a change, done: events processed, rescoring drained,
 * segment memberships refreshed. For tests that check the effects of a change end to end.
 */
export async function settle(db: Db): Promise<void> {
  await waitProcessed(db);
  await waitRescored(db);
  await waitSegmentsSettled(db);
}
