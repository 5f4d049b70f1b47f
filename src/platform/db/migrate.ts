import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { PROJECT_ROOT } from '../project-root';
import type { Db } from './port';

export const MIGRATIONS_DIR = join(PROJECT_ROOT, 'migrations');

export interface Migration {
  version: number;
  name: string;
  sql: string;
}

/** Reads `NNNN_name.sql` files in version order; the number is the version and must be unique. */
export function loadMigrations(dir: string = MIGRATIONS_DIR): Migration[] {
  const files = readdirSync(dir).filter((f) => /^\d{4}_[a-z0-9_]+\.sql$/.test(f));
  const migrations = files
    .map((f) => ({
      version: Number(f.slice(0, 4)),
      name: f.slice(5, -4),
      sql: readFileSync(join(dir, f), 'utf8'),
    }))
    .sort((a, b) => a.version - b.version);
  for (let i = 1; i < migrations.length; i++) {
    if (migrations[i]!.version === migrations[i - 1]!.version) {
      throw new Error(`two migrations share version ${migrations[i]!.version}`);
    }
  }
  return migrations;
}

/** Progress of a migration run: how many are pending, then each one as it is applied. */
export type MigrateProgress =
  | { step: 'pending'; of: number }
  | { step: 'applied'; version: number; name: string; n: number; of: number; ms: number };

/**
 * Applies pending migrations, forward only, each in its own transaction. An advisory lock makes
 * concurrent starts of several processes safe: one applies, the others wait and then find nothing.
 */
export async function migrate(
  db: Db,
  migrations: Migration[] = loadMigrations(),
  opts: { onProgress?: (p: MigrateProgress) => void } = {},
): Promise<number[]> {
  // The lock is taken with exec: a statement has no time bound there (see postgres.ts), and another
  // process may hold the lock for as long as its migrations take.
  await db.transaction(async (tx) => {
    await tx.exec('SELECT pg_advisory_xact_lock(7263001)');
    await tx.exec(`CREATE TABLE IF NOT EXISTS schema_migrations (
      version integer PRIMARY KEY,
      name text NOT NULL,
      applied_at timestamptz NOT NULL DEFAULT now()
    )`);
  });
  // Read once for the progress count; each migration is still checked under the lock, since
  // another process may apply some meanwhile.
  const { rows: present } = await db.query<{ version: number }>('SELECT version FROM schema_migrations');
  const have = new Set(present.map((r) => Number(r.version)));
  const pending = migrations.filter((m) => !have.has(m.version));
  if (pending.length > 0) opts.onProgress?.({ step: 'pending', of: pending.length });
  const applied: number[] = [];
  for (const [i, m] of pending.entries()) {
    const t0 = performance.now();
    const done = await db.transaction(async (tx) => {
      await tx.exec('SELECT pg_advisory_xact_lock(7263001)');
      const { rows } = await tx.query('SELECT 1 FROM schema_migrations WHERE version = $1', [m.version]);
      if (rows.length > 0) return false;
      await tx.exec(m.sql);
      await tx.query('INSERT INTO schema_migrations (version, name) VALUES ($1, $2)', [m.version, m.name]);
      return true;
    });
    if (done) {
      applied.push(m.version);
      opts.onProgress?.({
        step: 'applied',
        version: m.version,
        name: m.name,
        n: i + 1,
        of: pending.length,
        ms: performance.now() - t0,
      });
    }
  }
  return applied;
}
