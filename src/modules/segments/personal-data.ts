import type { Db } from '../../platform/db';
import { iso } from '../../platform/http/envelope';
import {
  type DataSubject,
  deletingSlice,
  type PersonalDataOwner,
  pagedRows,
} from '../../platform/personal-data';
import { changesOfProfiles, deleteChangesOfProfiles, membershipsOfProfiles } from './membership.repo';
import { eraseProfilesFromSegments } from './profile-hooks';

/**
 * A person's place in the workspace's segments: current memberships, the log of entries and exits,
 * and pending refresh marks. Segment definitions are the operators' and name nobody.
 */

const EXPORT_PAGE = 1_000;

async function* membershipsOf(db: Db, s: DataSubject): AsyncIterable<unknown> {
  for (const m of await membershipsOfProfiles(db, s.workspaceId, s.profileIds)) {
    yield { segment_id: m.segment_id, name: m.name, profile_id: m.profile_id, entered_at: iso(m.entered_at) };
  }
}

async function* changesOf(db: Db, s: DataSubject): AsyncIterable<unknown> {
  const rows = pagedRows(
    EXPORT_PAGE,
    (after: number | null) => changesOfProfiles(db, s.workspaceId, s.profileIds, after ?? 0, EXPORT_PAGE),
    (last) => Number(last.seq),
  );
  for await (const c of rows)
    yield { segment_id: c.segment_id, profile_id: c.profile_id, change: c.change, at: iso(c.at) };
}

export const segmentsPersonalData: PersonalDataOwner = {
  module: 'segments',
  tables: [
    {
      table: 'segment_memberships',
      holds: 'the segments a profile is in now, and since when',
      kept: { as: 'as long as the profile is in the segment' },
      exported: { section: 'segment_memberships' },
    },
    {
      table: 'segment_changes',
      holds: "a profile's entries into and exits from segments, with their times",
      kept: { setting: 'segment_changes_days' },
      exported: { section: 'segment_changes' },
    },
    {
      table: 'segment_dirty_profiles',
      holds: 'profile ids waiting for a membership refresh',
      kept: { as: 'until the next refresh (seconds)' },
      exported: { not: 'a work list of ids, nothing about the person' },
    },
  ],
  async erase(tx, s) {
    const { memberships, changes } = await eraseProfilesFromSegments(tx, s.workspaceId, s.profileIds);
    return { segment_memberships: memberships, segment_changes: changes };
  },
  slices: [
    deletingSlice('segment_changes', (q, s, limit) =>
      deleteChangesOfProfiles(q, s.workspaceId, s.profileIds, limit),
    ),
  ],
  sections: [
    { name: 'segment_memberships', rows: membershipsOf },
    { name: 'segment_changes', rows: changesOf },
  ],
};
