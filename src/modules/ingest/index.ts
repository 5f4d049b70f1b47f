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
// Consent choices as clients send them: their limits, schema and reader.
export {
  CategoryNameSchema,
  CONSENT_LIMITS,
  type ConsentChoices,
  ConsentChoicesSchema,
  readChoices,
} from './consent-choices';
export { moveEventsToSurvivors } from './erase';
export { logHorizon } from './erase.repo';
export {
  EVENT_RECORD_COLUMNS,
  type EventRecord,
  type EventView,
  EventViewSchema,
  eventRecordColumns,
  eventsBySeq,
  presentEvent,
} from './event-record';
// Workspace exports (GET /tenant/exports/events): pages of finished lines, and where an event stands.
export { EVENT_EXPORT_FIELDS, exportEventsPage, findEventKeyNear, scanEventKeys } from './export.repo';
export type { NewEventRow } from './ingest.repo';
export { EVENT_TYPES, type EventType, LIMITS as INGEST_LIMITS } from './ingest.schemas';
export {
  createEventWriter,
  type EventWriter,
  type EventWriterOptions,
  ingestBatch,
} from './ingest.service';
// The event contract's payload rules: what the door checks of an order's and an identify's payload,
// and how the modules that apply those events read them (commerce, profiles).
export {
  checkOrderPayload,
  DEFAULT_CURRENCY,
  DEFAULT_STATUS,
  MAX_AMOUNT,
  MAX_ITEMS,
  MAX_QUANTITY,
  MAX_TEXT,
  type NormalizedOrder,
  ORDER_STATUSES,
  type OrderItem,
  type OrderStatus,
  productsOf,
  readOrder,
  readOrderId,
  readOrderPayload,
  withOrderDefaults,
} from './order-payload';
export { ingestPersonalData } from './personal-data';
export { eventMinutesSince, pruneEventMinutes, receivedAtOfSeq } from './stats.repo';
export { lastLogSeq, readLogTail, type TailRow } from './tail.repo';
export { countTraitKeys, TOO_MANY_TRAIT_KEYS, TRAIT_LIMITS } from './trait-limits';
