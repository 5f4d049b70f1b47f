import type { Db, Queryable } from './port';

/**
 * The text of exported records, written by the database: a repo declares a record's fields once and
 * selects `exportLineSql(fields, format)`, which yields each row as one finished NDJSON line or CSV
 * record. Why in SQL: a record's nested values (an event's payload, a profile's attributes) are
 * jsonb, and reading them as objects only to serialize them again was most of an export's CPU on the
 * service's event loop, which every other request shares; as text they pass through untouched, and
 * the formatting runs in the database (another process on PostgreSQL, PGlite's own thread
 * embedded). The lines keep every value as GET shows it: times as ISO 8601 UTC with milliseconds
 * (`2024-05-01T12:00:00.123Z`, like `Date.toISOString`), numbers as numbers, nested values as JSON.
 * Only the spacing inside nested values differs (`{"plan": "pro"}`, PostgreSQL's jsonb output).
 */

export type ExportFormat = 'ndjson' | 'csv';

/**
 * `text`: a string (or a uuid); `json`: a json or jsonb value, shown as JSON; `number`: a numeric or
 * float; `time`: a timestamptz. Any may be NULL: `null` in NDJSON, an empty field in CSV.
 */
export type ExportFieldKind = 'text' | 'json' | 'number' | 'time';

export interface ExportField {
  /** The record's key, and the CSV column's header: a plain identifier (never quoted). */
  name: string;
  /** The SQL expression of the value. */
  sql: string;
  kind: ExportFieldKind;
}

/** `Date.toISOString()`'s shape; to_char truncates microseconds to milliseconds, as the driver's Date does. */
const isoText = (sql: string) => `to_char((${sql}) AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"')`;

/** The value as JSON text, or NULL. */
function jsonText(f: ExportField): string {
  switch (f.kind) {
    case 'text':
      return `to_json((${f.sql})::text)::text`;
    case 'json':
      return `(${f.sql})::text`;
    case 'number':
      // to_json writes a NaN or an infinity as a JSON string, never as a bare word JSON has not.
      return `to_json(${f.sql})::text`;
    case 'time':
      return `'"' || ${isoText(f.sql)} || '"'`;
  }
}

/**
 * The value as one CSV field (RFC 4180): NULL is an empty field and an empty string a quoted one
 * (`""`), as PostgreSQL's own CSV output does; a field holding a comma, a quote, CR or LF is quoted,
 * its quotes doubled. JSON values are always quoted (their keys are), computed once.
 */
function csvField(f: ExportField): string {
  switch (f.kind) {
    case 'text': {
      const v = `(${f.sql})::text`;
      return `coalesce(CASE WHEN ${v} = '' OR ${v} ~ E'[",\\r\\n]' THEN '"' || replace(${v}, '"', '""') || '"' ELSE ${v} END, '')`;
    }
    case 'json':
      return `coalesce('"' || replace((${f.sql})::text, '"', '""') || '"', '')`;
    case 'number':
      return `coalesce((${f.sql})::text, '')`;
    case 'time':
      return `coalesce(${isoText(f.sql)}, '')`;
  }
}

/** The SQL expression of one record as a finished line: NDJSON ending in LF, CSV in CRLF (RFC 4180). */
export function exportLineSql(fields: readonly ExportField[], format: ExportFormat): string {
  if (format === 'csv') return `${fields.map(csvField).join(` || ',' || `)} || E'\\r\\n'`;
  const parts = fields.map(
    (f, i) => `'${i === 0 ? '{' : ','}"${f.name}":' || coalesce(${jsonText(f)}, 'null')`,
  );
  return `${parts.join(' || ')} || E'}\\n'`;
}

/** The CSV header record: one column per top-level field, in the records' order. */
export const csvHeader = (fields: readonly ExportField[]): string =>
  `${fields.map((f) => f.name).join(',')}\r\n`;

/**
 * Where a keyset walk stands: the row's sort time exactly as the database wrote it (`::text`, so no
 * microsecond is lost on the way through a JS Date) and its seq, which breaks ties.
 */
export interface ExportKey {
  at: string;
  seq: number;
}

/** The rows' time window, ISO 8601; null: open on that side. */
export interface ExportWindow {
  since: string | null;
  until: string | null;
}

/**
 * The WHERE condition of a page of a walk in (`at`, `seq`) order, both bounds a range of an index
 * on (workspace, at, seq): rows after the key `$n, $n+1` and at or after `since` (`$n+2`), before
 * `until` (`$n+3`). The lower bound is one row comparison, the later of the key and (since, 0), so the
 * index scan starts there (two separate lower bounds let the planner start at the looser one and
 * filter its way up to the other); seqs start at 1, so (since, 0) admits every row at `since`.
 */
export const keysetWindowSql = (at: string, seq: string, n: number): string =>
  `(${at}, ${seq}) > (GREATEST($${n}::timestamptz, $${n + 2}::timestamptz),
     CASE WHEN $${n}::timestamptz >= $${n + 2}::timestamptz THEN $${n + 1}::bigint ELSE 0 END)
   AND ${at} < $${n + 3}::timestamptz`;

/** The four parameters of keysetWindowSql, in order. */
export const keysetWindowParams = (after: ExportKey | null, w: ExportWindow): unknown[] => [
  after?.at ?? '-infinity',
  after?.seq ?? 0,
  w.since ?? '-infinity',
  w.until ?? 'infinity',
];

/** A page of a walk: its finished lines as one text, and the key to read on from. */
export interface ExportPage<K> {
  /** The page's records, each a finished line, in order. */
  text: string;
  /** The key of the last row read (whether or not it made a line); null when none was read. */
  last: K | null;
  /** Rows read: fewer than asked for means the walk is over. */
  read: number;
}

/**
 * A whole page as one row: `inner` selects `line`, `at` (text) and `seq` in the walk's order with its
 * LIMIT; the answer is the lines joined in that order, how many rows were read, and the last key.
 * One row instead of one per record: on PGlite each row of an answer costs more to hand over (the
 * wire protocol, then a copy to the service's thread) than its line costs to build, and a page of
 * 1,000 events read as one text measured 2–3 times faster than as 1,000 rows. The aggregates read
 * the ordered subquery as it comes (nothing at this level may reorder it: no join, no grouping), so
 * the text is in the walk's order and the arrays' last elements are the last row's key.
 */
export const keysetPageSql = (inner: string): string =>
  `SELECT string_agg(k.line, '') AS text, count(*)::int AS read,
          (array_agg(k.at))[count(*)] AS at, (array_agg(k.seq))[count(*)] AS seq
     FROM (${inner}) k`;

/** The row keysetPageSql answers, as an ExportPage. */
export function keysetPage(row: {
  text: string | null;
  read: number;
  at: string | null;
  seq: number | null;
}) {
  const last = row.at === null || row.seq === null ? null : { at: row.at, seq: row.seq };
  return { text: row.text ?? '', read: row.read, last } satisfies ExportPage<ExportKey>;
}

export interface KeysetPageRow {
  text: string | null;
  read: number;
  at: string | null;
  seq: number | null;
}

/**
 * Runs a keyset page's statement with the planner held to the walk's index, in its order. Without
 * statistics (the event log is never analyzed; PGlite has no autovacuum) the planner guesses a
 * handful of matching rows, and reads them with a bitmap scan and a sort: every row after the key,
 * sorted, for one page, so that a walk of 50,000 events took a minute (EXPLAIN ANALYZE on
 * PostgreSQL: 25,000 rows read for a page of 500). With bitmap scans and sorts off for this
 * transaction alone, the ordered index scan is the plan, and a page reads its own rows only.
 */
export function inIndexOrder<T>(db: Db, read: (q: Queryable) => Promise<T>): Promise<T> {
  return db.transaction(async (tx) => {
    await tx.query(
      "SELECT set_config('enable_bitmapscan', 'off', true), set_config('enable_sort', 'off', true)",
    );
    return read(tx);
  });
}
