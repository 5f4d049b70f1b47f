import type { Queryable } from './port';

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
 * The parameters of a page statement. A page runs through `export_page(query, params)`
 * (migrations/0040), which plans it with the walk's index forced: its query reads its parameters as
 * the elements of one text array, `$1[n]`, each cast to its type where it is used.
 */
export interface PageParams {
  /** The SQL reference to a new parameter of this value: `($1[3])::bigint`. */
  ref(value: string | number | null, type: string): string;
  readonly values: Array<string | null>;
}

export function pageParams(): PageParams {
  const values: Array<string | null> = [];
  return {
    values,
    ref(value, type) {
      values.push(value === null ? null : String(value));
      return `($1[${values.length}])::${type}`;
    },
  };
}

/**
 * The WHERE condition of a page of a walk in (`at`, `seq`) order, both bounds a range of an index
 * on (workspace, at, seq): rows after the key and at or after `since`, before `until`. The lower
 * bound is one row comparison, the later of the key and (since, 0), so the index scan starts there
 * (two separate lower bounds let the planner start at the looser one and filter its way up to the
 * other); seqs start at 1, so (since, 0) admits every row at `since`.
 */
export function keysetWindowSql(
  at: string,
  seq: string,
  after: ExportKey | null,
  w: ExportWindow,
  p: PageParams,
): string {
  const key = p.ref(after?.at ?? '-infinity', 'timestamptz');
  const keySeq = p.ref(after?.seq ?? 0, 'bigint');
  const since = p.ref(w.since ?? '-infinity', 'timestamptz');
  const until = p.ref(w.until ?? 'infinity', 'timestamptz');
  return `(${at}, ${seq}) > (GREATEST(${key}, ${since}), CASE WHEN ${key} >= ${since} THEN ${keySeq} ELSE 0 END)
     AND ${at} < ${until}`;
}

/** A page of a walk: its finished lines as one text, and the key to read on from. */
export interface ExportPage<K> {
  /** The page's records, each a finished line, in order. */
  text: string;
  /** The key of the last row read (whether or not it made a line); null when none was read. */
  last: K | null;
  /** Rows read: fewer than asked for means the walk is over. */
  read: number;
}

/** What export_page answers: the page's text, rows read, and the last row's key. */
interface PageRow {
  text: string | null;
  read: number;
  at: string | null;
  seq: number | null;
}

/**
 * Reads one page: `inner` selects `line`, `at` (text, or NULL for a walk by seq alone) and `seq` in
 * the walk's order with its LIMIT, its parameters from `p`. The answer is one row: the lines joined
 * in that order, how many rows were read, and the last key.
 *
 * - **One row, not one per record**: on PGlite each row of an answer costs more to hand over (the
 *   wire protocol, then a copy to the service's thread) than its line costs to build, and a page of
 *   1,000 events read as one text measured 2–3 times faster than as 1,000 rows. The aggregates read
 *   the ordered subquery as it comes (nothing at that level may reorder it: no join, no grouping),
 *   so the text is in the walk's order and the arrays' last elements are the last row's key.
 * - **Through export_page** (migrations/0040), which plans the statement with bitmap scans and sorts
 *   off. Without statistics (the event log is never analyzed; PGlite has no autovacuum) the planner
 *   guessed 14 matching rows and read them with a bitmap scan and a sort: every row after the key,
 *   sorted, for each page, so a walk of 50,000 events took a minute on PostgreSQL (EXPLAIN ANALYZE:
 *   25,000 rows read for a page of 500). Forced, the ordered index scan reads a page's rows only
 *   (1.5 ms for 500). A function's own settings rather than SET LOCAL in a transaction: one
 *   statement, so on PGlite a page never holds the connection while it waits for the service's
 *   event loop between the statements of a transaction. The function prepares each distinct query
 *   once per session and plans it once, so `inner` must not vary with the values (they go through
 *   `p`): a page's own parsing and planning took PGlite about 1.5 ms.
 */
export async function readPage(q: Queryable, inner: string, p: PageParams): Promise<ExportPage<ExportKey>> {
  const { rows } = await q.query<PageRow>('SELECT text, read, at, seq FROM export_page($1, $2::text[])', [
    `SELECT string_agg(k.line, '') AS text, count(*)::int AS read,
            (array_agg(k.at))[count(*)] AS at, (array_agg(k.seq))[count(*)] AS seq
       FROM (${inner}) k`,
    p.values,
  ]);
  const row = rows[0]!;
  return {
    text: row.text ?? '',
    read: row.read,
    last: row.seq === null ? null : { at: row.at ?? '', seq: row.seq },
  };
}
