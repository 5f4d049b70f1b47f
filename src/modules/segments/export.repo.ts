import type { Db, Queryable } from '../../platform/db';
import { type ExportWindow, inIndexOrder } from '../../platform/db/export-lines';

/**
 * A segment's members as a workspace export reads them (GET /tenant/exports/segments/{id}/members):
 * in the order they entered (the membership's seq, segment_memberships_page_idx), the same order as
 * GET /tenant/segments/{id}/members. The caller has checked that the segment is the workspace's.
 */

/**
 * The next `limit` memberships after `afterSeq`, and of them the profiles that entered within the
 * window, in order. The window filters the rows read rather than bounding the read (no index has
 * entered_at): each statement reads at most `limit` rows whatever the window, so a narrow window
 * costs a walk over the whole membership in short statements, never one long one.
 */
export async function exportMembersPage(
  db: Db,
  segmentId: string,
  afterSeq: number,
  window: ExportWindow,
  limit: number,
): Promise<{ profileIds: string[]; last: number | null; read: number }> {
  // In index order: the aggregate's own ORDER BY sorts the page's rows only.
  const { rows } = await inIndexOrder(db, (q) =>
    q.query<{ ids: string[] | null; last: number | null; read: number }>(
      `WITH page AS MATERIALIZED (
         SELECT seq, profile_id, entered_at FROM segment_memberships
          WHERE segment_id = $1 AND seq > $2 ORDER BY seq LIMIT $3)
       SELECT (SELECT array_agg(profile_id::text ORDER BY seq) FROM page
                WHERE entered_at >= $4::timestamptz AND entered_at < $5::timestamptz) AS ids,
              (SELECT max(seq) FROM page) AS last, (SELECT count(*) FROM page)::int AS read`,
      [segmentId, afterSeq, limit, window.since ?? '-infinity', window.until ?? 'infinity'],
    ),
  );
  const r = rows[0]!;
  return { profileIds: r.ids ?? [], last: r.last, read: r.read };
}

/** Where member `profileId` stands in the segment's order, or null when it is not a member (now). */
export async function findMemberSeq(
  q: Queryable,
  segmentId: string,
  profileId: string,
): Promise<number | null> {
  const { rows } = await q.query<{ seq: number }>(
    'SELECT seq FROM segment_memberships WHERE segment_id = $1 AND profile_id = $2',
    [segmentId, profileId],
  );
  return rows[0]?.seq ?? null;
}
