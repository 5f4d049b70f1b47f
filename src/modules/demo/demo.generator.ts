import {
  BILLING,
  CATALOGUE,
  COMPANIES,
  COMPANY_SIZES,
  COUNTRIES,
  DOMAINS,
  EURO_COUNTRIES,
  FIRST,
  LAST,
  PAGES,
  PLAN_WEIGHTS,
  PLANS,
  SOURCE_WEIGHTS,
  SOURCES,
  TAGS,
  WEIGHTS,
} from './demo.catalogue';
import { ascii, fillOrder, refererOf } from './demo.draws';
import { createRng, mixSeed } from './prng';

/**
 * The synthetic dataset behind `cdp demo`, pure: a seed, a customer count and a clock in, ingestion
 * events out (docs/ingestion.md shapes, exactly what a client would POST). Each customer draws from its
 * own random stream (seeded by the dataset seed and the customer's number), so customer i is the
 * same whatever the count, and events stream out one customer at a time in constant memory.
 *
 * The behaviour follows the models the intelligence module fits, so a fit on the demo finds
 * structure instead of noise:
 * - acquisition spread over the window, growing towards the present;
 * - a first visit is anonymous browsing (`page`, `track`); most visitors sign up (`identify` with
 *   e-mail, names and traits), some later come back on a second device and log in there (an
 *   anonymous profile that merges into the known one);
 * - buyers purchase as in the Pareto/NBD model: a Poisson purchase rate per customer drawn from a
 *   gamma distribution, and an exponential lifetime whose rate is gamma distributed too, so many
 *   customers quietly churn;
 * - order values follow the gamma-gamma model: each customer has a typical spend (gamma), each
 *   order scatters around it (gamma); the order is then filled with catalogue items, and its total
 *   is exactly the sum of its lines;
 * - a few orders are refunded some days later (a second event for the same order_id).
 *
 * Its traits have the nested shape docs/segments.md queries (`plan.tier`, `company.domain`,
 * `company.size`, `tags`), and its events the names it counts (`Product Viewed` with a `price`,
 * `Checkout Completed`), so every example there finds members in the demo workspace
 * (segments/docs-examples.test.ts checks it).
 */

export type { Product } from './demo.catalogue';

export interface DemoOptions {
  seed: number;
  customers: number;
  /** The clock: every event happens in [now - months, now]. */
  now: Date;
  /** Length of the history; 18 months by default. */
  months?: number;
}

export interface DemoEvent {
  event_type: 'page' | 'track' | 'identify' | 'order';
  event_name: string;
  anonymous_id?: string;
  identity?: string;
  payload: Record<string, unknown>;
  timestamp: string;
  /** Stable per seed, customer and event: loading the same dataset twice stores it once. */
  message_id: string;
}

const DAY = 86_400_000;
const WEEK = 7 * DAY;
const MINUTE = 60_000;

/**
 * Model parameters (time in weeks, as in the literature). Purchase rate λ ~ Gamma(r, α) with mean
 * r/α ≈ 0.11/week (≈ 6 a year while active); dropout rate μ ~ Gamma(s, β) with mean ≈ 0.03/week;
 * spend: per-customer ν ~ Gamma(q, γ), order value ~ Gamma(p, ν), mean p·γ/(q−1) ≈ $58.
 */
export const MODEL = {
  signupRate: 0.72,
  buyerRate: 0.75,
  secondDeviceRate: 0.15,
  refundRate: 0.04,
  planUpgradeRate: 0.1,
  r: 0.9,
  alpha: 8,
  s: 0.7,
  beta: 22,
  p: 6.25,
  q: 3.74,
  gamma: 25.5,
  maxOrders: 60,
} as const;

const cents = (x: number) => Math.round(x * 100);

interface Session {
  anon: string;
  identity: string | undefined;
}

/** Every event of the dataset, one customer after another, each customer's in time order. */
export function* generateDemoEvents(opts: DemoOptions): Generator<DemoEvent> {
  for (let i = 0; i < opts.customers; i++) yield* generateCustomer(opts, i);
}

/** The events of customer `i` (0-based), in time order (ties keep the order they happened in). */
export function generateCustomer(opts: DemoOptions, i: number): DemoEvent[] {
  const events = simulateCustomer(opts, i);
  return events.sort((a, b) => (a.timestamp < b.timestamp ? -1 : a.timestamp > b.timestamp ? 1 : 0));
}

function simulateCustomer(opts: DemoOptions, i: number): DemoEvent[] {
  const rng = createRng(mixSeed(opts.seed, i));
  const now = opts.now.getTime();
  const start = now - Math.round(((opts.months ?? 18) * 365.25 * DAY) / 12);
  const events: DemoEvent[] = [];
  let n = 0;
  const emit = (
    at: number,
    s: Session,
    type: DemoEvent['event_type'],
    name: string,
    payload: Record<string, unknown>,
  ) => {
    const id = n++;
    if (at > now) return;
    const ev: DemoEvent = {
      event_type: type,
      event_name: name,
      anonymous_id: s.anon,
      payload,
      timestamp: new Date(Math.floor(at)).toISOString(),
      message_id: `demo-${opts.seed}-${i}-${id}`,
    };
    if (s.identity) ev.identity = s.identity;
    events.push(ev);
  };

  /** A browsing visit starting at `t`; returns when it ended. */
  const browse = (t: number, s: Session, pages: number): number => {
    let at = t;
    for (let k = 0; k < pages; k++) {
      if (rng.chance(0.55)) {
        const [title, path] = rng.pick(PAGES);
        emit(at, s, 'page', title, { path, title, ...(k === 0 ? { referrer: refererOf(rng) } : {}) });
      } else {
        const prod = CATALOGUE[rng.weighted(WEIGHTS)]!;
        emit(at, s, 'page', 'Product', { path: `/shop/${prod.product_id.toLowerCase()}`, title: prod.name });
        emit(at + rng.int(5, 60) * 1000, s, 'track', 'Product Viewed', {
          product_id: prod.product_id,
          name: prod.name,
          price: prod.price,
          category: prod.category,
        });
      }
      at += rng.int(20, 240) * 1000;
    }
    return at;
  };

  // Acquisition: skewed towards the present (a growing shop), never in the last hour.
  const t0 = start + (now - start - 60 * MINUTE) * rng.next() ** 0.7;
  const device: Session = { anon: rng.uuid(), identity: undefined };
  let t = browse(t0, device, rng.int(1, 6));

  if (!rng.chance(MODEL.signupRate)) {
    // An anonymous visitor: maybe one more visit, then gone.
    if (rng.chance(0.35)) browse(t + rng.exponential(1 / (10 * DAY)), device, rng.int(1, 4));
    return events;
  }

  const first = rng.pick(FIRST);
  const last = rng.pick(LAST);
  const email = `${ascii(first)}.${ascii(last)}.${i + 1}@${rng.pick(DOMAINS)}`;
  const plan = PLANS[rng.weighted(PLAN_WEIGHTS)]!;
  t += rng.int(1, 10) * MINUTE;
  const country = rng.pick(COUNTRIES);
  const newsletter = rng.chance(0.4);
  const traits: Record<string, unknown> = {
    email,
    first_name: first,
    last_name: last,
    plan: { tier: plan, billing: rng.pick(BILLING) },
    country,
    signup_source: SOURCES[rng.weighted(SOURCE_WEIGHTS)]!,
    newsletter,
    tags: [...(newsletter ? ['newsletter'] : []), ...TAGS.filter(([, p]) => rng.chance(p)).map(([t]) => t)],
  };
  if (plan !== 'free' || rng.chance(0.2)) {
    const name = rng.pick(COMPANIES);
    const domain = `${ascii(name.split(' ')[0]!).toLowerCase()}.example`;
    traits.company = { name, domain, size: rng.pick(COMPANY_SIZES) };
  }
  const currency = EURO_COUNTRIES.has(country) ? 'EUR' : 'USD';
  emit(t, device, 'identify', 'Signed Up', traits);
  const known: Session = { anon: device.anon, identity: email };

  // A later login from a second device: anonymous browsing first, then the login links it.
  if (rng.chance(MODEL.secondDeviceRate)) {
    const other: Session = { anon: rng.uuid(), identity: undefined };
    const at = browse(t + rng.exponential(1 / (30 * DAY)), other, rng.int(1, 3));
    emit(at + MINUTE, { anon: other.anon, identity: email }, 'identify', 'Logged In', { email });
  }
  if (rng.chance(MODEL.planUpgradeRate) && plan !== 'enterprise') {
    const next = PLANS[PLANS.indexOf(plan) + 1]!;
    emit(t + rng.exponential(1 / (60 * DAY)), known, 'identify', 'Plan Changed', {
      plan: { tier: next },
      previous_plan: plan,
    });
  }

  if (!rng.chance(MODEL.buyerRate)) {
    // Signed up, never bought: a few more visits.
    let at = t;
    for (let k = rng.int(0, 3); k > 0; k--)
      at = browse(at + rng.exponential(1 / (20 * DAY)), known, rng.int(1, 4));
    return events;
  }

  // Pareto/NBD: purchase rate and lifetime per customer; first purchase soon after sign-up.
  const lambda = rng.gamma(MODEL.r, MODEL.alpha) / WEEK;
  const mu = rng.gamma(MODEL.s, MODEL.beta) / WEEK;
  const death = t + rng.exponential(mu);
  const nu = rng.gamma(MODEL.q, MODEL.gamma);
  let at = t + rng.exponential(1 / (2 * DAY));
  for (let k = 0; k < MODEL.maxOrders && at <= Math.min(death, now); k++) {
    const orderNo = k + 1;
    const sessionEnd = browse(at, known, rng.int(1, 3));
    const lines = fillOrder(rng, rng.gamma(MODEL.p, nu));
    const total = lines.reduce((sum, l) => sum + cents(l.price) * l.quantity, 0) / 100;
    const orderId = `D${opts.seed}-${i + 1}-${orderNo}`;
    const orderAt = sessionEnd + rng.int(1, 8) * MINUTE;
    emit(orderAt - 1000, known, 'track', 'Checkout Completed', { order_id: orderId, total, currency });
    emit(orderAt, known, 'order', 'Order Completed', {
      order_id: orderId,
      total,
      currency,
      status: 'completed',
      items: lines,
    });
    if (rng.chance(MODEL.refundRate)) {
      emit(orderAt + rng.int(2, 20) * DAY, known, 'order', 'Order Refunded', {
        order_id: orderId,
        total,
        currency,
        status: 'refunded',
        items: lines,
      });
    }
    at = orderAt + rng.exponential(lambda);
  }
  return events;
}
