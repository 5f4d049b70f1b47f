import { type StatisticsExemption, startStatisticsUpkeep } from './platform/db/statistics';
import type { WorkerModule } from './platform/worker-module';

/**
 * Tables whose statistics the service does not keep, each with the reason. Every other ordinary
 * table of the schema is analyzed once it has changed enough since its last ANALYZE
 * (src/platform/db/statistics.ts): the list of tables comes from the catalog, so a new table is
 * covered without being named anywhere. test/statistics.schema.test.ts fails for a table of the
 * schema that the check does not see (a partitioned table, say) and that is not named here.
 *
 * None today: the work lists that their owners vacuum and analyze after draining (the backlog,
 * the dirty lists, jobs) are analyzed by the same rule too, as autovacuum would on a server.
 */
export const STATISTICS_EXEMPT: readonly StatisticsExemption[] = [];

/**
 * The planner's statistics of every table, kept current in every worker process (PGlite has no
 * autovacuum; a server may run without it). A check every second on the worker lane: on PGlite
 * requests go first on the one connection; on PostgreSQL the processes share the work through an
 * advisory lock per table.
 */
export const statisticsWorker: WorkerModule = {
  name: 'statistics',
  async start(deps) {
    const upkeep = startStatisticsUpkeep(deps.db.lane('worker'), deps.log, { exempt: STATISTICS_EXEMPT });
    return () => upkeep.stop();
  },
};
