import type { Queryable } from '../../platform/db';

/** SQL of profile_consent: each profile's state per consent category (migrations/0041_consent.sql). */

export interface ConsentRow {
  profile_id: string;
  category: string;
  granted: boolean;
  occurred_at: Date;
  source_type: 'event' | 'api_key';
  source_id: string | null;
  recorded_at: Date;
}

export interface ConsentWrite {
  workspace_id: string;
  profile_id: string;
  category: string;
  granted: boolean;
  occurred_at: string;
  source_type: 'event' | 'api_key';
  source_id: string | null;
}

/** The recorded states of these profiles, by profile then category. */
export async function readConsentRows(
  q: Queryable,
  workspaceId: string,
  profileIds: readonly string[],
): Promise<ConsentRow[]> {
  if (profileIds.length === 0) return [];
  const { rows } = await q.query<ConsentRow>(
    `SELECT profile_id, category, granted, occurred_at, source_type, source_id, recorded_at
       FROM profile_consent WHERE workspace_id = $1 AND profile_id = ANY($2::uuid[])
      ORDER BY profile_id, category`,
    [workspaceId, profileIds],
  );
  return rows;
}

/** Writes the winning choices (the caller holds the profile's lock and decided which win). */
export async function upsertConsent(q: Queryable, rows: readonly ConsentWrite[]): Promise<void> {
  if (rows.length === 0) return;
  await q.query(
    `INSERT INTO profile_consent (workspace_id, profile_id, category, granted, occurred_at, source_type, source_id)
     SELECT * FROM unnest($1::uuid[], $2::uuid[], $3::text[], $4::boolean[], $5::timestamptz[], $6::text[], $7::text[])
     ON CONFLICT (profile_id, category) DO UPDATE SET granted = excluded.granted, occurred_at = excluded.occurred_at,
       source_type = excluded.source_type, source_id = excluded.source_id, recorded_at = now()`,
    [
      rows.map((r) => r.workspace_id),
      rows.map((r) => r.profile_id),
      rows.map((r) => r.category),
      rows.map((r) => r.granted),
      rows.map((r) => r.occurred_at),
      rows.map((r) => r.source_type),
      rows.map((r) => r.source_id),
    ],
  );
}

/**
 * Merges: each merged-away profile's choices become the survivor's where they are newer (or the
 * survivor has none for the category), then the merged-away rows go. One pair at a time, in the
 * order given (a chain A → B → C arrives with every `to` already the final survivor).
 */
export async function moveConsent(
  q: Queryable,
  workspaceId: string,
  moves: ReadonlyArray<{ from: string; to: string }>,
): Promise<void> {
  if (moves.length === 0) return;
  const from = moves.map((m) => m.from);
  // One statement for the common case: no merged-away profile has a recorded choice.
  const { rows } = await q.query<{ n: number }>(
    'SELECT count(*)::int AS n FROM profile_consent WHERE workspace_id = $1 AND profile_id = ANY($2::uuid[])',
    [workspaceId, from],
  );
  if (rows[0]!.n === 0) return;
  for (const m of moves) {
    await q.query(
      `INSERT INTO profile_consent (workspace_id, profile_id, category, granted, occurred_at, source_type, source_id,
                                    recorded_at)
       SELECT workspace_id, $3::uuid, category, granted, occurred_at, source_type, source_id, recorded_at
         FROM profile_consent WHERE workspace_id = $1 AND profile_id = $2::uuid
       ON CONFLICT (profile_id, category) DO UPDATE SET granted = excluded.granted,
         occurred_at = excluded.occurred_at, source_type = excluded.source_type, source_id = excluded.source_id,
         recorded_at = excluded.recorded_at
       WHERE excluded.occurred_at > profile_consent.occurred_at`,
      [workspaceId, m.from, m.to],
    );
  }
  await q.query('DELETE FROM profile_consent WHERE workspace_id = $1 AND profile_id = ANY($2::uuid[])', [
    workspaceId,
    from,
  ]);
}

/** Erasure: at most `limit` of these profiles' rows go; answers how many. */
export async function deleteConsent(
  q: Queryable,
  workspaceId: string,
  profileIds: readonly string[],
  limit: number | null = null,
): Promise<number> {
  if (profileIds.length === 0) return 0;
  const { rowCount } = await q.query(
    `DELETE FROM profile_consent WHERE (profile_id, category) IN (
       SELECT profile_id, category FROM profile_consent WHERE workspace_id = $1 AND profile_id = ANY($2::uuid[])
        LIMIT $3)`,
    [workspaceId, profileIds, limit],
  );
  return rowCount;
}
