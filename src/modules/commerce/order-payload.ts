/**
 * Reads an `order` event payload (contract §4) into a normalized order, pure. The ingest path
 * validates payloads at the door; this reader still accepts any value without throwing, because
 * events can reach the worker by other roads (the demo loader, old rows, direct inserts) and one bad
 * row must never stall processing. An unusable order (no id, bad total, status or currency) is null
 * (`readOrder` says why, for the dead letter the worker writes); an unusable line item field is
 * dropped to null rather than losing the whole order.
 */

export const DEFAULT_CURRENCY = 'USD';
export const DEFAULT_STATUS = 'completed';
/**
 * Largest amount (order total, item or product price). The columns are numeric(18,2), which hold
 * less than 10^16 on both engines, and a profile's total_spend (same type) sums its orders: 10^12
 * leaves room for 9,999 maximal orders per profile, and keeps every cent exact in a JavaScript
 * number (10^14 cents < 2^53). The ingest rules and the product API refuse more with a 400.
 */
export const MAX_AMOUNT = 1e12;
export const MAX_TEXT = 200;
/** Line items of one order (the ingest rules refuse more). */
export const MAX_ITEMS = 500;
/** Largest quantity of a line item (an integer from 1). */
export const MAX_QUANTITY = 1_000_000;

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
  status: string;
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
  const quantity = typeof q === 'number' && Number.isInteger(q) && q >= 1 && q <= MAX_QUANTITY ? q : 1;
  return {
    product_id: readId(o.product_id),
    name: readText(o.name),
    price: readAmount(o.price),
    quantity,
    category: readText(o.category),
  };
}

export function readOrderPayload(payload: unknown): NormalizedOrder | null {
  const read = readOrder(payload);
  return 'order' in read ? read.order : null;
}

/** readOrderPayload, saying why an order is unusable. */
export function readOrder(payload: unknown): { order: NormalizedOrder } | { problem: string } {
  if (typeof payload !== 'object' || payload === null || Array.isArray(payload)) {
    return { problem: 'payload is not an object' };
  }
  const p = payload as Record<string, unknown>;
  const orderId = readId(p.order_id);
  if (orderId === null) return { problem: `order_id must be a string of 1 to ${MAX_TEXT} characters` };
  const total = readAmount(p.total);
  if (total === null) return { problem: `total must be a number from 0 to ${MAX_AMOUNT}` };

  let currency = DEFAULT_CURRENCY;
  if (p.currency !== undefined && p.currency !== null) {
    if (typeof p.currency !== 'string' || !/^[A-Za-z]{3}$/.test(p.currency)) {
      return { problem: 'currency must be an ISO 4217 code of three letters' };
    }
    currency = p.currency.toUpperCase();
  }
  let status = DEFAULT_STATUS;
  if (p.status !== undefined && p.status !== null) {
    const bad = { problem: 'status must be a word of at most 50 letters, digits, _ or -' };
    if (typeof p.status !== 'string') return bad;
    status = p.status.trim().toLowerCase();
    if (!/^[a-z][a-z0-9_-]{0,49}$/.test(status)) return bad;
  }
  const items = Array.isArray(p.items)
    ? p.items
        .slice(0, MAX_ITEMS)
        .map(readItem)
        .filter((i): i is OrderItem => i !== null)
    : [];
  return { order: { orderId, total, currency, status, items } };
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
