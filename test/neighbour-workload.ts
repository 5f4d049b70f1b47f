import { letTimePass } from './wait';

/**
 * The noisy-neighbour workload, shared by test/noisy-neighbour.test.ts (a bound that holds on any
 * machine) and bench/neighbour.bench.ts (the tight targets): workspace A does the worst it can
 * through its own API and within its own limits, while workspace B does what a shop's back end
 * does. No vitest import: the bench runs it too.
 */

/** The heaviest query the language allows on events: a payload filter over the whole history. */
export const HEAVY_QUERY = {
  event: { name: 'Added to Cart', within_days: 3650, where: [{ property: 'price', op: 'gt', value: 10 }] },
  count: { op: 'gte', value: 2 },
};

export interface Sample {
  kind: string;
  ms: number;
  status: number;
}

export interface Tenant {
  url: string;
  key: string;
}

async function timed(kind: string, url: string, init: RequestInit): Promise<Sample> {
  const t0 = performance.now();
  try {
    const res = await fetch(url, init);
    await res.arrayBuffer();
    return { kind, ms: performance.now() - t0, status: res.status };
  } catch {
    return { kind, ms: performance.now() - t0, status: 599 };
  }
}

const post = (key: string, body: unknown): RequestInit => ({
  method: 'POST',
  headers: { 'content-type': 'application/json', 'x-api-key': key },
  body: JSON.stringify(body),
});

/**
 * B's traffic until `until` (performance.now() time): a single event, then a read of a page of
 * profiles, `ratePerSecond` pairs a second at most (paced, so B's own load is the same idle or busy).
 */
export async function quietTraffic(b: Tenant, until: number, ratePerSecond = 20): Promise<Sample[]> {
  const samples: Sample[] = [];
  const gap = 1000 / ratePerSecond;
  for (let n = 0; performance.now() < until; n++) {
    const t0 = performance.now();
    samples.push(
      await timed(
        'ingest',
        `${b.url}/api/ingest`,
        post(b.key, {
          identity: `b${n % 50}@example.com`,
          event_type: 'track',
          event_name: 'Viewed',
          payload: { n },
        }),
      ),
    );
    samples.push(
      await timed('read', `${b.url}/tenant/profiles?limit=5`, { headers: { 'x-api-key': b.key } }),
    );
    const left = gap - (performance.now() - t0);
    if (left > 0) await letTimePass(left, 'B paces its requests, the same whether A is idle or busy');
  }
  return samples;
}

/** A's worst, until `until`, each kind of abuse in its own loop; answers how many of each A sent. */
export async function worstNeighbour(
  a: Tenant,
  until: number,
  /** Only these kinds of abuse (all when absent): the bench uses it to say which one costs B. */
  only?: ReadonlySet<string>,
): Promise<Map<string, number[]>> {
  const got = new Map<string, number[]>();
  const loop = async (kind: string, act: (i: number) => Promise<Sample>) => {
    if (only && !only.has(kind)) return;
    for (let i = 0; performance.now() < until; i++) {
      const s = await act(i);
      got.set(kind, [...(got.get(kind) ?? []), s.status]);
    }
  };
  const windows = [1, 7, 30, 365, 3650];
  await Promise.all([
    // More concurrent calculations than its share: the rest are 429s, which cost nothing.
    ...Array.from({ length: 4 }, () =>
      loop('calculate', () =>
        timed('calculate', `${a.url}/tenant/segments/calculate`, post(a.key, { query: HEAVY_QUERY })),
      ),
    ),
    // Saved segments over every kind of window, each evaluated in the background and again as time moves.
    loop('save segment', (i) =>
      timed(
        'save segment',
        `${a.url}/tenant/segments`,
        post(a.key, {
          name: `heavy ${i}`,
          query: {
            ...HEAVY_QUERY,
            event: { ...HEAVY_QUERY.event, within_days: windows[i % windows.length] },
          },
        }),
      ),
    ),
    loop('fit', () => timed('fit', `${a.url}/intelligence/models/fit`, post(a.key, {}))),
    // Batches of 100 events as fast as it is answered (its rate limit answers 429 past it).
    loop('batch', (i) =>
      timed(
        'batch',
        `${a.url}/tenant/ingest/batch`,
        post(
          a.key,
          Array.from({ length: 100 }, (_, k) => ({
            anonymous_id: `00000000-0000-4000-9000-${String((i * 100 + k) % 1e12).padStart(12, '0')}`,
            event_type: 'track',
            event_name: 'Added to Cart',
            payload: { price: k },
          })),
        ),
      ),
    ),
    // Anonymous preflights from a foreign origin.
    loop('preflight', () =>
      timed('preflight', `${a.url}/api/ingest`, {
        method: 'OPTIONS',
        headers: { origin: 'https://not-a-customer.example', 'access-control-request-method': 'POST' },
      }),
    ),
  ]);
  return got;
}

export const quantile = (xs: readonly number[], q: number): number => {
  if (xs.length === 0) return Number.NaN;
  const sorted = [...xs].sort((x, y) => x - y);
  return sorted[Math.min(sorted.length - 1, Math.floor(sorted.length * q))]!;
};
