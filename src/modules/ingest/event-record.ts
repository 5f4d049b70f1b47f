import { type Static, Type } from 'typebox';
import { probeEach } from '../../platform/db/moves';

/**
 * An event as read back from the log: the one row shape every reader selects (the worker's claim,
 * dead letters, a profile's timeline) and the one presenter to the API shape, so a column added to
 * the log is added here once. Readers that need more (the worker needs workspace_id and
 * api_key_id, dead letters their reason) extend it rather than restate it.
 */
export interface EventRecord {
  /** Arrival order in the log (cursor key); never shown to clients. */
  seq: number;
  id: string;
  event_type: string;
  event_name: string;
  anonymous_id: string | null;
  identity: string | null;
  payload: Record<string, unknown>;
  /** Event time: the client's `timestamp`, else the time of receipt. */
  occurred_at: Date;
  received_at: Date;
}

/** The columns of an EventRecord, for `SELECT ${EVENT_RECORD_COLUMNS} FROM events`. */
export const EVENT_RECORD_COLUMNS =
  'seq, id, event_type, event_name, anonymous_id, identity, payload, occurred_at, received_at';

/** EVENT_RECORD_COLUMNS qualified by a table alias, for joins (`e.seq, e.id, …`). */
export const eventRecordColumns = (alias: string): string =>
  EVENT_RECORD_COLUMNS.split(', ')
    .map((c) => `${alias}.${c}`)
    .join(', ');

/**
 * The FROM-list item that reads the log's row of each outer row's seq, one primary-key probe each
 * (probeEach): `eventsBySeq('a.seq', 'e')` joins the event of `a.seq` as `e`.
 */
export const eventsBySeq = (seq: string, as: string, columns = '*'): string =>
  probeEach('events', `x.seq = ${seq}`, as, columns);

/** An event as the API shows it (profile timelines, dead letters): the ingest fields, times as ISO. */
export const EventViewSchema = Type.Object({
  id: Type.String({ description: '`evt_…`' }),
  event_type: Type.String(),
  event_name: Type.String(),
  anonymous_id: Type.Union([Type.String(), Type.Null()]),
  identity: Type.Union([Type.String(), Type.Null()]),
  payload: Type.Record(Type.String(), Type.Unknown(), { description: 'The event’s properties as stored.' }),
  timestamp: Type.String({ format: 'date-time', description: 'When it happened (event time).' }),
  received_at: Type.String({ format: 'date-time' }),
});
export type EventView = Static<typeof EventViewSchema>;

const iso = (d: Date | string): string => (d instanceof Date ? d.toISOString() : new Date(d).toISOString());

/** The API shape of an event read from the log. */
export function presentEvent(r: Omit<EventRecord, 'seq'>): EventView {
  return {
    id: r.id,
    event_type: r.event_type,
    event_name: r.event_name,
    anonymous_id: r.anonymous_id,
    identity: r.identity,
    payload: r.payload,
    timestamp: iso(r.occurred_at),
    received_at: iso(r.received_at),
  };
}
