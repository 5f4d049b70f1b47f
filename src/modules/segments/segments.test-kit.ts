import { waitUntil } from '../../../test/wait';
import type { Db } from '../../platform/db';
import type { EvalProfile } from './query';

/** Test helpers: waiting for membership to settle, and reading a workspace the way evaluateSegment sees it. */

/**
 * Resolves once every event is processed (has left event_backlog), no profile waits for a refresh
 * and no full evaluation is pending: membership then reflects every committed change. Fails after
 * `timeoutMs`.
 */
export async function waitSegmentsSettled(db: Db, timeoutMs = 20_000): Promise<number> {
  const t0 = Date.now();
  await waitUntil(
    async () => {
      const { rows } = await db.query<{ n: number }>(
        `SELECT (SELECT count(*) FROM event_backlog)
              + (SELECT count(*) FROM segment_dirty_profiles)
              + (SELECT count(*) FROM segments WHERE full_after_seq IS NOT NULL) AS n`,
      );
      return Number(rows[0]!.n) === 0;
    },
    { what: 'segment membership to settle (events processed, refreshes done)', timeoutMs },
  );
  return Date.now() - t0;
}

/** The live profiles of a workspace with their events and orders, as evaluateSegment takes them. */
export async function readEvalProfiles(db: Db, workspaceId: string): Promise<EvalProfile[]> {
  const { rows: profiles } = await db.query<Omit<EvalProfile, 'events' | 'orders'>>(
    `SELECT id, email, first_name, last_name, rfm_segment, total_spend, predicted_clv, churn_risk_score,
            created_at, updated_at, attributes
       FROM profiles WHERE workspace_id = $1 AND merged_into IS NULL ORDER BY seq`,
    [workspaceId],
  );
  const { rows: events } = await db.query<{
    profile_id: string;
    type: string;
    name: string;
    payload: unknown;
    occurred_at: Date;
  }>(
    `SELECT ep.profile_id, ep.event_type AS type, ep.event_name AS name, e.payload, ep.occurred_at
       FROM event_profiles ep JOIN events e ON e.seq = ep.seq WHERE ep.workspace_id = $1`,
    [workspaceId],
  );
  const { rows: orders } = await db.query<{
    profile_id: string;
    status: string;
    total: number;
    currency: string;
    items: unknown;
    occurred_at: Date;
  }>(
    `SELECT profile_id, status, total, currency, items, occurred_at
       FROM orders WHERE workspace_id = $1 AND profile_id IS NOT NULL`,
    [workspaceId],
  );
  return profiles.map((p) => ({
    ...p,
    events: events.filter((e) => e.profile_id === p.id),
    orders: orders.filter((o) => o.profile_id === p.id),
  }));
}

/** The current members of a segment, sorted. */
export async function membersOf(db: Db, segmentId: string): Promise<string[]> {
  const { rows } = await db.query<{ profile_id: string }>(
    'SELECT profile_id FROM segment_memberships WHERE segment_id = $1 ORDER BY profile_id',
    [segmentId],
  );
  return rows.map((r) => r.profile_id);
}

/** Segments whose stored member_count differs from their membership rows (should be none). */
export async function miscountedSegments(
  db: Db,
): Promise<Array<{ id: string; member_count: number; n: number }>> {
  const { rows } = await db.query<{ id: string; member_count: number; n: number }>(
    `SELECT s.id, s.member_count, (SELECT count(*)::int FROM segment_memberships m WHERE m.segment_id = s.id) AS n
       FROM segments s`,
  );
  return rows.filter((r) => r.member_count !== r.n);
}
