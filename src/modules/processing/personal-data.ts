import type { Db, Queryable } from '../../platform/db';
import { iso } from '../../platform/http/envelope';
import {
  type DataSubject,
  type ErasureSlice,
  type PersonalDataOwner,
  pagedRows,
} from '../../platform/personal-data';
import { subjectMatcher } from '../identity';
import { deleteEventsBySeq, presentEvent } from '../ingest';
import * as repo from './unapplied.repo';

/**
 * The events of a person that no profile holds yet or ever will: waiting on the backlog (deferred
 * or not yet claimed) and dead letters. They are found by the person's identifiers, normalized as
 * the pipeline would, and erased with their events (a dead letter goes with its event), so a retry
 * can never bring the person back. Events a worker holds while the scan passes are caught either way:
 * applied, they belong to the profile the erasure then removes; put back, their log row is already
 * gone; still waiting at the erasure's commit, its horizon drops them (src/workflows/erasure.ts).
 */

type Scan = (
  q: Queryable,
  workspaceId: string,
  afterSeq: number,
  limit: number | null,
) => Promise<repo.UnappliedRow[]>;

/** A scan of one kind of unapplied row that erases the person's, moving on by position. */
function erasingScan(table: string, scan: Scan): ErasureSlice {
  return {
    table,
    async step(q, subject, limit, from) {
      const rows = await scan(q, subject.workspaceId, from === null ? 0 : Number(from), limit);
      const names = subjectMatcher(subject);
      const seqs = rows.filter((r) => names(r.identity, r.anonymous_id)).map((r) => r.event_seq);
      // The log's rows first: a dead letter goes with its event (ON DELETE CASCADE).
      await deleteEventsBySeq(q, seqs);
      await repo.dropFromBacklog(q, seqs);
      const last = rows.at(-1);
      return {
        removed: seqs.length,
        from: last ? String(last.pos) : from,
        done: limit === null || rows.length < limit,
      };
    },
  };
}

/** The person's unapplied events, oldest first: the backlog's, then the dead letters', page by page. */
async function* unappliedOf(db: Db, subject: DataSubject): AsyncIterable<unknown> {
  const names = subjectMatcher(subject);
  const PAGE = 1_000;
  for (const scan of [repo.scanBacklog, repo.scanDeadLetters]) {
    const scanned = pagedRows(
      PAGE,
      (after: number | null) => scan(db, subject.workspaceId, after ?? 0, PAGE),
      (last) => last.pos,
    );
    const seqs: number[] = [];
    for await (const r of scanned) if (names(r.identity, r.anonymous_id)) seqs.push(r.event_seq);
    for (let i = 0; i < seqs.length; i += PAGE) {
      for (const e of await repo.unappliedEvents(db, seqs.slice(i, i + PAGE))) {
        yield {
          ...presentEvent(e),
          state: e.reason === null ? 'waiting' : 'dead_letter',
          reason: e.reason,
          failed_at: iso(e.failed_at),
        };
      }
    }
  }
}

export const processingPersonalData: PersonalDataOwner = {
  module: 'processing',
  tables: [
    {
      table: 'event_backlog',
      holds: 'the raw identity and anonymous id of each event still waiting to be applied',
      kept: { as: 'until its event is applied (seconds when the workers keep up)' },
      exported: { section: 'unapplied_events' },
    },
    {
      table: 'dead_letters',
      holds: 'events set aside with the reason (the event itself stays in events)',
      kept: { setting: 'dead_letters_days' },
      exported: { section: 'unapplied_events' },
    },
  ],
  // Everything is done by the scans (their final step runs in the erasure's transaction).
  async erase() {
    return {};
  },
  slices: [erasingScan('event_backlog', repo.scanBacklog), erasingScan('dead_letters', repo.scanDeadLetters)],
  sections: [{ name: 'unapplied_events', rows: unappliedOf }],
};
