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
  /** The writing transaction's id (text: xid8 is 64-bit). */
  xid: string;
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

/**
 * The profile a fact is about: `profile_id`, or the survivor of a merge (`primary_profile_id`), if
 * any. Deliveries of one subscription about one profile go out in this order, and an erasure finds
 * the person's facts by it (the index `outbox_subject_idx`, migration 0035, is this expression).
 */
export function factSubject(data: Readonly<Record<string, unknown>>): string | null {
  const id = data.profile_id ?? data.primary_profile_id;
  return typeof id === 'string' ? id : null;
}

/** The SQL of factSubject, exactly as the index is built (so the planner can use it). */
const SUBJECT_SQL = "COALESCE(data ->> 'profile_id', data ->> 'primary_profile_id')";

/**
 * Erasure: deletes at most `limit` facts about these profiles (the survivor and every profile
 * merged into it), answering how many went. A fact not read yet by a consumer simply never is.
 */
export async function deleteFactsAbout(
  q: Queryable,
  workspaceId: string,
  profileIds: readonly string[],
  limit: number | null = null,
): Promise<number> {
  if (profileIds.length === 0) return 0;
  const { rowCount } = await q.query(
    `DELETE FROM outbox WHERE seq IN (
       SELECT seq FROM outbox WHERE workspace_id = $1 AND ${SUBJECT_SQL} = ANY($2::text[]) LIMIT $3)`,
    [workspaceId, profileIds, limit],
  );
  return rowCount;
}

/** The facts about these profiles, oldest first, a page at a time (the access export). */
export async function readFactsAbout(
  q: Queryable,
  workspaceId: string,
  profileIds: readonly string[],
  afterSeq: number,
  limit: number,
): Promise<OutboxRow[]> {
  const { rows } = await q.query<OutboxRow>(
    `SELECT seq, xid::text AS xid, id, workspace_id, type, data, created_at FROM outbox
      WHERE workspace_id = $1 AND ${SUBJECT_SQL} = ANY($2::text[]) AND seq > $3 ORDER BY seq LIMIT $4`,
    [workspaceId, profileIds, afterSeq, limit],
  );
  return rows.map((r) => ({ ...r, seq: Number(r.seq) }));
}

/** The channel a transaction that wrote facts notifies at commit, with its workspace id as payload. */
export const OUTBOX_CHANNEL = 'cdp_outbox';

/**
 * A reader's place in a workspace's facts. `snap` is the snapshot it has read every fact of; the
 * facts after it are those a newer snapshot (`next`) sees and `snap` does not, read in seq order in
 * batches, `pos` being the seq of the last one done. A fact's xid is the transaction that wrote it
 * (migration 0014 says why seq alone is not enough). Within one such set seq is the order to keep:
 * two facts about one profile come from transactions that held its lock one after the other, so the
 * later fact has the higher seq even when its transaction has the lower xid.
 */
export interface OutboxCursor {
  snap: string;
  next: string | null;
  pos: number;
}

/** Before the first fact: the snapshot '1:1:' sees only xid 0 (facts read before migration 0014). */
export const OUTBOX_START: OutboxCursor = { snap: '1:1:', next: null, pos: 0 };

/**
 * The next facts after `cursor` (at most `limit`) and the cursor after them. Every fact a snapshot
 * sees is visible to a statement that runs later, so nothing it sees is missed; a fact of a
 * transaction still open when it was taken is seen by a later one. Facts are never read twice.
 */
export async function readOutbox(
  q: Queryable,
  workspaceId: string,
  cursor: OutboxCursor,
  limit: number,
): Promise<{ facts: OutboxRow[]; cursor: OutboxCursor }> {
  const next =
    cursor.next ?? (await q.query<{ s: string }>('SELECT pg_current_snapshot()::text AS s')).rows[0]!.s;
  const { rows } = await q.query<OutboxRow>(
    `SELECT seq, xid::text AS xid, id, workspace_id, type, data, created_at FROM outbox
     WHERE workspace_id = $1
       AND xid >= pg_snapshot_xmin($2::pg_snapshot) AND xid < pg_snapshot_xmax($3::pg_snapshot)
       AND seq > $4 AND pg_visible_in_snapshot(xid, $3::pg_snapshot)
       AND NOT pg_visible_in_snapshot(xid, $2::pg_snapshot)
     ORDER BY seq LIMIT $5`,
    [workspaceId, cursor.snap, next, cursor.pos, limit],
  );
  const facts = rows.map((r) => ({ ...r, seq: Number(r.seq) }));
  const last = facts.at(-1);
  return {
    facts,
    cursor:
      facts.length < limit || !last
        ? { snap: next, next: null, pos: OUTBOX_START.pos }
        : { snap: cursor.snap, next, pos: last.seq },
  };
}
