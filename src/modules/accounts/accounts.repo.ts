import type { Queryable } from '../../platform/db';

/** One account's traits as a call set them, at the call's time (ISO). */
export interface AccountWrite {
  groupId: string;
  traits: Record<string, unknown>;
  at: string;
}

export interface AccountRow {
  seq: number;
  group_id: string;
  traits: Record<string, unknown>;
  traits_at: Date;
  first_seen_at: Date;
  last_seen_at: Date;
  created_at: Date;
  updated_at: Date;
}

const ACCOUNT_COLUMNS =
  'a.seq, a.group_id, a.traits, a.traits_at, a.first_seen_at, a.last_seen_at, a.created_at, a.updated_at';

/**
 * Merges traits into accounts, one statement for all of them (each group id at most once: the
 * caller folds repeats, and sorts them so two writers lock shared rows in one order). Top-level
 * keys, newer call wins: a write newer than the account's newest replaces the keys it names, an
 * older one only adds keys the account lacks. A write that would take the account's traits past
 * `maxBytes` as JSON leaves the traits as they were; its time still widens the account's seen times.
 */
export async function upsertAccounts(
  q: Queryable,
  workspaceId: string,
  writes: readonly AccountWrite[],
  maxBytes: number,
): Promise<void> {
  if (writes.length === 0) return;
  const tooBig = `octet_length((a.traits || excluded.traits)::text) > $3`;
  await q.query(
    `INSERT INTO accounts AS a (workspace_id, group_id, traits, traits_at, first_seen_at, last_seen_at)
     SELECT $1::uuid, w.group_id, w.traits, w.at, w.at, w.at
       FROM jsonb_to_recordset($2::jsonb) AS w(group_id text, traits jsonb, at timestamptz)
     ON CONFLICT (workspace_id, group_id) DO UPDATE
        SET traits = CASE WHEN ${tooBig} THEN a.traits
                          WHEN excluded.traits_at >= a.traits_at THEN a.traits || excluded.traits
                          ELSE excluded.traits || a.traits END,
            traits_at = CASE WHEN ${tooBig} THEN a.traits_at ELSE GREATEST(a.traits_at, excluded.traits_at) END,
            updated_at = CASE WHEN ${tooBig} THEN a.updated_at ELSE now() END,
            first_seen_at = LEAST(a.first_seen_at, excluded.first_seen_at),
            last_seen_at = GREATEST(a.last_seen_at, excluded.last_seen_at)`,
    [
      workspaceId,
      JSON.stringify(writes.map((w) => ({ group_id: w.groupId, traits: w.traits, at: w.at }))),
      maxBytes,
    ],
  );
}

export async function findAccount(
  q: Queryable,
  workspaceId: string,
  groupId: string,
): Promise<AccountRow | null> {
  const { rows } = await q.query<AccountRow>(
    `SELECT ${ACCOUNT_COLUMNS} FROM accounts a WHERE a.workspace_id = $1 AND a.group_id = $2`,
    [workspaceId, groupId],
  );
  return rows[0] ?? null;
}

/**
 * A page of the workspace's accounts in creation order (keyset `seq`), `limit` rows; with
 * `profileId`, only the accounts that profile is a member of, found from its memberships (a
 * profile is in a few accounts, a workspace may hold many).
 */
export async function listAccounts(
  q: Queryable,
  workspaceId: string,
  opts: { profileId: string | null; after: number | null; limit: number },
): Promise<AccountRow[]> {
  const from =
    opts.profileId === null
      ? 'accounts a WHERE a.workspace_id = $1'
      : `account_members m
         JOIN accounts a ON a.workspace_id = m.workspace_id AND a.group_id = m.group_id
        WHERE m.workspace_id = $1 AND m.profile_id = $4`;
  const params: unknown[] = [workspaceId, opts.after, opts.limit];
  if (opts.profileId !== null) params.push(opts.profileId);
  const { rows } = await q.query<AccountRow>(
    `SELECT ${ACCOUNT_COLUMNS} FROM ${from} AND ($2::bigint IS NULL OR a.seq > $2::bigint)
      ORDER BY a.seq LIMIT $3`,
    params,
  );
  return rows;
}
