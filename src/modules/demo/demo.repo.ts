import type { Queryable } from '../../platform/db';
import type { DemoEvent } from './demo.generator';

/**
 * Appends demo events to the event log, as the ingest path would have stored them (one statement
 * per batch, rows as one jsonb array). Events carry no API key: their lineage source is the event.
 * A message_id already stored in the workspace is skipped, so loading a dataset twice stores it
 * once. Returns how many rows were inserted.
 */
export async function insertEvents(
  q: Queryable,
  workspaceId: string,
  rows: ReadonlyArray<{ id: string; event: DemoEvent }>,
): Promise<number> {
  if (rows.length === 0) return 0;
  const json = JSON.stringify(
    rows.map(({ id, event: e }) => ({
      id,
      message_id: e.message_id,
      event_type: e.event_type,
      event_name: e.event_name,
      anonymous_id: e.anonymous_id ?? null,
      identity: e.identity ?? null,
      payload: e.payload,
      occurred_at: e.timestamp,
    })),
  );
  const { rowCount } = await q.query(
    `INSERT INTO events (id, workspace_id, message_id, event_type, event_name, anonymous_id, identity,
                         payload, occurred_at)
     SELECT r.id, $1, r.message_id, r.event_type, r.event_name, r.anonymous_id, r.identity, r.payload,
            r.occurred_at
       FROM jsonb_to_recordset($2::jsonb) AS r (id text, message_id text, event_type text, event_name text,
            anonymous_id text, identity text, payload jsonb, occurred_at timestamptz)
     ON CONFLICT (workspace_id, message_id) WHERE message_id IS NOT NULL DO NOTHING`,
    [workspaceId, json],
  );
  return rowCount;
}

/** The workspace `cdp demo` loads into by default: the bootstrapped `default` one. */
export async function findDefaultWorkspaceId(q: Queryable): Promise<string | null> {
  const { rows } = await q.query<{ id: string }>(
    `SELECT id FROM workspaces WHERE name = 'default' ORDER BY created_at, id LIMIT 1`,
  );
  return rows[0]?.id ?? null;
}

export async function workspaceExists(q: Queryable, workspaceId: string): Promise<boolean> {
  const { rows } = await q.query('SELECT 1 FROM workspaces WHERE id = $1', [workspaceId]);
  return rows.length > 0;
}
