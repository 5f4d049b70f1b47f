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
