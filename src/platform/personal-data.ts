import type { Db, Queryable } from './db';

/**
 * Personal data has an owner. Every module that stores data about a person says so here, table by
 * table: how a person's rows are found, how they are erased, how they are exported, and how long
 * they are kept. The erasure workflow, the access export and the retention sweep run the registry
 * (src/workflows/personal-data.ts lists every owner), so a table that is registered cannot be
 * forgotten by any of them, and `test/personal-data.schema.test.ts` fails for a table of the
 * schema that is neither registered nor declared free of personal data with a reason.
 *
 * The platform only defines the shapes: it cannot know the modules (they depend on it, never the
 * other way round).
 */

/** A normalized identifier (the identity module's classification: docs/profiles.md, "Identifiers"). */
export interface SubjectIdentifier {
  type: 'email' | 'phone' | 'external_id' | 'anonymous_id';
  value: string;
}

/**
 * The person an erasure or an access export is about: a live profile and every profile merged into
 * it, and every identifier they hold. Rows are found by profile id, or, for rows never applied to a
 * profile (events in the backlog, dead letters), by identifier.
 */
export interface DataSubject {
  workspaceId: string;
  /** The surviving profile first, then every profile merged into it. */
  profileIds: readonly string[];
  /** Every identifier of those profiles, normalized; read before any owner erases anything. */
  identifiers: readonly SubjectIdentifier[];
}

/** The keys of the retention settings (workspace settings, `retention.*`): what each one governs. */
export type RetentionSetting =
  | 'events_days'
  | 'dead_letters_days'
  | 'outbox_days'
  | 'segment_changes_days'
  | 'lineage_days'
  | 'audit_days';

/** One table that holds personal data, as its owner describes it (docs/profiles.md shows them all). */
export interface PersonalDataTable {
  table: string;
  /** What of a person a row holds, and how the person's rows are found. */
  holds: string;
  /** How long rows are kept: a retention setting, or why they live exactly as long as something else. */
  kept: { setting: RetentionSetting } | { as: string };
  /** Where the access export carries the rows (a section name), or why it does not. */
  exported: { section: string } | { not: string };
}

/** Where a walk of an erasure stands after one step. */
export interface SliceStep {
  /** Rows removed or scrubbed by this step. */
  removed: number;
  /** Where the next step goes on from (the walk's own position; null: from the start). */
  from: string | null;
  /** Nothing more to look at, for now. */
  done: boolean;
}

/**
 * A walk over a person's rows in bounded steps, for a history too large for one transaction. The
 * erasure runs each step in its own short transaction (`limit` rows at most) until the walk is
 * done, then once more in its final transaction with no limit, from where it stood, to take what
 * arrived meanwhile. A walk that deletes by profile id ignores `from`; one that scans (the backlog,
 * the dead letters) moves it on, so the final step reads only what is new.
 */
export interface ErasureSlice {
  /** The table whose rows it removes (the erasure's counts are per table). */
  table: string;
  step(q: Queryable, subject: DataSubject, limit: number | null, from: string | null): Promise<SliceStep>;
}

/** One part of the access export (GET /tenant/profiles/{id}/export): a name and its rows, read in pages. */
export interface ExportSection {
  name: string;
  /**
   * The rows, in a stable order, read page by page so memory stays bounded whatever the history.
   * Values must be plain JSON (dates as ISO strings).
   */
  rows(db: Db, subject: DataSubject): AsyncIterable<unknown>;
}

/**
 * A retention rule: removes at most `limit` rows of one workspace written before `before`,
 * answering how many went (fewer than `limit`: nothing older is left).
 */
export interface RetentionSweep {
  setting: RetentionSetting;
  /** The tables it removes rows from (for the registry's check and the docs). */
  tables: readonly string[];
  sweep(q: Queryable, workspaceId: string, before: Date, limit: number): Promise<number>;
}

/** What a module registers: its tables of personal data and what to do with them. */
export interface PersonalDataOwner {
  /** The module's name (`ingest`, `webhooks`, …). */
  module: string;
  tables: readonly PersonalDataTable[];
  /**
   * Removes or scrubs every row about the person, in the erasure's final transaction (the profiles
   * are locked), and answers how many rows of each table went. Must be idempotent.
   */
  erase(tx: Queryable, subject: DataSubject): Promise<Record<string, number>>;
  /** Pieces of the erasure that may run in slices before the final transaction (large histories). */
  slices?: readonly ErasureSlice[];
  sections?: readonly ExportSection[];
  sweeps?: readonly RetentionSweep[];
}

/** A table that holds no personal data, and why (the schema test needs the reason). */
export interface NoPersonalData {
  table: string;
  module: string;
  reason: string;
}

/**
 * The channel an erasure notifies at its commit, with the workspace id as payload: every process
 * drops what it holds in memory about that workspace's events (the console's live stream buffers).
 */
export const ERASURE_CHANNEL = 'cdp_erasure';

/**
 * A walk that deletes (or scrubs) a person's rows by profile id, `limit` at a time (all when null):
 * done when a step found fewer than it could take.
 */
export function deletingSlice(
  table: string,
  remove: (q: Queryable, subject: DataSubject, limit: number | null) => Promise<number>,
): ErasureSlice {
  return {
    table,
    async step(q, subject, limit) {
      const removed = await remove(q, subject, limit);
      return { removed, from: null, done: limit === null || removed < limit };
    },
  };
}

/** Every owner, in erasure order, and every table declared free of personal data. */
export interface PersonalDataRegistry {
  /**
   * The order an erasure runs them in: everything that points at a profile before the profiles
   * module (last: its rows are what the rest refers to), identity's nodes after anything that needs
   * them. Each owner's `erase` stands alone otherwise.
   */
  owners: readonly PersonalDataOwner[];
  free: readonly NoPersonalData[];
}

/**
 * An export section's rows read a page at a time: `page(after)` answers at most `size` rows after the
 * keyset `after` (from the start when null), and the last row's `keyOf` is where the next page
 * starts; a short page is the last.
 */
export async function* pagedRows<R, K>(
  size: number,
  page: (after: K | null) => Promise<readonly R[]>,
  keyOf: (last: R) => K,
): AsyncGenerator<R> {
  let after: K | null = null;
  for (;;) {
    const rows = await page(after);
    yield* rows;
    if (rows.length < size) return;
    after = keyOf(rows.at(-1)!);
  }
}
