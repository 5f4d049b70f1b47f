import type { Db } from '../../platform/db';
import { iso } from '../../platform/http/envelope';
import {
  type DataSubject,
  deletingSlice,
  type PersonalDataOwner,
  pagedRows,
} from '../../platform/personal-data';
import { deleteConsent, readConsentRows } from './consent.repo';
import { deleteExpiredLineage, deleteLineage, lineagePage } from './lineage.repo';
import { getProfile, presentLineage } from './profiles.read';
import * as repo from './profiles.repo';

/**
 * The profile rows and their lineage: a person's fields, attributes, scores on the row, and every
 * field-level change. The erasure log (`profile_erasures`) keeps ids and counts only.
 */

const EXPORT_PAGE = 1_000;

async function* lineageOf(db: Db, s: DataSubject): AsyncIterable<unknown> {
  const rows = pagedRows(
    EXPORT_PAGE,
    (after: number | null) => lineagePage(db, s.workspaceId, s.profileIds, after ?? 0, EXPORT_PAGE),
    (last) => Number(last.seq),
  );
  for await (const r of rows) yield { profile_id: r.profile_id, ...presentLineage(r) };
}

/** The recorded consent choices of the person's profiles: one row per profile and category. */
async function* consentOf(db: Db, s: DataSubject): AsyncIterable<unknown> {
  for (const r of await readConsentRows(db, s.workspaceId, s.profileIds)) {
    yield {
      profile_id: r.profile_id,
      category: r.category,
      granted: r.granted,
      updated_at: iso(r.occurred_at),
      source_type: r.source_type,
      source_id: r.source_id,
    };
  }
}

/** The live profile as GET /tenant/profiles/{id} shows it, and the ids merged into it: one row. */
async function* profileOf(db: Db, s: DataSubject): AsyncIterable<unknown> {
  const [survivor, ...merged] = s.profileIds;
  if (survivor === undefined) return;
  yield { ...(await getProfile(db, s.workspaceId, survivor)), merged_profile_ids: merged };
}

export const profilesPersonalData: PersonalDataOwner = {
  module: 'profiles',
  tables: [
    {
      table: 'profiles',
      holds:
        "a person's e-mail, names, attributes, spend and scores; merged-away rows keep their id only to resolve it",
      kept: { as: 'until the person is erased' },
      exported: { section: 'profile' },
    },
    {
      table: 'profile_lineage',
      holds: 'every field-level change of a profile, old and new values',
      kept: { setting: 'lineage_days' },
      exported: { section: 'lineage' },
    },
    {
      table: 'profile_consent',
      holds: "a profile's choice per consent category, its time and source (an event or an API key)",
      kept: { as: 'as long as the profile: a choice stands until it is changed or the person is erased' },
      exported: { section: 'consent' },
    },
  ],
  // Last of every owner: the rows other tables point at (nodes, scores cascade; orders are unlinked).
  async erase(tx, s) {
    const lineage = await deleteLineage(tx, s.workspaceId, s.profileIds);
    const consent = await deleteConsent(tx, s.workspaceId, s.profileIds);
    const profiles = await repo.deleteProfiles(tx, s.workspaceId, s.profileIds);
    return { profile_lineage: lineage, profile_consent: consent, profiles };
  },
  slices: [
    deletingSlice('profile_lineage', (q, s, limit) => deleteLineage(q, s.workspaceId, s.profileIds, limit)),
  ],
  sections: [
    { name: 'profile', rows: profileOf },
    { name: 'lineage', rows: lineageOf },
    { name: 'consent', rows: consentOf },
  ],
  sweeps: [{ setting: 'lineage_days', tables: ['profile_lineage'], sweep: deleteExpiredLineage }],
};
