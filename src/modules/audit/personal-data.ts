import type { Db } from '../../platform/db';
import { iso } from '../../platform/http/envelope';
import type { DataSubject, PersonalDataOwner } from '../../platform/personal-data';
import * as repo from './audit.repo';

/** Entries read per page by the access export. */
const EXPORT_PAGE = 500;

/**
 * What the trail holds about a person, in the form the access export carries it: what was done to
 * their profile, when, with which answer, and what the request carried about them. Who did it (the
 * staff member's key, session, address and browser) is the workspace's, not the person's, and is
 * left out.
 */
async function* entriesAboutSubject(db: Db, subject: DataSubject): AsyncIterable<unknown> {
  let after: { at: Date; id: string } | null = null;
  for (;;) {
    const rows = await repo.entriesAbout(db, subject.workspaceId, subject.profileIds, after, EXPORT_PAGE);
    for (const r of rows) {
      yield {
        id: r.id,
        time: iso(r.created_at),
        action: r.action,
        target: { type: r.target_type, id: r.target_id },
        status: r.status,
        request_id: r.request_id,
        diff: r.diff ?? null,
      };
    }
    if (rows.length < EXPORT_PAGE) return;
    const last = rows[rows.length - 1]!;
    after = { at: last.created_at, id: last.id };
  }
}

/**
 * The audit module's personal data (src/platform/personal-data.ts): the diffs of entries about a
 * profile (a profile write's traits) are scrubbed when the profile is erased; the entry itself (who
 * did what, when) stays until its retention (`retention.audit_days`, 400 days by default) ends.
 */
export const auditPersonalData: PersonalDataOwner = {
  module: 'audit',
  tables: [
    {
      table: 'audit_log',
      holds:
        'what a request about a profile carried (a profile write’s identifiers and traits, in `diff`), found by its target profile id; the client address and user agent of the staff member who acted',
      kept: { setting: 'audit_days' },
      exported: { section: 'audit' },
    },
  ],
  async erase(tx, subject) {
    return { audit_log: await repo.scrubProfileDiffs(tx, subject.workspaceId, subject.profileIds) };
  },
  sections: [{ name: 'audit', rows: entriesAboutSubject }],
  sweeps: [
    {
      setting: 'audit_days',
      tables: ['audit_log'],
      sweep: (q, workspaceId, before, limit) => repo.deleteEntriesBefore(q, workspaceId, before, limit),
    },
  ],
};
