import { dropSchema, freshSchemaName } from '../../../test/harness';
import { migrate } from '../db/migrate';
import { createPgliteDb } from '../db/pglite';
import type { Db } from '../db/port';
import { createPostgresDb } from '../db/postgres';

/** A migrated database of the engine under test (PGlite in memory, or a fresh PostgreSQL schema). */
export interface TestDb {
  db: Db;
  /** A second connection pool to the same database (PostgreSQL), or the same Db (PGlite). */
  other(): Promise<Db>;
  close(): Promise<void>;
}

export const PG_URL = process.env.DATABASE_URL;

export async function openTestDb(): Promise<TestDb> {
  if (!PG_URL) {
    const db = await createPgliteDb({ dataDir: null, inProcess: true });
    await migrate(db);
    return { db, other: async () => db, close: () => db.close() };
  }
  const schema = freshSchemaName();
  const db = await createPostgresDb({ url: PG_URL, schema });
  await migrate(db);
  const extra: Db[] = [];
  return {
    db,
    async other() {
      const o = await createPostgresDb({ url: PG_URL, schema });
      extra.push(o);
      return o;
    },
    async close() {
      for (const o of extra) await o.close();
      await db.close();
      await dropSchema(PG_URL, schema);
    },
  };
}
