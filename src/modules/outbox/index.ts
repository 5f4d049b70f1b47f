/**
 * The outbox module's public API. Table: outbox. Facts are written with the transaction that causes
 * them and read by snapshot (readOutbox) by their consumers, who are notified on `cdp_outbox` when
 * new ones commit.
 */

export {
  deleteFactsAbout,
  factSubject,
  OUTBOX_CHANNEL,
  OUTBOX_START,
  type OutboxCursor,
  type OutboxFact,
  type OutboxRow,
  type OutboxType,
  readFactsAbout,
  readOutbox,
  writeOutbox,
  writeOutboxMany,
} from './outbox.repo';
export { outboxPersonalData } from './personal-data';
