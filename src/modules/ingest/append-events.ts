import { Ajv, type ValidateFunction } from 'ajv';
import addFormats from 'ajv-formats';
import type { Queryable } from '../../platform/db';
import { AppError, type ErrorDetail } from '../../platform/errors';
import { validationDetails } from '../../platform/http/errors-handler';
import { newSortableId } from '../../platform/ids';
import * as repo from './ingest.repo';
import { checkEvent } from './ingest.rules';
import { type IngestEvent, IngestEventSchema } from './ingest.schemas';
import { withOrderDefaults } from './order-payload';

/**
 * The one way into the event log. Every writer (the HTTP routes through the group commit, the demo
 * loader, the test kit, benchmarks) goes through the same three steps:
 *   validate  (the ingest schema plus ingest.rules.ts; the routes run it at the door, with
 *             JSON-pointer paths, before the request is accepted)
 *   normalise (normalizeEvent: what the log stores for a valid event)
 *   store     (storeEventRows: one multi-row INSERT, message_id de-duplication)
 * `appendEvents` runs all three for a caller that holds a database handle.
 */

/** An event as a client sends it (the ingestion event of the spec, plus `message_id`). */
export type NewEvent = IngestEvent;

/** Who appends: the workspace, the API key (null for the demo loader and tests), the time of receipt. */
export interface EventSource {
  workspaceId: string;
  apiKeyId: string | null;
  /** ISO 8601; stands in for a missing `timestamp`. */
  receivedAt: string;
}

/**
 * A valid event → the row the log stores. Everything the log normalises is here: a fresh sortable
 * id, `anonymous_id` lower-cased (UUIDs compare case-insensitively; one spelling keeps one identity
 * node per cookie), `timestamp` as UTC ISO (the time of receipt when absent), and the order defaults
 * (currency upper-case, USD by default; status canonical, completed by default: order-payload.ts).
 * `identity` is stored as sent: the identity resolver classifies it (an e-mail is trimmed and
 * lower-cased there, docs/profiles.md), and the log keeps what the client said.
 */
export function normalizeEvent(ev: NewEvent, src: EventSource): repo.NewEventRow {
  const payload = ev.payload ?? {};
  return {
    id: newSortableId('evt'),
    workspace_id: src.workspaceId,
    message_id: ev.message_id ?? null,
    event_type: ev.event_type,
    event_name: ev.event_name,
    anonymous_id: ev.anonymous_id?.toLowerCase() ?? null,
    identity: ev.identity ?? null,
    payload: ev.event_type === 'order' ? withOrderDefaults(payload) : payload,
    occurred_at: ev.timestamp ? new Date(ev.timestamp).toISOString() : src.receivedAt,
    received_at: src.receivedAt,
    api_key_id: src.apiKeyId,
    ...(ev.consent ? { consent: ev.consent.categories } : {}),
  };
}

let schemaCheck: ValidateFunction | null = null;

/** The body validator the app compiles for the ingest routes (app.ts: strict, every error). */
function checkSchema(): ValidateFunction {
  if (schemaCheck !== null) return schemaCheck;
  const compiled: ValidateFunction = addFormats
    .default(new Ajv({ allErrors: true, strict: false, coerceTypes: false }))
    .compile(IngestEventSchema);
  schemaCheck = compiled;
  return compiled;
}

/**
 * Every problem of every event, as the batch route reports them (paths `/3/…`): the schema, then
 * the ingest rules, one message per field. Empty when all are valid.
 */
export function validateEvents(events: readonly unknown[], now = Date.now()): ErrorDetail[] {
  const check = checkSchema();
  const details: ErrorDetail[] = [];
  for (let i = 0; i < events.length; i++) {
    const at = `/${i}`;
    const schema = check(events[i])
      ? []
      : validationDetails(check.errors ?? []).map((d) => ({
          ...d,
          path: `${at}${d.path === '/' ? '' : d.path}`,
        }));
    const refused = new Set(schema.map((d) => d.path));
    const rules = checkEvent(events[i], at, now)
      .filter((e) => !refused.has(e.instancePath))
      .map((e) => ({ path: e.instancePath, message: e.message }));
    details.push(...schema, ...rules);
  }
  return details;
}

const messageKey = (workspaceId: string, messageId: string) => `${workspaceId} ${messageId}`;

/**
 * Stores the rows of several requests with one INSERT (the group commit's flush) and answers each
 * request's ids. A message_id seen twice (in this call or already stored) maps every copy to the one
 * stored id.
 */
export async function storeEventRows(q: Queryable, requests: repo.NewEventRow[][]): Promise<string[][]> {
  const unique: repo.NewEventRow[] = [];
  const firstByKey = new Map<string, repo.NewEventRow>();
  for (const rows of requests) {
    for (const row of rows) {
      if (row.message_id === null) unique.push(row);
      else {
        const k = messageKey(row.workspace_id, row.message_id);
        if (!firstByKey.has(k)) {
          firstByKey.set(k, row);
          unique.push(row);
        }
      }
    }
  }

  const storedId = new Map<string, string>();
  let toInsert = unique;
  // A conflicting original can vanish before it is read back (a profile erasure deletes its
  // events); the re-sent copy is then inserted on the next pass. Three passes end any such race.
  for (let pass = 0; pass < 3 && toInsert.length > 0; pass++) {
    const inserted = await repo.insertEvents(q, toInsert);
    const withKey = toInsert.filter((r) => r.message_id !== null);
    if (inserted === toInsert.length || withKey.length === 0) {
      for (const r of withKey) storedId.set(messageKey(r.workspace_id, r.message_id!), r.id);
      toInsert = [];
      break;
    }
    const found = await repo.findEventIdsByMessageId(
      q,
      withKey.map((r) => ({ workspace_id: r.workspace_id, message_id: r.message_id! })),
    );
    for (const f of found) storedId.set(messageKey(f.workspace_id, f.message_id), f.id);
    toInsert = withKey.filter((r) => !storedId.has(messageKey(r.workspace_id, r.message_id!)));
  }
  if (toInsert.length > 0) throw new Error('message_id de-duplication did not settle after 3 passes');

  return requests.map((rows) =>
    rows.map((r) => (r.message_id === null ? r.id : storedId.get(messageKey(r.workspace_id, r.message_id))!)),
  );
}

export interface AppendOptions {
  workspaceId: string;
  /** The API key the events came with; null (the default) for the demo loader, tests, benchmarks. */
  apiKeyId?: string | null;
  /** ISO 8601 time of receipt; now by default. */
  receivedAt?: string;
  /**
   * false skips the schema and ingest rules (normalisation and de-duplication still apply): only for
   * events valid by construction (benchmark generators) and for tests of the worker's defences
   * against rows the door would have refused. Default true.
   */
  validate?: boolean;
}

export interface AppendResult {
  /** One stored id per event, in order: for a duplicate message_id, the id stored first. */
  ids: string[];
  /** Events not stored because their message_id was already stored (or repeated in the call). */
  duplicates: number;
}

/**
 * Validates, normalises and appends events to one workspace's log in one statement (so they commit
 * or fail together unless `q` is inside a larger transaction). Invalid events refuse the whole call
 * with a 400 VALIDATION_ERROR naming each (`/3/payload/total`); nothing is stored then. For large
 * loads, call it with slices of 1,000 to 5,000 events: one statement's rows travel as one jsonb
 * parameter.
 */
export async function appendEvents(
  q: Queryable,
  events: readonly NewEvent[],
  opts: AppendOptions,
): Promise<AppendResult> {
  if (events.length === 0) return { ids: [], duplicates: 0 };
  if (opts.validate !== false) {
    const details = validateEvents(events);
    if (details.length > 0) {
      const first = `${details[0]!.path} ${details[0]!.message}`;
      throw new AppError('VALIDATION_ERROR', `events refused (${first}); nothing was stored`, {
        details: details.slice(0, 100),
      });
    }
  }
  const src: EventSource = {
    workspaceId: opts.workspaceId,
    apiKeyId: opts.apiKeyId ?? null,
    receivedAt: opts.receivedAt ?? new Date().toISOString(),
  };
  const rows = events.map((ev) => normalizeEvent(ev, src));
  const [ids] = await storeEventRows(q, [rows]);
  let duplicates = 0;
  for (let i = 0; i < rows.length; i++) if (ids![i] !== rows[i]!.id) duplicates++;
  return { ids: ids!, duplicates };
}
