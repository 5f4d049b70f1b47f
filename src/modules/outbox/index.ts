/**
 * The outbox module's public API. Table: outbox. Facts are written with the transaction that causes
 * them and read in seq order by their consumers.
 */

export {
  type OutboxFact,
  type OutboxRow,
  type OutboxType,
  readOutbox,
  writeOutbox,
  writeOutboxMany,
} from './outbox.repo';
