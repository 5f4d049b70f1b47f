import type { Queryable } from '../../platform/db';
import {
  type ExportFormat,
  type ExportPage,
  type ExportWindow,
  exportLineSql,
  pageParams,
  readPage,
} from '../../platform/db/export-lines';
import { PROFILE_EXPORT_FIELDS } from '../profiles';

/**
 * A segment's members as a workspace export reads them (GET /tenant/exports/segments/{id}/members):
 * in the order they entered (the membership's seq, segment_memberships_page_idx), the same order as
 * GET /tenant/segments/{id}/members, each the member's profile as the profiles module writes it. The
 * caller has checked that the segment is the workspace's.
 */

/**
 * The next `limit` memberships after `afterSeq`, as the lines of the members that entered within the
 * window (a member merged or erased since it was counted is left out). The window filters the rows
 * read rather than bounding the read (no index has entered_at): each statement reads at most
 * `limit` rows whatever the window, so a narrow window costs a walk over the whole membership in
 * short statements, never one long one.
 */
export async function exportMembersPage(
  q: Queryable,
  workspaceId: string,
  segmentId: string,
  afterSeq: number,
  window: ExportWindow,
  format: ExportFormat,
  limit: number,
): Promise<ExportPage<number>> {
  const p = pageParams();
  const page = await readPage(
    q,
    `SELECT CASE WHEN m.entered_at >= ${p.ref(window.since ?? '-infinity', 'timestamptz')}
                  AND m.entered_at < ${p.ref(window.until ?? 'infinity', 'timestamptz')}
             THEN (SELECT ${exportLineSql(PROFILE_EXPORT_FIELDS, format)} FROM profiles p
                    WHERE p.workspace_id = ${p.ref(workspaceId, 'uuid')} AND p.id = m.profile_id
                      AND p.merged_into IS NULL)
             END AS line, NULL::text AS at, m.seq
       FROM segment_memberships m
      WHERE m.segment_id = ${p.ref(segmentId, 'text')} AND m.seq > ${p.ref(afterSeq, 'bigint')}
      ORDER BY m.seq LIMIT ${p.ref(limit, 'integer')}`,
    p,
  );
  return { text: page.text, read: page.read, last: page.last?.seq ?? null };
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
