import type { Config } from '../../config';
import type { OnOpenEvent } from './open-progress';
import { createPgliteDb } from './pglite';
import type { Db } from './port';
import { createPostgresDb } from './postgres';

export {
  classifyDbError,
  type DbErrorKind,
  isConflict,
  isContention,
  isDataError,
  isStatementTimeout,
  isStorageUnavailable,
} from './errors';
export { notify } from './notify';
export type { OnOpenEvent, OpenEvent } from './open-progress';
export { preferHashJoins, preferIndexOrder } from './planner';
export type { Db, Queryable, QueryOptions, QueryResult, TransactionOptions } from './port';

/**
 * Opens the database the configuration names: PostgreSQL when DATABASE_URL is set, else PGlite.
 * `onProgress` hears what takes time on the way (creating or recovering an embedded database).
 */
export async function openDb(
  config: Pick<Config, 'databaseUrl' | 'databaseSchema' | 'dataDir'> &
    Partial<Pick<Config, 'pgliteInProcess' | 'pgliteTemplate' | 'databaseStatementTimeoutMs'>>,
  opts: { onProgress?: OnOpenEvent } = {},
): Promise<Db> {
  if (config.databaseUrl) {
    const t0 = performance.now();
    const db = await createPostgresDb({
      url: config.databaseUrl,
      schema: config.databaseSchema,
      ...(config.databaseStatementTimeoutMs ? { queryTimeoutMs: config.databaseStatementTimeoutMs } : {}),
    });
    opts.onProgress?.({ step: 'opened', engine: 'postgres', ms: performance.now() - t0 });
    return db;
  }
  return createPgliteDb({
    dataDir: config.dataDir === ':memory:' ? null : config.dataDir,
    inProcess: config.pgliteInProcess ?? false,
    template: config.pgliteTemplate ?? null,
    ...(opts.onProgress ? { onProgress: opts.onProgress } : {}),
  });
}
