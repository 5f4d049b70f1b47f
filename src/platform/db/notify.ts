import { createHash } from 'node:crypto';
import type { Queryable } from './port';

/**
 * Notification channels are the database's, not a schema's: two deployments sharing one PostgreSQL
 * database under different `DATABASE_SCHEMA`s would wake each other's loops and read each other's
 * key ids. So every channel name carries its deployment's suffix, made from the schema (`public`:
 * none, so a deployment without a schema hears itself; else ':' and 12 hex digits of the name's
 * SHA-256, which keeps the longest channel within PostgreSQL's 63 bytes). Senders append it in SQL
 * (this statement, from the connection's schema; the triggers of migration 0045, from their table's,
 * so an UPDATE by hand from any session reaches the right processes), and the adapter listens on
 * the suffixed names. On PGlite the schema is `public`: the names are the plain ones.
 */
const suffixOf = (schema: string) =>
  `CASE WHEN ${schema} = 'public' THEN '' ELSE ':' || substr(encode(sha256(convert_to(${schema}, 'UTF8')), 'hex'), 1, 12) END`;

/** The statement of every notification this code sends. */
export const NOTIFY_SQL = `SELECT pg_notify($1 || ${suffixOf('current_schema()')}, $2)`;

/** The channel suffix of a schema, as the SQL above computes it (null: no schema, `public`). */
export function channelSuffix(schema: string | null | undefined): string {
  if (!schema || schema === 'public') return '';
  return `:${createHash('sha256').update(schema, 'utf8').digest('hex').slice(0, 12)}`;
}

/**
 * Sends a notification on `channel` with the transaction it runs in: delivered at COMMIT, to every
 * process of this deployment listening (PGlite: to this one's listeners), never if it rolls back.
 */
export async function notify(q: Queryable, channel: string, payload: string): Promise<void> {
  await q.query(NOTIFY_SQL, [channel, payload]);
}
