import type { MaintenanceTask } from '../../platform/jobs';
import { pruneEventMinutes } from '../ingest';
import { pruneSessions } from './sessions';

/** The overview's chart shows an hour: counts are kept for two. */
const KEEP_EVENT_MINUTES = 120;

/** Every 10 minutes: ended sessions, and per-minute event counts older than the chart needs. */
export function consoleHousekeeping(): MaintenanceTask {
  return {
    name: 'console.prune',
    spec: 'every 10m',
    async run(db) {
      await pruneSessions(db);
      await pruneEventMinutes(db, KEEP_EVENT_MINUTES);
    },
  };
}
