import type { Queryable } from '../../platform/db';
import { probeEach } from '../../platform/db/moves';

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

/**
 * The rows of these profiles, found by one index probe per profile (probeEach): `profile_id =
 * ANY(…)` was a scan of the whole table on PGlite (no statistics), even for ten ids, 27 ms per
 * batch at 100,000 rows and growing with them (docs/benchmarks.md, "Consent").
 */
const rowsOf = (columns: string) =>
  `unnest($2::uuid[]) AS p(id) ${probeEach('profile_consent', 'x.profile_id = p.id AND x.workspace_id = $1', 'c', columns)}`;

/** The recorded states of these profiles, by profile then category. */
export async function readConsentRows(
  q: Queryable,
  workspaceId: string,
  profileIds: readonly string[],
): Promise<ConsentRow[]> {
  if (profileIds.length === 0) return [];
  const { rows } = await q.query<ConsentRow>(
    `SELECT c.* FROM ${rowsOf('x.profile_id, x.category, x.granted, x.occurred_at, x.source_type, x.source_id, x.recorded_at')}
      ORDER BY c.profile_id, c.category`,
    [workspaceId, [...new Set(profileIds)]],
  );
  return rows;
}

/**
 * The recorded state of each of these (profile, category) pairs that has one, by one probe of the
 * primary key per pair: what a batch's choices are judged against. Cheaper than all of each
 * profile's rows (readConsentRows: a range per profile), the pipeline's one read per batch.
 */
export async function readConsentChoices(
  q: Queryable,
  workspaceId: string,
  pairs: ReadonlyArray<{ profileId: string; category: string }>,
): Promise<Array<Pick<ConsentRow, 'profile_id' | 'category' | 'granted' | 'occurred_at'>>> {
  if (pairs.length === 0) return [];
  const { rows } = await q.query<Pick<ConsentRow, 'profile_id' | 'category' | 'granted' | 'occurred_at'>>(
    `SELECT c.* FROM unnest($2::uuid[], $3::text[]) AS k(profile_id, category)
       ${probeEach(
         'profile_consent',
         'x.profile_id = k.profile_id AND x.category = k.category AND x.workspace_id = $1',
         'c',
         'x.profile_id, x.category, x.granted, x.occurred_at',
       )}`,
    [workspaceId, pairs.map((p) => p.profileId), pairs.map((p) => p.category)],
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
 * survivor has none for the category), then the merged-away rows go. As if one pair at a time in
 * the order given (a chain A → B → C arrives with every `to` already the final survivor): of the
 * choices moving to one survivor per category, the newest goes, the earliest pair's on a tie, and
 * the survivor's own wins a tie. Three statements however many pairs (one per pair before: a batch
 * of merged devices that all carried consent was one statement each).
 */
export async function moveConsent(
  q: Queryable,
  workspaceId: string,
  moves: ReadonlyArray<{ from: string; to: string }>,
): Promise<void> {
  if (moves.length === 0) return;
  const from = moves.map((m) => m.from);
  // One statement for the common case: no merged-away profile has a recorded choice.
  const { rows } = await q.query(`SELECT 1 FROM ${rowsOf('1')} LIMIT 1`, [workspaceId, from]);
  if (rows.length === 0) return;
  await q.query(
    `INSERT INTO profile_consent (workspace_id, profile_id, category, granted, occurred_at, source_type, source_id,
                                  recorded_at)
     SELECT DISTINCT ON (m.to_id, c.category) $1::uuid, m.to_id, c.category, c.granted, c.occurred_at, c.source_type,
            c.source_id, c.recorded_at
       FROM unnest($2::uuid[], $3::uuid[]) WITH ORDINALITY AS m(from_id, to_id, n)
       ${probeEach('profile_consent', 'x.profile_id = m.from_id AND x.workspace_id = $1', 'c')}
      ORDER BY m.to_id, c.category, c.occurred_at DESC, m.n
     ON CONFLICT (profile_id, category) DO UPDATE SET granted = excluded.granted,
       occurred_at = excluded.occurred_at, source_type = excluded.source_type, source_id = excluded.source_id,
       recorded_at = excluded.recorded_at
     WHERE excluded.occurred_at > profile_consent.occurred_at`,
    [workspaceId, from, moves.map((m) => m.to)],
  );
  await q.query(
    `DELETE FROM profile_consent WHERE (profile_id, category) IN (SELECT c.profile_id, c.category FROM ${rowsOf('x.profile_id, x.category')})`,
    [workspaceId, from],
  );
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
       SELECT c.profile_id, c.category FROM ${rowsOf('x.profile_id, x.category')} LIMIT $3)`,
    [workspaceId, [...new Set(profileIds)], limit],
  );
  return rowCount;
}
