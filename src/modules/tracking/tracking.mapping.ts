import { v5 as uuidv5 } from 'uuid';
import type { ErrorDetail } from '../../platform/errors';
import { MAX_ACCOUNT_ID_LENGTH } from '../accounts';
import { checkOrderPayload, type NewEvent, readChoices } from '../ingest';

/**
 * The Segment / RudderStack message → this service's event (docs/ingestion.md, "Segment and
 * RudderStack clients", has the table). Pure: the routes hand it the message, the batch around it
 * and the time of receipt; what comes out is an ordinary ingestion event, validated and stored like
 * any other (the ingest module's rules), plus, for a `group` call, the account's traits.
 */

export const MESSAGE_TYPES = ['track', 'identify', 'page', 'screen', 'group', 'alias'] as const;
export type MessageType = (typeof MESSAGE_TYPES)[number];

/** The short paths of the browser library (`/v1/t` …) and the type each stands for. */
export const SHORT_PATHS: Record<string, MessageType> = {
  t: 'track',
  i: 'identify',
  p: 'page',
  s: 'screen',
  g: 'group',
  a: 'alias',
};

/**
 * The namespace of the UUIDv5 an anonymous id that is not a UUID becomes. Fixed forever: the same
 * string must give the same id in every version and process, or a visitor would split in two.
 */
export const ANONYMOUS_ID_NAMESPACE = '6f1f8d3e-4b1a-5c67-9d2e-3a8b7c4d5e6f';

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

/**
 * An SDK's anonymous id as this service's `anonymous_id` (a UUID): a UUID is kept (lower-cased by
 * the log), anything else (a server library may send any string, a number) becomes the UUIDv5 of
 * its text, so every call with the same id lands on the same identifier.
 */
export function anonymousIdOf(raw: string): string {
  return UUID.test(raw) ? raw : uuidv5(raw, ANONYMOUS_ID_NAMESPACE);
}

/** The traits of an account (a `group` call), to keep beside the event. */
export interface GroupWrite {
  groupId: string;
  traits: Record<string, unknown>;
  /** ISO time of the call (the event's), for newer-wins. */
  at: string;
}

export type Mapped =
  | { ok: true; event: NewEvent; group: GroupWrite | null }
  | { ok: false; details: ErrorDetail[] };

export interface MapContext {
  /** Milliseconds since the epoch, when the request arrived. */
  receivedAt: number;
  /** The batch's own `sentAt` and `context` (a message's own win). */
  sentAt?: unknown;
  context?: unknown;
  /** `/batch/3` for item 3 of a batch, '' for a single call: the prefix of every detail's path. */
  at: string;
}

type Obj = Record<string, unknown>;
const isObject = (v: unknown): v is Obj => typeof v === 'object' && v !== null && !Array.isArray(v);

/** A string id as the SDKs send them: strings as they are, numbers as their text (old libraries). */
function idOf(v: unknown): string | undefined {
  if (typeof v === 'number' && Number.isFinite(v)) return String(v);
  if (typeof v !== 'string' || v.trim() === '') return undefined;
  return v;
}

function timeOf(v: unknown): number | undefined {
  if (v instanceof Date) return v.getTime();
  if (typeof v !== 'string' && typeof v !== 'number') return undefined;
  const t = typeof v === 'number' ? v : Date.parse(v);
  return Number.isFinite(t) ? t : undefined;
}

/**
 * When the event happened, as Segment computes it: the client's `timestamp` (else its
 * `originalTimestamp`), shifted by the clock skew the client showed when it sent the request
 * (`receivedAt - sentAt`), so a device whose clock is off by an hour still lands at the right time;
 * the time of receipt when the client gave none. A `sentAt` that is not a time leaves the client's
 * time as it is.
 */
export function occurredAt(msg: Obj, ctx: MapContext): string | { invalid: string } {
  const field = msg.timestamp !== undefined ? 'timestamp' : 'originalTimestamp';
  const raw = msg[field];
  if (raw === undefined || raw === null) return new Date(ctx.receivedAt).toISOString();
  const t = timeOf(raw);
  if (t === undefined) return { invalid: field };
  const sent = timeOf(msg.sentAt ?? ctx.sentAt);
  const skew = sent === undefined ? 0 : ctx.receivedAt - sent;
  const corrected = new Date(t + skew);
  return Number.isNaN(corrected.getTime()) ? { invalid: field } : corrected.toISOString();
}

/**
 * Segment's e-commerce events that are orders (its "Ecommerce Events" spec), and the status each
 * gives the order (docs/commerce.md: only completed orders count as revenue).
 */
const ORDER_EVENTS: Record<string, string> = {
  'Order Completed': 'completed',
  'Order Refunded': 'refunded',
  'Order Cancelled': 'cancelled',
};

/**
 * The order payload of a Segment order event: `order_id`, `total` (else `revenue`), `currency`, the
 * status its name gives, and its `products` as `items` (`product_id`, else `sku`; `name`, `price`,
 * `quantity`, `category`; other keys kept); every other property is kept. Null when the event is
 * not an order event, or is one this service's order rules would refuse (commerce/order-payload.ts):
 * it is then stored as the track event it was sent as, rather than lost.
 */
export function orderPayloadOf(event: string, props: Obj): Obj | null {
  const status = ORDER_EVENTS[event];
  if (status === undefined) return null;
  const { products, revenue, ...rest } = props;
  const payload: Obj = { ...rest, status };
  if (typeof payload.order_id === 'number') payload.order_id = String(payload.order_id);
  if (payload.total === undefined && revenue !== undefined) payload.total = revenue;
  if (Array.isArray(products)) {
    payload.items = products.map((p) => {
      if (!isObject(p)) return p;
      const { sku, product_id, ...item } = p;
      const id = product_id ?? sku;
      return { ...item, product_id: typeof id === 'number' ? String(id) : id };
    });
  }
  let ok = true;
  checkOrderPayload(payload, () => {
    ok = false;
  });
  return ok ? payload : null;
}

/** Segment's camelCase name traits as this service's profile fields (docs/profiles.md). */
const TRAIT_RENAMES: ReadonlyArray<readonly [string, string]> = [
  ['firstName', 'first_name'],
  ['lastName', 'last_name'],
];

function identifyTraits(msg: Obj, context: Obj | undefined): Obj {
  // RudderStack's browser library sends traits in context.traits, Segment's in traits: both count,
  // the message's own traits winning.
  const traits: Obj = {
    ...(isObject(context?.traits) ? context.traits : {}),
    ...(isObject(msg.traits) ? msg.traits : {}),
  };
  for (const [from, to] of TRAIT_RENAMES) {
    if (Object.hasOwn(traits, from) && !Object.hasOwn(traits, to)) {
      traits[to] = traits[from];
      delete traits[from];
    }
  }
  return traits;
}

/**
 * The consent choices a message's context carries: Segment's `consent.categoryPreferences`
 * (category → boolean) or RudderStack's `consentManagement` (`allowedConsentIds` granted,
 * `deniedConsentIds` denied; a category in both is denied). Both may come; Segment's win per
 * category. Undefined for none; a detail (path from the context) for an unusable one.
 */
export function consentOf(
  context: Obj | undefined,
):
  | { ok: true; categories: Record<string, boolean> | undefined }
  | { ok: false; path: string; message: string } {
  const out: Record<string, boolean> = {};
  const rudder = context?.consentManagement;
  if (isObject(rudder)) {
    for (const [key, granted] of [
      ['allowedConsentIds', true],
      ['deniedConsentIds', false],
    ] as const) {
      const ids = rudder[key];
      if (ids === undefined || ids === null) continue;
      if (!Array.isArray(ids) || ids.some((id) => typeof id !== 'string')) {
        return {
          ok: false,
          path: `/consentManagement/${key}`,
          message: 'must be an array of category ids (strings)',
        };
      }
      for (const id of ids as string[]) out[id] = granted;
    }
  }
  const segment = isObject(context?.consent) ? context.consent.categoryPreferences : undefined;
  if (isObject(segment)) Object.assign(out, segment);
  const read = readChoices(out);
  if (!read.ok) {
    const where = isObject(segment) ? '/consent/categoryPreferences' : '/consentManagement';
    return { ok: false, path: `${where}${read.path}`, message: read.message };
  }
  return { ok: true, categories: read.choices === null ? undefined : { ...read.choices } };
}

/** Where a detail about our event's field points in the client's message. */
const FIELD_OF: Record<string, string> = {
  identity: 'userId',
  anonymous_id: 'anonymousId',
  message_id: 'messageId',
  timestamp: 'timestamp',
};

/** A detail the ingest rules gave for the mapped event (`/0/payload/x`) as a path into the message. */
export function messagePath(eventPath: string, type: string, at: string): string {
  const rest = eventPath.replace(/^\/\d+/, '');
  const m = /^\/([^/]+)(.*)$/.exec(rest);
  if (!m) return at || '/';
  const [, field, tail] = m;
  if (field === 'payload') {
    const home = type === 'identify' || type === 'group' ? 'traits' : 'properties';
    return `${at}/${home}${type === 'group' ? tail!.replace(/^\/traits/, '') : tail}`;
  }
  if (field === 'event_name') return `${at}/${type === 'track' ? 'event' : 'name'}`;
  return `${at}/${FIELD_OF[field!] ?? field}`;
}

/**
 * One message → one event, or why it cannot be one. `type` is the route's for the single-call
 * endpoints, the message's own for a batch.
 */
export function mapMessage(message: unknown, routeType: MessageType | null, ctx: MapContext): Mapped {
  const fail = (path: string, message: string): Mapped => ({
    ok: false,
    details: [{ path: `${ctx.at}${path}`, message }],
  });
  if (!isObject(message)) return fail('', 'must be an object (a Segment message)');
  const type = routeType ?? message.type;
  if (typeof type !== 'string' || !(MESSAGE_TYPES as readonly string[]).includes(type)) {
    return fail('/type', `must be one of ${MESSAGE_TYPES.join(', ')}`);
  }
  const context = isObject(message.context)
    ? message.context
    : isObject(ctx.context)
      ? ctx.context
      : undefined;
  const when = occurredAt(message, ctx);
  if (typeof when !== 'string') return fail(`/${when.invalid}`, 'must be a date-time');

  const consent = consentOf(context);
  if (!consent.ok) {
    const where = isObject(message.context) ? '/context' : '';
    // A batch-level context is reported at the batch's own `context`, outside the message.
    const path = isObject(message.context) ? `${ctx.at}${where}${consent.path}` : `/context${consent.path}`;
    return { ok: false, details: [{ path, message: consent.message }] };
  }
  const userId = idOf(message.userId);
  const anonymous = idOf(message.anonymousId);
  const messageId = idOf(message.messageId);
  const props = isObject(message.properties) ? message.properties : {};
  const base = {
    ...(consent.categories !== undefined ? { consent: { categories: consent.categories } } : {}),
    ...(userId !== undefined ? { identity: userId } : {}),
    ...(anonymous !== undefined ? { anonymous_id: anonymousIdOf(anonymous) } : {}),
    ...(messageId !== undefined ? { message_id: messageId } : {}),
    timestamp: when,
  };
  const name = typeof message.name === 'string' && message.name !== '' ? message.name : undefined;

  switch (type as MessageType) {
    case 'track': {
      if (typeof message.event !== 'string' || message.event === '') {
        return fail('/event', 'a track call needs its event name');
      }
      const order = orderPayloadOf(message.event, props);
      return {
        ok: true,
        group: null,
        event: order
          ? { ...base, event_type: 'order', event_name: message.event, payload: order }
          : { ...base, event_type: 'track', event_name: message.event, payload: props },
      };
    }
    case 'identify':
      return {
        ok: true,
        group: null,
        event: {
          ...base,
          event_type: 'identify',
          event_name: 'Identify',
          payload: identifyTraits(message, context),
        },
      };
    case 'page':
    case 'screen': {
      const category = typeof message.category === 'string' ? message.category : undefined;
      const payload: Obj = { ...props };
      if (name !== undefined && !Object.hasOwn(payload, 'name')) payload.name = name;
      if (category !== undefined && !Object.hasOwn(payload, 'category')) payload.category = category;
      const fallback = type === 'page' ? 'Page Viewed' : 'Screen Viewed';
      return {
        ok: true,
        group: null,
        event: { ...base, event_type: 'page', event_name: name ?? fallback, payload },
      };
    }
    case 'group': {
      const groupId = idOf(message.groupId);
      if (groupId === undefined) return fail('/groupId', 'a group call needs its groupId');
      if (groupId.length > MAX_ACCOUNT_ID_LENGTH) {
        return fail('/groupId', `must be at most ${MAX_ACCOUNT_ID_LENGTH} characters (an account's id)`);
      }
      const traits = isObject(message.traits) ? message.traits : {};
      return {
        ok: true,
        group: { groupId, traits, at: when },
        event: { ...base, event_type: 'track', event_name: 'Group', payload: { group_id: groupId, traits } },
      };
    }
    case 'alias': {
      const previous = idOf(message.previousId);
      if (previous === undefined) return fail('/previousId', 'an alias call needs its previousId');
      if (userId === undefined) return fail('/userId', 'an alias call needs its userId');
      // The previous id is linked as an anonymous id: the identity rules link an identity to an
      // anonymous id (merging their profiles), never two identities of one type. An event carries one
      // anonymous id, so the message's own anonymousId gives way to the one the call is about.
      return {
        ok: true,
        group: null,
        event: {
          ...base,
          anonymous_id: anonymousIdOf(previous),
          event_type: 'track',
          event_name: 'Alias',
          payload: { previous_id: previous },
        },
      };
    }
  }
}
