import { createHash } from 'node:crypto';
import type { Queryable } from './port';

/**
 * Notification channels are the database's, not a schema's: two deployments sharing one PostgreSQL
 * database under different `DATABASE_SCHEMA`s would wake each other's loops and read each other's
 * key ids. So each connection carries its deployment's channel suffix as a server setting, every
 * sender appends it (this statement, and the triggers of migration 0045, which use the same
 * expression) and the adapter listens on the suffixed name. Without the setting (PGlite, the
 * `public` schema) the suffix is empty and the names are the plain ones.
 */
export const CHANNEL_SUFFIX_SETTING = 'cdp.channel_suffix';

/** The statement of every notification this code sends; the triggers repeat its expression. */
export const NOTIFY_SQL = `SELECT pg_notify($1 || coalesce(current_setting('${CHANNEL_SUFFIX_SETTING}', true), ''), $2)`;

/**
 * The channel suffix of a schema: empty for none or `public` (one deployment, whichever way it is
 * named), else a short hash, so the longest channel stays within PostgreSQL's 63 bytes.
 */
export function channelSuffix(schema: string | null | undefined): string {
  if (!schema || schema === 'public') return '';
  return `:${createHash('sha256').update(schema).digest('hex').slice(0, 12)}`;
}

/**
 * Sends a notification on `channel` with the transaction it runs in: delivered at COMMIT, to every
 * process of this deployment listening (PGlite: to this one's listeners), never if it rolls back.
 */
export async function notify(q: Queryable, channel: string, payload: string): Promise<void> {
  await q.query(NOTIFY_SQL, [channel, payload]);
}
