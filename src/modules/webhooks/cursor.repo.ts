import type { Queryable } from '../../platform/db';
import type { OutboxCursor } from '../outbox';

/**
 * The fan-out position of a workspace in its outbox, locked for this transaction so two processes
 * never fan out the same facts: the second waits, then reads on from where the first left it.
 */
export async function lockCursor(q: Queryable, workspaceId: string): Promise<OutboxCursor> {
  await q.query(
    'INSERT INTO webhook_cursors (workspace_id) VALUES ($1) ON CONFLICT (workspace_id) DO NOTHING',
    [workspaceId],
  );
  const { rows } = await q.query<{ snap: string; next: string | null; pos: string | number }>(
    `SELECT snap::text AS snap, next_snap::text AS next, pos
     FROM webhook_cursors WHERE workspace_id = $1 FOR UPDATE`,
    [workspaceId],
  );
  const r = rows[0]!;
  return { snap: r.snap, next: r.next, pos: Number(r.pos) };
}

export async function saveCursor(q: Queryable, workspaceId: string, c: OutboxCursor): Promise<void> {
  await q.query(
    'UPDATE webhook_cursors SET snap = $2::pg_snapshot, next_snap = $3::pg_snapshot, pos = $4 WHERE workspace_id = $1',
    [workspaceId, c.snap, c.next, c.pos],
  );
}

/**
 * The snapshot the fan-out has read every fact of, or null before its first run (nothing read but the
 * facts of before migration 0014). Read without a lock: the cursor only moves forward, so a stale
 * answer is a cautious one.
 */
export async function readCursorSnapshot(q: Queryable, workspaceId: string): Promise<string | null> {
  const { rows } = await q.query<{ snap: string }>(
    'SELECT snap::text AS snap FROM webhook_cursors WHERE workspace_id = $1',
    [workspaceId],
  );
  return rows[0]?.snap ?? null;
}

/**
 * Puts the workspace's fan-out at the outbox's current end: every fact committed before this
 * transaction's snapshot counts as read, and the next fan-out reads only what commits later (a fact
 * of a transaction still open now included, as any cursor would). Called when a workspace that had
 * no enabled subscription gets one: the facts before it were owed to no receiver.
 */
export async function startCursorAtEnd(q: Queryable, workspaceId: string): Promise<void> {
  await q.query(
    `INSERT INTO webhook_cursors (workspace_id, snap, next_snap, pos) VALUES ($1, pg_current_snapshot(), NULL, 0)
     ON CONFLICT (workspace_id) DO UPDATE SET snap = EXCLUDED.snap, next_snap = NULL, pos = 0`,
    [workspaceId],
  );
}
