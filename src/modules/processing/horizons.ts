import type { MaintenanceTask } from '../../platform/jobs';
import { dropSpentHorizons } from '../identity';
import { logHorizon } from '../ingest';
import { oldestUnappliedSeq } from './unapplied.repo';

/**
 * Every 10 minutes: an erasure's horizon (src/workflows/erasure.ts) blocks the erased identifiers for
 * the events received before it; once no such event waits any more (on the backlog, or as a dead
 * letter a retry could put back), the hashes go too.
 */
export function erasureHorizonsTask(): MaintenanceTask {
  return {
    name: 'erasure.horizons',
    spec: 'every 10m',
    async run(db) {
      const oldest = (await oldestUnappliedSeq(db)) ?? (await logHorizon(db)) + 1;
      await dropSpentHorizons(db, oldest);
    },
  };
}
