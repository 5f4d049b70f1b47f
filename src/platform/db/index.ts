import type { Config } from '../../config';
import { createPgliteDb } from './pglite';
import type { Db } from './port';
import { createPostgresDb } from './postgres';

export {
  classifyDbError,
  type DbErrorKind,
  isConflict,
  isContention,
  isDataError,
  isStorageUnavailable,
} from './errors';
export type { Db, Queryable, QueryOptions, QueryResult } from './port';

/** Opens the database the configuration names: PostgreSQL when DATABASE_URL is set, else PGlite. */
export function openDb(
  config: Pick<Config, 'databaseUrl' | 'databaseSchema' | 'dataDir'> &
    Partial<Pick<Config, 'pgliteInProcess' | 'databaseStatementTimeoutMs'>>,
): Promise<Db> {
  if (config.databaseUrl) {
    return createPostgresDb({
      url: config.databaseUrl,
      schema: config.databaseSchema,
      ...(config.databaseStatementTimeoutMs ? { queryTimeoutMs: config.databaseStatementTimeoutMs } : {}),
    });
  }
  return createPgliteDb({
    dataDir: config.dataDir === ':memory:' ? null : config.dataDir,
    inProcess: config.pgliteInProcess ?? false,
  });
}
