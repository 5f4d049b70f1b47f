import { LIMITS } from './ingest.schemas';
import { checkOrderPayload } from './order-payload';
import { countTraitKeys, TOO_MANY_TRAIT_KEYS, TRAIT_LIMITS } from './trait-limits';

/**
 * The event rules a JSON schema expresses badly, as a pure function over the parsed body. It runs
 * beside the schema validator (on data that may have failed the schema, so it checks types itself)
 * and reports in the same shape, so a client gets every problem of every batch item in one answer.
 *
 * What PostgreSQL would refuse later (NUL characters, unpaired surrogates, non-finite numbers) never
 * reaches these rules: the JSON body parser refuses it for every route (platform/http/text-rule.ts),
 * so an event that passes here can always be stored and one bad event can never fail the group
 * commit it shares with other requests. Amounts and quantities are bounded so that they fit the
 * order columns (numeric(18,2)) on both engines.
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

  if (typeof ev.timestamp === 'string') {
    const t = Date.parse(ev.timestamp);
    if (Number.isNaN(t)) fail('/timestamp', 'must be a valid date-time');
    else if (t < LIMITS.earliest) fail('/timestamp', 'must not be before 1970-01-01T00:00:00Z');
    else if (t > now + LIMITS.futureSkewMs)
      fail('/timestamp', 'must not be more than 24 hours in the future');
  }

  if (isObject(ev.payload)) {
    // An identify payload over the trait-key limit is refused as a whole, without walking it further.
    const traitsOk = ev.event_type !== 'identify' || checkTraits(ev.payload, fail);
    if (traitsOk) checkPayload(ev.payload, fail);
  }
  // The order rules are the event contract's (order-payload.ts): one definition for the door and the worker.
  if (ev.event_type === 'order') checkOrderPayload(ev.payload, fail);
  return errors;
}

function checkPayload(payload: Obj, fail: (path: string, message: string) => void): void {
  let reported = false;
  const walk = (v: unknown, path: string, depth: number): void => {
    if (reported) return;
    if (typeof v !== 'object' || v === null) return;
    if (depth > LIMITS.payloadDepth) {
      fail(path, `nests deeper than ${LIMITS.payloadDepth} levels`);
      reported = true;
      return;
    }
    // Pointers are built for containers only: one per scalar cost ~1 µs a key, and a 4 MiB batch
    // has ~400,000 keys to check in one synchronous validation.
    if (Array.isArray(v)) {
      for (let i = 0; i < v.length; i++) {
        const x: unknown = v[i];
        if (typeof x === 'object' && x !== null) walk(x, `${path}/${i}`, depth + 1);
      }
      return;
    }
    for (const k of Object.keys(v)) {
      if (k.length > LIMITS.text) {
        fail(`${path}/${escapePointer(k.slice(0, 50))}`, 'keys must be ≤ 200 characters');
        reported = true;
        return;
      }
      const x: unknown = (v as Obj)[k];
      if (typeof x === 'object' && x !== null) walk(x, `${path}/${escapePointer(k)}`, depth + 1);
    }
  };
  walk(payload, '/payload', 1);
  if (!reported && Buffer.byteLength(JSON.stringify(payload)) > LIMITS.payloadBytes) {
    fail('/payload', `must be at most ${LIMITS.payloadBytes} bytes as JSON`);
  }
}

/** An identify payload is one trait write: its keys (nested ones too) are bounded like the API's. */
function checkTraits(payload: Obj, fail: (path: string, message: string) => void): boolean {
  if (countTraitKeys(payload, TRAIT_LIMITS.keysPerWrite) <= TRAIT_LIMITS.keysPerWrite) return true;
  fail('/payload', TOO_MANY_TRAIT_KEYS);
  return false;
}

/** Checks every item of a batch; errors come out in item order. */
export function checkBatch(events: unknown, now: number): RuleError[] {
  if (!Array.isArray(events)) return [];
  return events.flatMap((ev, i) => checkEvent(ev, `/${i}`, now));
}
