/**
 * Customer summaries (x, t_x, T, z̄) — the sufficient statistics of the BG/NBD family and Gamma-Gamma.
 * This pure version is the reference: the product's SQL version is to be property-tested against it.
 *
 * Rules (docs/intelligence.md, and the ones that reproduce the CDNOW summary files exactly):
 * - only transactions at or before `asOf` count;
 * - transactions on the same UTC calendar day are merged into one (amounts added);
 * - x = purchase days − 1 (repeat purchases); t_x = (last day − first day) / 7; T = (day of asOf −
 *   first day) / 7, all in weeks;
 * - z̄ = mean amount of the repeat purchase days (first day excluded), 0 when x = 0.
 */

export interface Transaction {
  /** When the order was placed (a Date, or anything `Date.parse` reads, e.g. ISO 8601). */
  at: Date | string | number;
  /** Order value in the order currency. */
  amount: number;
}

export interface CustomerSummary {
  /** Repeat purchase days in the calibration period. */
  x: number;
  /** Weeks from the first to the last purchase day (0 when x = 0). */
  tx: number;
  /** Weeks from the first purchase day to the day of asOf. */
  T: number;
  /** Mean value of the repeat purchase days; 0 when x = 0. */
  zbar: number;
  /** Sum of all purchase days' values, first included (the RFM "monetary" input). */
  totalSpend: number;
  /** Whole days from the last purchase day to the day of asOf (the RFM "recency" input). */
  daysSinceLast: number;
}

const MS_PER_DAY = 86_400_000;

/** The UTC calendar day number (days since 1970-01-01) of a moment. */
export function toUtcDay(at: Date | string | number): number {
  return Math.floor(toMs(at) / MS_PER_DAY);
}

/** Purchase days (UTC) with their summed amounts, sorted, for transactions at or before asOf. */
export function mergePurchaseDays(
  transactions: readonly Transaction[],
  asOf: Date | string | number,
): Array<{ day: number; amount: number }> {
  const limit = toMs(asOf);
  const byDay = new Map<number, number>();
  for (const t of transactions) {
    if (toMs(t.at) > limit) continue;
    const day = toUtcDay(t.at);
    byDay.set(day, (byDay.get(day) ?? 0) + t.amount);
  }
  return [...byDay.entries()].sort((p, q) => p[0] - q[0]).map(([day, amount]) => ({ day, amount }));
}

/** The summary of one customer at asOf, or null when they had no transaction by then. */
export function summarizeCustomer(
  transactions: readonly Transaction[],
  asOf: Date | string | number,
): CustomerSummary | null {
  const days = mergePurchaseDays(transactions, asOf);
  if (days.length === 0) return null;
  const first = days[0]!;
  const last = days[days.length - 1]!;
  const asOfDay = toUtcDay(asOf);
  const x = days.length - 1;
  let repeatSpend = 0;
  for (let i = 1; i < days.length; i++) repeatSpend += days[i]!.amount;
  return {
    x,
    tx: (last.day - first.day) / 7,
    T: (asOfDay - first.day) / 7,
    zbar: x > 0 ? repeatSpend / x : 0,
    totalSpend: repeatSpend + first.amount,
    daysSinceLast: asOfDay - last.day,
  };
}

/** Summaries of many customers keyed by id; customers with nothing by asOf are left out. */
export function summarizeCustomers<K>(
  transactionsByCustomer: ReadonlyMap<K, readonly Transaction[]>,
  asOf: Date | string | number,
): Map<K, CustomerSummary> {
  const out = new Map<K, CustomerSummary>();
  for (const [id, transactions] of transactionsByCustomer) {
    const s = summarizeCustomer(transactions, asOf);
    if (s) out.set(id, s);
  }
  return out;
}

function toMs(at: Date | string | number): number {
  const ms = at instanceof Date ? at.getTime() : typeof at === 'number' ? at : Date.parse(at);
  if (!Number.isFinite(ms)) throw new RangeError(`not a date: ${String(at)}`);
  return ms;
}
