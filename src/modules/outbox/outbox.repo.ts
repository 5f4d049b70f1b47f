import type { Queryable } from '../../platform/db';
import { newSortableId } from '../../platform/ids';

export type OutboxType =
  | 'profile.created'
  | 'profile.merged'
  | 'order.completed'
  | 'churn.risk_escalated'
  | 'segment.entered'
  | 'segment.exited';

export interface OutboxRow {
  seq: number;
  id: string;
  workspace_id: string;
  type: OutboxType;
  data: Record<string, unknown>;
  created_at: Date;
}

/**
 * Records a fact for downstream consumers. Call it with the transaction that causes the fact, so the
 * fact exists if and only if the change committed. Returns the fact's public id (evt_…).
 */
export async function writeOutbox(
  q: Queryable,
  workspaceId: string,
  type: OutboxType,
  data: Record<string, unknown>,
): Promise<string> {
  const id = newSortableId('evt');
  await q.query('INSERT INTO outbox (id, workspace_id, type, data) VALUES ($1, $2, $3, $4::jsonb)', [
    id,
    workspaceId,
    type,
    JSON.stringify(data),
  ]);
  return id;
}

export interface OutboxFact {
  workspaceId: string;
  type: OutboxType;
  data: Record<string, unknown>;
}

/**
 * Records many facts in one statement (the processing worker writes a whole batch's facts at once);
 * same contract as writeOutbox: call it with the transaction that causes them. Ids keep list order.
 */
export async function writeOutboxMany(q: Queryable, facts: readonly OutboxFact[]): Promise<string[]> {
  if (facts.length === 0) return [];
  const rows = facts.map((f) => ({
    id: newSortableId('evt'),
    workspace_id: f.workspaceId,
    type: f.type,
    data: f.data,
  }));
  await q.query(
    `INSERT INTO outbox (id, workspace_id, type, data)
     SELECT id, workspace_id, type, data
       FROM ROWS FROM (jsonb_to_recordset($1::jsonb) AS (id text, workspace_id uuid, type text, data jsonb))
            WITH ORDINALITY AS r(id, workspace_id, type, data, n)
      ORDER BY n`,
    [JSON.stringify(rows)],
  );
  return rows.map((r) => r.id);
}

/** Facts after `afterSeq` in commit-independent seq order (consumers keep their own position). */
export async function readOutbox(
  q: Queryable,
  workspaceId: string,
  afterSeq: number,
  limit: number,
): Promise<OutboxRow[]> {
  const { rows } = await q.query<OutboxRow>(
    `SELECT seq, id, workspace_id, type, data, created_at FROM outbox
     WHERE workspace_id = $1 AND seq > $2 ORDER BY seq LIMIT $3`,
    [workspaceId, afterSeq, limit],
  );
  return rows;
}
