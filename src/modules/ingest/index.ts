/**
 * The ingest module's public API: what other modules, the demo loader, tests and benchmarks may
 * call. Every write to the event log goes through appendEvents (or, for HTTP, the event writer that
 * batches normalizeEvent rows into storeEventRows); events read back are EventRecords, shown to
 * clients with presentEvent.
 */
export {
  type AppendOptions,
  type AppendResult,
  appendEvents,
  type EventSource,
  type NewEvent,
  normalizeEvent,
  storeEventRows,
  validateEvents,
} from './append-events';
export {
  type AppliedEvent,
  deleteEventsBySeq,
  markEventsApplied,
  markEventUnprocessed,
} from './applied.repo';
export { eraseEventsOfProfiles, moveEventsToSurvivors } from './erase';
export {
  EVENT_RECORD_COLUMNS,
  type EventRecord,
  type EventView,
  EventViewSchema,
  eventRecordColumns,
  eventsBySeq,
  presentEvent,
} from './event-record';
export type { NewEventRow } from './ingest.repo';
export { EVENT_TYPES, type EventType, LIMITS as INGEST_LIMITS } from './ingest.schemas';
export { createEventWriter, type EventWriter, type EventWriterOptions } from './ingest.service';
