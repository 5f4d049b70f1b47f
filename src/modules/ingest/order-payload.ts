/**
 * The order payload rules of `order` events (docs/ingestion.md), in one place: the statuses, the limits,
 * the defaults, the check at the door (`checkOrderPayload`, used by the ingest rules) and the reader
 * the worker uses (`readOrder`).
 *
 * Statuses: one of ORDER_STATUSES, compared without case or surrounding spaces and stored in lower
 * case. docs/ingestion.md names the default (`completed`) and only `completed` counts as
 * revenue; a closed set makes a typo (`complete`, `done`) a 400 at the door instead of an order
 * that silently never counts, and it is the set the API already published (docs/commerce.md).
 *
 * Defaults (`currency` USD, `status` completed) are applied once, when the event is appended
 * (`withOrderDefaults`, called by the ingest normaliser), so every reader of the log sees them.
 * `readOrder` runs the same function, a no-op on appended rows, so rows written by older versions
 * read the same.
 *
 * The reader accepts any value without throwing, because a row can reach the worker by roads the
 * door does not guard (old rows, direct inserts) and one bad row must never stall processing. An
 * unusable order (no id, bad total, status or currency) is a problem (the worker dead-letters the
 * event with it); an unusable line item field is dropped to null rather than losing the whole order.
 */

export const DEFAULT_CURRENCY = 'USD';
export const ORDER_STATUSES = ['pending', 'completed', 'cancelled', 'refunded'] as const;
export type OrderStatus = (typeof ORDER_STATUSES)[number];
export const DEFAULT_STATUS: OrderStatus = 'completed';
/**
 * Largest amount (order total, item or product price). The columns are numeric(18,2), which hold
 * less than 10^16 on both engines, and a profile's total_spend (same type) sums its orders: 10^12
 * leaves room for 9,999 maximal orders per profile, and keeps every cent exact in a JavaScript
 * number (10^14 cents < 2^53). The ingest rules and the product API refuse more with a 400.
 */
export const MAX_AMOUNT = 1e12;
export const MAX_TEXT = 200;
/** Line items of one order: more is a 400 at the door (docs/api.md "Input limits"). */
export const MAX_ITEMS = 500;
/** Largest quantity of a line item (an integer from 1). */
export const MAX_QUANTITY = 1_000_000;

const ISO_4217 = /^[A-Za-z]{3}$/;

/** The canonical status a payload value stands for, or null when it names none. */
export function readStatus(v: unknown): OrderStatus | null {
  if (typeof v !== 'string') return null;
  const s = v.trim().toLowerCase();
  return (ORDER_STATUSES as readonly string[]).includes(s) ? (s as OrderStatus) : null;
}

/**
 * The payload with the documented defaults made explicit: currency upper-case (USD when absent),
 * status canonical (completed when absent). A value that is not valid is left as it is, for the
 * rules to refuse or the reader to report.
 */
export function withOrderDefaults(payload: Record<string, unknown>): Record<string, unknown> {
  const c = payload.currency;
  const currency =
    c === undefined || c === null ? DEFAULT_CURRENCY : typeof c === 'string' ? c.toUpperCase() : c;
  const st = payload.status;
  const status = st === undefined || st === null ? DEFAULT_STATUS : (readStatus(st) ?? st);
  if (currency === c && status === st) return payload;
  return { ...payload, currency, status };
}

export interface OrderItem {
  product_id: string | null;
  name: string | null;
  price: number | null;
  quantity: number;
  category: string | null;
}

export interface NormalizedOrder {
  orderId: string;
  total: number;
  currency: string;
  status: OrderStatus;
  items: OrderItem[];
}

// biome-ignore lint/suspicious/noControlCharactersInRegex: NUL is exactly what PostgreSQL text refuses
const NUL = /\u0000/;

/** A non-empty identifier-like string (numbers are accepted and stringified), else null. */
function readId(v: unknown): string | null {
  if (typeof v === 'number' && Number.isSafeInteger(v)) return String(v);
  if (typeof v !== 'string') return null;
  const s = v.trim();
  return s.length > 0 && s.length <= MAX_TEXT && !NUL.test(s) ? s : null;
}

/** Free text (names, categories) is cut to the documented maximum rather than refused. */
function readText(v: unknown): string | null {
  if (typeof v !== 'string') return null;
  const s = v.trim().replace(new RegExp(NUL.source, 'g'), '');
  return s.length > 0 ? s.slice(0, MAX_TEXT) : null;
}

export function readAmount(v: unknown): number | null {
  return typeof v === 'number' && Number.isFinite(v) && v >= 0 && v <= MAX_AMOUNT ? v : null;
}

function readItem(v: unknown): OrderItem | null {
  if (typeof v !== 'object' || v === null || Array.isArray(v)) return null;
  const o = v as Record<string, unknown>;
  const q = o.quantity;
  const quantity = isQuantity(q) ? (q as number) : 1;
  return {
    product_id: readId(o.product_id),
    name: readText(o.name),
    price: readAmount(o.price),
    quantity,
    category: readText(o.category),
  };
}

/**
 * The order id a payload's `order_id` stands for, as the order is stored under it; null when it is
 * not usable. The order guard reads the waiting events' ids with it too (given as text by the backlog).
 */
export const readOrderId = (v: unknown): string | null => readId(v);

export function readOrderPayload(payload: unknown): NormalizedOrder | null {
  const read = readOrder(payload);
  return 'order' in read ? read.order : null;
}

/** readOrderPayload, saying why an order is unusable. */
export function readOrder(payload: unknown): { order: NormalizedOrder } | { problem: string } {
  if (typeof payload !== 'object' || payload === null || Array.isArray(payload)) {
    return { problem: 'payload is not an object' };
  }
  const p = withOrderDefaults(payload as Record<string, unknown>);
  const orderId = readOrderId(p.order_id);
  if (orderId === null) return { problem: `order_id must be a string of 1 to ${MAX_TEXT} characters` };
  const total = readAmount(p.total);
  if (total === null) return { problem: `total must be a number from 0 to ${MAX_AMOUNT}` };
  if (typeof p.currency !== 'string' || !ISO_4217.test(p.currency)) {
    return { problem: 'currency must be an ISO 4217 code of three letters' };
  }
  const status = readStatus(p.status);
  if (status === null) return { problem: STATUS_MESSAGE.replace('must', 'status must') };
  const items = Array.isArray(p.items)
    ? p.items
        .slice(0, MAX_ITEMS)
        .map(readItem)
        .filter((i): i is OrderItem => i !== null)
    : [];
  return { order: { orderId, total, currency: p.currency, status, items } };
}

const STATUS_MESSAGE = `must be one of: ${ORDER_STATUSES.join(', ')}`;
const AMOUNT_MESSAGE = `must be a number from 0 to ${MAX_AMOUNT} (stored with 2 decimals)`;
const TEXT_MESSAGE = `must be a string of 1 to ${MAX_TEXT} characters`;
const isObject = (v: unknown): v is Record<string, unknown> =>
  typeof v === 'object' && v !== null && !Array.isArray(v);
const isText = (v: unknown, min = 1): v is string =>
  typeof v === 'string' && v.length >= min && v.length <= MAX_TEXT;
const isQuantity = (v: unknown): boolean =>
  typeof v === 'number' && Number.isInteger(v) && v >= 1 && v <= MAX_QUANTITY;

/**
 * The door's check of an order payload, stricter than the reader (which drops bad item fields):
 * reports every problem through `fail(path, message)`, paths relative to the event (`/payload/…`).
 */
export function checkOrderPayload(payload: unknown, fail: (path: string, message: string) => void): void {
  if (!isObject(payload)) {
    fail('/payload', 'is required for order events (order_id and total)');
    return;
  }
  if (!isText(payload.order_id)) fail('/payload/order_id', TEXT_MESSAGE);
  if (readAmount(payload.total) === null) fail('/payload/total', AMOUNT_MESSAGE);
  const { currency, status, items } = payload;
  if (currency !== undefined && !(typeof currency === 'string' && ISO_4217.test(currency))) {
    fail('/payload/currency', 'must be an ISO 4217 code of three letters, e.g. USD');
  }
  if (status !== undefined && readStatus(status) === null) fail('/payload/status', STATUS_MESSAGE);
  if (items === undefined) return;
  if (!Array.isArray(items)) {
    fail('/payload/items', 'must be an array');
    return;
  }
  if (items.length > MAX_ITEMS) {
    fail('/payload/items', `must have at most ${MAX_ITEMS} items`);
    return;
  }
  items.forEach((item, i) => {
    const p = `/payload/items/${i}`;
    if (!isObject(item)) {
      fail(p, 'must be an object');
      return;
    }
    if (!isText(item.product_id)) fail(`${p}/product_id`, TEXT_MESSAGE);
    if (item.name !== undefined && !isText(item.name, 0))
      fail(`${p}/name`, `must be a string of at most ${MAX_TEXT} characters`);
    if (item.category !== undefined && !isText(item.category, 0))
      fail(`${p}/category`, `must be a string of at most ${MAX_TEXT} characters`);
    if (item.price !== undefined && readAmount(item.price) === null) fail(`${p}/price`, AMOUNT_MESSAGE);
    if (item.quantity !== undefined && !isQuantity(item.quantity))
      fail(`${p}/quantity`, `must be an integer from 1 to ${MAX_QUANTITY}`);
  });
}

/**
 * The products an order mentions, one per product_id (the last line wins when an id repeats, since
 * one statement cannot write a row twice), sorted by id so concurrent writers lock rows in the same
 * order and cannot deadlock each other.
 */
export function productsOf(items: readonly OrderItem[]): Array<OrderItem & { product_id: string }> {
  const byId = new Map<string, OrderItem & { product_id: string }>();
  for (const item of items) {
    if (item.product_id !== null) byId.set(item.product_id, item as OrderItem & { product_id: string });
  }
  return [...byId.values()].sort((a, b) =>
    a.product_id < b.product_id ? -1 : a.product_id > b.product_id ? 1 : 0,
  );
}
