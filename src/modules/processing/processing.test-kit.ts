import type { Db } from '../../platform/db';
import { newSortableId } from '../../platform/ids';

/** Test helpers: events written straight into the log (as the ingest path would), and waiting for the worker. */
export interface TestEvent {
  anonymous_id?: string;
  identity?: string;
  event_type: 'track' | 'page' | 'identify' | 'order';
  event_name: string;
  payload?: Record<string, unknown>;
  /** Event time (ISO); defaults to now. */
  at?: string;
}

export async function insertTestEvents(
  db: Db,
  workspaceId: string,
  events: readonly TestEvent[],
): Promise<string[]> {
  const rows = events.map((e) => ({
    id: newSortableId('evt'),
    workspace_id: workspaceId,
    event_type: e.event_type,
    event_name: e.event_name,
    anonymous_id: e.anonymous_id ?? null,
    identity: e.identity ?? null,
    payload: e.payload ?? {},
    occurred_at: e.at ?? new Date().toISOString(),
  }));
  await db.query(
    `INSERT INTO events (id, workspace_id, event_type, event_name, anonymous_id, identity, payload, occurred_at)
     SELECT id, workspace_id, event_type, event_name, anonymous_id, identity, payload, occurred_at
       FROM ROWS FROM (jsonb_to_recordset($1::jsonb) AS (id text, workspace_id uuid, event_type text, event_name text,
            anonymous_id text, identity text, payload jsonb, occurred_at timestamptz)) WITH ORDINALITY AS r
      ORDER BY ordinality`,
    [JSON.stringify(rows)],
  );
  return rows.map((r) => r.id);
}

/** Resolves once no event is waiting (processed, dead-lettered or dropped); fails after `timeoutMs`. */
export async function waitProcessed(db: Db, timeoutMs = 20_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const { rows } = await db.query<{ n: number }>(
      'SELECT count(*)::int AS n FROM events WHERE processed_at IS NULL',
    );
    if (rows[0]!.n === 0) return;
    if (Date.now() > deadline)
      throw new Error(`${rows[0]!.n} events still unprocessed after ${timeoutMs} ms`);
    await new Promise((r) => setTimeout(r, 20));
  }
}
