import type { Queryable } from '../../platform/db';
import { movesFrom, movesParams, type ProfileMove, probeEach } from '../../platform/db/moves';

/** A profile's `group` calls to one account, folded: the earliest and the latest call's times. */
export interface MembershipWrite {
  workspaceId: string;
  groupId: string;
  profileId: string;
  first: Date;
  last: Date;
}

export interface MemberRow {
  profile_id: string;
  first_seen_at: Date;
  last_seen_at: Date;
}

const asRecords = (writes: readonly MembershipWrite[]) =>
  JSON.stringify(
    writes.map((w) => ({
      workspace_id: w.workspaceId,
      group_id: w.groupId,
      profile_id: w.profileId,
      first: w.first.toISOString(),
      last: w.last.toISOString(),
    })),
  );
const RECORDSET = `jsonb_to_recordset($1::jsonb)
  AS w(workspace_id uuid, group_id text, profile_id uuid, first timestamptz, last timestamptz)`;

/**
 * Records memberships (each key at most once, sorted by the caller so that writers lock shared rows
 * in one order), in three statements: the account is created if no call's traits made it yet (DO
 * NOTHING takes no lock on an existing row), its seen times widen only where a call lies outside
 * them (an UPDATE whose condition fails locks nothing: a busy account's row is not held for the
 * batch's whole transaction by every batch that names it), and the memberships are upserted.
 *
 * An account made here has had no traits applied, so its `traits_at` (the time of the newest call
 * whose traits were applied) is `-infinity`: the first traits written to it win whatever their time.
 * It used to be the time of one of the calls, which one depending on how the events were cut into
 * batches (found by the pipeline's equality proof, src/workflows/merge-equivalence.property.test.ts).
 */
export async function upsertMemberships(q: Queryable, writes: readonly MembershipWrite[]): Promise<void> {
  if (writes.length === 0) return;
  const records = asRecords(writes);
  await q.query(
    `INSERT INTO accounts (workspace_id, group_id, traits, traits_at, first_seen_at, last_seen_at)
     SELECT w.workspace_id, w.group_id, '{}'::jsonb, '-infinity', w.first, w.last FROM ${RECORDSET}
     ON CONFLICT (workspace_id, group_id) DO NOTHING`,
    [records],
  );
  await q.query(
    `UPDATE accounts a
        SET first_seen_at = LEAST(a.first_seen_at, s.first), last_seen_at = GREATEST(a.last_seen_at, s.last)
       FROM (SELECT w.workspace_id, w.group_id, min(w.first) AS first, max(w.last) AS last
               FROM ${RECORDSET} GROUP BY w.workspace_id, w.group_id) s
      WHERE a.workspace_id = s.workspace_id AND a.group_id = s.group_id
        AND (s.first < a.first_seen_at OR s.last > a.last_seen_at)`,
    [records],
  );
  await q.query(
    `INSERT INTO account_members AS m (workspace_id, group_id, profile_id, first_seen_at, last_seen_at)
     SELECT w.workspace_id, w.group_id, w.profile_id, w.first, w.last FROM ${RECORDSET}
     ON CONFLICT (workspace_id, group_id, profile_id) DO UPDATE
        SET first_seen_at = LEAST(m.first_seen_at, excluded.first_seen_at),
            last_seen_at = GREATEST(m.last_seen_at, excluded.last_seen_at)`,
    [records],
  );
}

/**
 * A merge: the merged-away profiles' memberships become their survivors' (seen times widened where
 * the survivor was a member already), in one statement. Found by one index probe per move.
 */
export async function moveMemberships(
  q: Queryable,
  workspaceId: string,
  moves: readonly ProfileMove[],
): Promise<void> {
  if (moves.length === 0) return;
  await q.query(
    `WITH found AS (
       SELECT r.group_id, r.profile_id, m.to_id FROM ${movesFrom(2)}
       ${probeEach('account_members', 'x.workspace_id = $1 AND x.profile_id = m.from_id', 'r', 'x.group_id, x.profile_id')}
     ), moved AS (
       DELETE FROM account_members am USING found f
        WHERE am.workspace_id = $1 AND am.group_id = f.group_id AND am.profile_id = f.profile_id
       RETURNING am.group_id, f.to_id, am.first_seen_at, am.last_seen_at
     )
     INSERT INTO account_members AS a (workspace_id, group_id, profile_id, first_seen_at, last_seen_at)
     SELECT $1::uuid, group_id, to_id, min(first_seen_at), max(last_seen_at) FROM moved
      GROUP BY group_id, to_id
     ON CONFLICT (workspace_id, group_id, profile_id) DO UPDATE
        SET first_seen_at = LEAST(a.first_seen_at, excluded.first_seen_at),
            last_seen_at = GREATEST(a.last_seen_at, excluded.last_seen_at)`,
    [workspaceId, ...movesParams(moves)],
  );
}

/** Erasure: the profiles' memberships go (the accounts stay: they describe a company, not the person). */
export async function deleteMemberships(
  q: Queryable,
  workspaceId: string,
  profileIds: readonly string[],
): Promise<number> {
  if (profileIds.length === 0) return 0;
  const { rows } = await q.query<{ n: number }>(
    `WITH gone AS (
       DELETE FROM account_members WHERE workspace_id = $1 AND profile_id = ANY($2::uuid[]) RETURNING 1
     ) SELECT count(*)::int AS n FROM gone`,
    [workspaceId, profileIds],
  );
  return rows[0]?.n ?? 0;
}

/** The account's most recently seen members, at most `limit`. */
export async function listMembers(
  q: Queryable,
  workspaceId: string,
  groupId: string,
  limit: number,
): Promise<MemberRow[]> {
  const { rows } = await q.query<MemberRow>(
    `SELECT profile_id, first_seen_at, last_seen_at FROM account_members
      WHERE workspace_id = $1 AND group_id = $2
      ORDER BY last_seen_at DESC, profile_id LIMIT $3`,
    [workspaceId, groupId, limit],
  );
  return rows;
}

/** How many members the account has, counted up to `cap` (a huge account is not counted whole). */
export async function countMembers(
  q: Queryable,
  workspaceId: string,
  groupId: string,
  cap: number,
): Promise<number> {
  const { rows } = await q.query<{ n: number }>(
    `SELECT count(*)::int AS n FROM (SELECT 1 FROM account_members
      WHERE workspace_id = $1 AND group_id = $2 LIMIT $3) c`,
    [workspaceId, groupId, cap],
  );
  return rows[0]?.n ?? 0;
}

/** The accounts these profiles are members of, with the account's traits (the access export). */
export async function membershipsOfProfiles(
  q: Queryable,
  workspaceId: string,
  profileIds: readonly string[],
): Promise<
  Array<{ group_id: string; traits: Record<string, unknown>; first_seen_at: Date; last_seen_at: Date }>
> {
  const { rows } = await q.query<{
    group_id: string;
    traits: Record<string, unknown>;
    first_seen_at: Date;
    last_seen_at: Date;
  }>(
    `SELECT m.group_id, a.traits, min(m.first_seen_at) AS first_seen_at, max(m.last_seen_at) AS last_seen_at
       FROM account_members m JOIN accounts a ON a.workspace_id = m.workspace_id AND a.group_id = m.group_id
      WHERE m.workspace_id = $1 AND m.profile_id = ANY($2::uuid[])
      GROUP BY m.group_id, a.traits ORDER BY min(m.first_seen_at), m.group_id`,
    [workspaceId, profileIds],
  );
  return rows;
}
