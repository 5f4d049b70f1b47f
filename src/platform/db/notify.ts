import type { Queryable } from './port';

/**
 * Sends a notification on `channel` with the transaction it runs in: delivered at COMMIT, to every
 * process listening (PGlite: to this one's listeners), never if it rolls back.
 */
export async function notify(q: Queryable, channel: string, payload: string): Promise<void> {
  await q.query('SELECT pg_notify($1, $2)', [channel, payload]);
}
