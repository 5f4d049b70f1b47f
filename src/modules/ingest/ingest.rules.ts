import { LIMITS, ORDER_STATUSES } from './ingest.schemas';

/**
 * The event rules a JSON schema expresses badly, as a pure function over the parsed body. It runs
 * beside the schema validator (on data that may have failed the schema, so it checks types itself)
 * and reports in the same shape, so a client gets every problem of every batch item in one answer.
 *
 * Besides the spec's rules it refuses what PostgreSQL would refuse later (NUL characters, unpaired
 * surrogates): an event that passes here can always be stored, so one bad event can never fail the
 * group commit it shares with other requests.
 */
export interface RuleError {
  /** JSON pointer into the body, e.g. `/3/payload/total`. */
  instancePath: string;
  message: string;
  keyword: 'ingest';
}

type Obj = Record<string, unknown>;

const isObject = (v: unknown): v is Obj => typeof v === 'object' && v !== null && !Array.isArray(v);

const escapePointer = (s: string) => s.replace(/~/g, '~0').replace(/\//g, '~1');

/** NUL and lone surrogates: PostgreSQL text and jsonb cannot hold them. */
const LONE_SURROGATE = /\p{Cs}/u;

export const isStorableText = (s: string): boolean => !s.includes('\u0000') && !LONE_SURROGATE.test(s);

const ISO_4217 = /^[A-Za-z]{3}$/;

/** Checks one event; `at` is its pointer prefix ('' for a single event, `/3` in a batch). */
export function checkEvent(ev: unknown, at: string, now: number): RuleError[] {
  const errors: RuleError[] = [];
  const fail = (path: string, message: string) =>
    errors.push({ instancePath: `${at}${path}`, message, keyword: 'ingest' });
  if (!isObject(ev)) return errors; // the schema reports the type

  const identity = typeof ev.identity === 'string' ? ev.identity.trim() : '';
  if (identity === '' && ev.anonymous_id === undefined) {
    fail('/identity', 'either identity or anonymous_id is required');
  }

  for (const field of ['event_name', 'identity', 'message_id'] as const) {
    const v = ev[field];
    if (typeof v === 'string' && !isStorableText(v)) {
      fail(`/${field}`, 'must not contain NUL characters or unpaired surrogates');
    }
  }

  if (typeof ev.timestamp === 'string') {
    const t = Date.parse(ev.timestamp);
    if (Number.isNaN(t)) fail('/timestamp', 'must be a valid date-time');
    else if (t < LIMITS.earliest) fail('/timestamp', 'must not be before 1970-01-01T00:00:00Z');
    else if (t > now + LIMITS.futureSkewMs)
      fail('/timestamp', 'must not be more than 24 hours in the future');
  }

  if (isObject(ev.payload)) checkPayload(ev.payload, fail);
  if (ev.event_type === 'order') checkOrder(ev.payload, fail);
  return errors;
}

function checkPayload(payload: Obj, fail: (path: string, message: string) => void): void {
  let reported = false;
  const walk = (v: unknown, path: string, depth: number): void => {
    if (reported) return;
    if (typeof v === 'string') {
      if (!isStorableText(v)) {
        fail(path, 'must not contain NUL characters or unpaired surrogates');
        reported = true;
      }
      return;
    }
    if (typeof v !== 'object' || v === null) return;
    if (depth > LIMITS.payloadDepth) {
      fail(path, `nests deeper than ${LIMITS.payloadDepth} levels`);
      reported = true;
      return;
    }
    if (Array.isArray(v)) {
      for (let i = 0; i < v.length; i++) walk(v[i], `${path}/${i}`, depth + 1);
      return;
    }
    for (const [k, x] of Object.entries(v)) {
      if (k.length > LIMITS.text || !isStorableText(k)) {
        fail(
          `${path}/${escapePointer(k.slice(0, 50))}`,
          'keys must be ≤ 200 characters without NUL or unpaired surrogates',
        );
        reported = true;
        return;
      }
      walk(x, `${path}/${escapePointer(k)}`, depth + 1);
    }
  };
  walk(payload, '/payload', 1);
  if (!reported && Buffer.byteLength(JSON.stringify(payload)) > LIMITS.payloadBytes) {
    fail('/payload', `must be at most ${LIMITS.payloadBytes} bytes as JSON`);
  }
}

const isText = (v: unknown, min = 1): v is string =>
  typeof v === 'string' && v.length >= min && v.length <= LIMITS.text;

const isAmount = (v: unknown): v is number => typeof v === 'number' && Number.isFinite(v) && v >= 0;

function checkOrder(payload: unknown, fail: (path: string, message: string) => void): void {
  if (!isObject(payload)) {
    fail('/payload', 'is required for order events (order_id and total)');
    return;
  }
  if (!isText(payload.order_id)) fail('/payload/order_id', 'must be a string of 1 to 200 characters');
  if (!isAmount(payload.total)) fail('/payload/total', 'must be a number ≥ 0');
  if (
    payload.currency !== undefined &&
    !(typeof payload.currency === 'string' && ISO_4217.test(payload.currency))
  ) {
    fail('/payload/currency', 'must be an ISO 4217 code of three letters, e.g. USD');
  }
  if (payload.status !== undefined && !(ORDER_STATUSES as readonly unknown[]).includes(payload.status)) {
    fail('/payload/status', `must be one of: ${ORDER_STATUSES.join(', ')}`);
  }
  const items = payload.items;
  if (items === undefined) return;
  if (!Array.isArray(items)) {
    fail('/payload/items', 'must be an array');
    return;
  }
  if (items.length > LIMITS.orderItems) {
    fail('/payload/items', `must have at most ${LIMITS.orderItems} items`);
    return;
  }
  items.forEach((item, i) => {
    const p = `/payload/items/${i}`;
    if (!isObject(item)) {
      fail(p, 'must be an object');
      return;
    }
    if (!isText(item.product_id)) fail(`${p}/product_id`, 'must be a string of 1 to 200 characters');
    if (item.name !== undefined && !isText(item.name, 0))
      fail(`${p}/name`, 'must be a string of at most 200 characters');
    if (item.category !== undefined && !isText(item.category, 0)) {
      fail(`${p}/category`, 'must be a string of at most 200 characters');
    }
    if (item.price !== undefined && !isAmount(item.price)) fail(`${p}/price`, 'must be a number ≥ 0');
    if (
      item.quantity !== undefined &&
      !(
        typeof item.quantity === 'number' &&
        Number.isInteger(item.quantity) &&
        item.quantity >= 1 &&
        item.quantity <= 1_000_000
      )
    ) {
      fail(`${p}/quantity`, 'must be an integer from 1 to 1000000');
    }
  });
}

/** Checks every item of a batch; errors come out in item order. */
export function checkBatch(events: unknown, now: number): RuleError[] {
  if (!Array.isArray(events)) return [];
  return events.flatMap((ev, i) => checkEvent(ev, `/${i}`, now));
}
