import type { Db, Queryable } from '../../platform/db';
import {
  type DataSubject,
  deletingSlice,
  type PersonalDataOwner,
  pagedRows,
} from '../../platform/personal-data';
import * as erase from './erase.repo';
import { type EventRecord, eventRecordColumns, eventsBySeq, presentEvent } from './event-record';

/**
 * The event log's personal data (docs/profiles.md, "What is kept about a person"): every event a
 * person sent, its typed property rows and the record of the profile it was applied to. Events never
 * applied (still waiting, dead-lettered) are found by their identifiers by the processing module,
 * which owns the backlog and the dead letters, and deleted through deleteEventsBySeq.
 */

/** Events read per page of an access export. */
const EXPORT_PAGE = 500;

async function* eventsOf(db: Db, subject: DataSubject): AsyncIterable<unknown> {
  for (const profileId of subject.profileIds) {
    const rows = pagedRows(
      EXPORT_PAGE,
      (after: { at: Date; seq: number } | null) => eventPage(db, subject.workspaceId, profileId, after),
      (last) => ({ at: last.occurred_at, seq: Number(last.seq) }),
    );
    for await (const r of rows) yield { ...presentEvent(r), profile_id: r.profile_id };
  }
}

async function eventPage(
  q: Queryable,
  workspaceId: string,
  profileId: string,
  after: { at: Date; seq: number } | null,
): Promise<Array<EventRecord & { profile_id: string }>> {
  const { rows } = await q.query<EventRecord & { profile_id: string }>(
    `SELECT ${eventRecordColumns('e')}, a.profile_id
       FROM (SELECT seq, occurred_at, profile_id FROM event_profiles
              WHERE workspace_id = $1 AND profile_id = $2
                AND ($3::timestamptz IS NULL OR (occurred_at, seq) > ($3::timestamptz, $4::bigint))
              ORDER BY occurred_at, seq LIMIT $5) a
       ${eventsBySeq('a.seq', 'e')}
      ORDER BY a.occurred_at, a.seq`,
    [workspaceId, profileId, after?.at ?? null, after?.seq ?? 0, EXPORT_PAGE],
  );
  return rows;
}

export const ingestPersonalData: PersonalDataOwner = {
  module: 'ingest',
  tables: [
    {
      table: 'events',
      holds:
        'every event a person sent, payload included; found through event_profiles, or by identifier while not applied',
      kept: { setting: 'events_days' },
      exported: { section: 'events' },
    },
    {
      table: 'event_profiles',
      holds: 'the profile each processed event was applied to, with its name and time',
      kept: { as: 'as long as its event' },
      exported: { section: 'events' },
    },
    {
      table: 'event_properties',
      holds: "each processed event's payload values as typed rows",
      kept: { as: 'as long as its event' },
      exported: { section: 'events' },
    },
  ],
  async erase(tx, s) {
    const properties = await erase.deletePropertiesOfProfiles(tx, s.workspaceId, s.profileIds);
    return {
      events: await erase.deleteEventsOfProfiles(tx, s.workspaceId, s.profileIds),
      event_properties: properties,
    };
  },
  slices: [
    deletingSlice('event_properties', (q, s, limit) =>
      erase.deletePropertiesOfProfiles(q, s.workspaceId, s.profileIds, limit),
    ),
    deletingSlice('events', (q, s, limit) =>
      erase.deleteEventsOfProfiles(q, s.workspaceId, s.profileIds, limit),
    ),
  ],
  sections: [{ name: 'events', rows: eventsOf }],
};
