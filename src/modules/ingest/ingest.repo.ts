import type { Queryable } from '../../platform/db';

/** One event as appended to the log. Rows of one group commit may belong to several workspaces. */
export interface NewEventRow {
  id: string;
  workspace_id: string;
  message_id: string | null;
  event_type: string;
  event_name: string;
  anonymous_id: string | null;
  identity: string | null;
  payload: Record<string, unknown>;
  /** ISO 8601. */
  occurred_at: string;
  /** ISO 8601. */
  received_at: string;
  api_key_id: string;
}

export interface MessageKey {
  workspace_id: string;
  message_id: string;
}

/**
 * Appends rows in one statement, so they commit (or fail) together. Rows travel as one jsonb array
 * expanded by jsonb_to_recordset: on both engines this measured faster than unnest() of eleven
 * typed arrays (PGlite 58k vs 38k rows/s, PostgreSQL 70k vs 54k for 1000-row statements) and needs
 * one parameter however many rows. A row whose message_id already exists in its workspace is
 * skipped (also when a concurrent transaction inserts it first: ON CONFLICT waits for that one).
 * Returns how many rows were inserted.
 */
export async function insertEvents(q: Queryable, rows: readonly NewEventRow[]): Promise<number> {
  const res = await q.query(
    `INSERT INTO events (id, workspace_id, message_id, event_type, event_name, anonymous_id, identity,
                         payload, occurred_at, received_at, api_key_id)
     SELECT id, workspace_id, message_id, event_type, event_name, anonymous_id, identity,
            payload, occurred_at, received_at, api_key_id
       FROM jsonb_to_recordset($1::jsonb) AS r(id text, workspace_id uuid, message_id text,
            event_type text, event_name text, anonymous_id text, identity text, payload jsonb,
            occurred_at timestamptz, received_at timestamptz, api_key_id text)
     ON CONFLICT (workspace_id, message_id) WHERE message_id IS NOT NULL DO NOTHING`,
    [JSON.stringify(rows)],
  );
  return res.rowCount;
}

/** The stored event id of each (workspace, message_id) that exists. */
export async function findEventIdsByMessageId(
  q: Queryable,
  keys: readonly MessageKey[],
): Promise<Array<MessageKey & { id: string }>> {
  if (keys.length === 0) return [];
  const { rows } = await q.query<MessageKey & { id: string }>(
    `SELECT e.workspace_id, e.message_id, e.id
       FROM jsonb_to_recordset($1::jsonb) AS k(workspace_id uuid, message_id text)
       JOIN events e ON e.workspace_id = k.workspace_id AND e.message_id = k.message_id`,
    [JSON.stringify(keys)],
  );
  return rows;
}
