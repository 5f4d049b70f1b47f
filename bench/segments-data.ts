import type { Db, Queryable } from '../src/platform/db';

/**
 * The segment benchmark's dataset, written straight into the tables with `generate_series` (a bulk
 * load, as an import would do; the ingest path is measured by its own benches): profiles with
 * realistic attributes, a year of processed events and of orders, spread over the profiles by a
 * multiplicative hash so that activity is uneven, as it is in a real shop. Deterministic: the same
 * sizes give the same rows, so the benchmark's hand-written queries know what they count. An event
 * is processed as the pipeline leaves it: off the backlog (its trigger does not fire during the
 * load), with its row in event_profiles (migration 0026) and its typed property rows (migration
 * 0029), under the same seq.
 *
 * Secondary indexes of the four tables are dropped during the load and rebuilt after it (each
 * index built once in a sort is several times faster than maintained row by row), then the tables
 * are vacuumed and analyzed, as a live database's autovacuum would have them.
 */

export interface DatasetSize {
  profiles: number;
  events: number;
  orders: number;
}

/** Event names and their share of the stream (tenths). */
export const EVENT_NAMES = [
  'Page Viewed',
  'Page Viewed',
  'Page Viewed',
  'Page Viewed',
  'Product Viewed',
  'Product Viewed',
  'Product Viewed',
  'Added to Cart',
  'Checkout Started',
  'Signed In',
] as const;

const CHUNK = 1_000_000;
/**
 * A bulk statement of the load may run for minutes (a million events and their property rows), far
 * past the storage port's default bound for one statement (5 s on PostgreSQL).
 */
const LOAD = { timeoutMs: 60 * 60_000 };

/** A profile's uuid from its number (1-based), the same in SQL and in the benchmark. */
export const profileUuidSql = (i: string) =>
  `('00000000-0000-4000-8000-' || lpad(to_hex(${i}), 12, '0'))::uuid`;

export async function loadSegmentDataset(
  db: Db,
  workspaceId: string,
  size: DatasetSize,
  progress: (msg: string) => void = () => {},
): Promise<void> {
  await db.transaction((tx) => load(tx, workspaceId, size, progress));
  const t = performance.now();
  for (const table of TABLES) await db.query(`VACUUM ANALYZE ${table}`, [], LOAD);
  progress(`vacuum analyze in ${((performance.now() - t) / 1000).toFixed(0)} s`);
}

const TABLES = ['profiles', 'events', 'event_profiles', 'event_properties', 'orders'];

/** Product categories and brands in event payloads (`category`, nested `product.brand`). */
export const CATEGORIES = ['coffee', 'tea', 'gear', 'gifts', 'books', 'cups', 'filters', 'beans'] as const;
export const BRANDS = [
  'acme',
  'globex',
  'initech',
  'umbrella',
  'hooli',
  'stark',
  'wayne',
  'wonka',
  'tyrell',
  'soylent',
] as const;

async function load(
  q: Queryable,
  workspaceId: string,
  size: DatasetSize,
  progress: (msg: string) => void,
): Promise<void> {
  const tables = TABLES;
  // No per-row trigger (the backlog's) or foreign-key check during the load: a bulk import's way.
  await q.query("SET LOCAL session_replication_role = 'replica'");
  const { rows: idx } = await q.query<{ indexname: string; indexdef: string }>(
    `SELECT i.indexname, i.indexdef FROM pg_indexes i
      WHERE i.schemaname = current_schema() AND i.tablename = ANY($1::text[])
        AND NOT EXISTS (SELECT 1 FROM pg_constraint c WHERE c.conname = i.indexname)`,
    [tables],
  );
  for (const { indexname } of idx) await q.query(`DROP INDEX ${indexname}`);

  const t2 = performance.now();
  for (let from = 1; from <= size.orders; from += CHUNK) {
    const to = Math.min(size.orders, from + CHUNK - 1);
    await q.query(
      `INSERT INTO orders (workspace_id, order_id, profile_id, status, total, currency, items, occurred_at,
                           event_id, status_at, completed_at)
       SELECT $1, 'o' || g, ${profileUuidSql(`1 + (g * 40503) % $4`)},
              CASE WHEN g % 20 = 0 THEN 'refunded' WHEN g % 10 = 0 THEN 'pending' ELSE 'completed' END,
              (10 + (g * 17) % 490)::numeric, 'USD',
              jsonb_build_array(jsonb_build_object('product_id', 'p' || (g % 1000), 'name', 'Product',
                'price', 10, 'quantity', 1, 'category', 'cat' || (g % 10))),
              now() - ((g * 104729) % (365 * 86400)) * interval '1 second', 'evt_order_' || g, now(), now()
         FROM generate_series($2::bigint, $3::bigint) g`,
      [workspaceId, from, to, size.profiles],
      LOAD,
    );
  }
  progress(`${size.orders} orders in ${((performance.now() - t2) / 1000).toFixed(0)} s`);

  const t0 = performance.now();
  // Attributes: plan (60% free, 30% pro, 10% enterprise), country (skewed), age, tags, nested prefs.
  // total_spend and the completed-order summary come from the orders (loaded first), as commerce
  // keeps them: segment conditions on completed orders read them (migration 0021).
  for (let from = 1; from <= size.profiles; from += CHUNK) {
    const to = Math.min(size.profiles, from + CHUNK - 1);
    await q.query(
      `INSERT INTO profiles (id, workspace_id, email, first_name, attributes, total_spend, completed_orders,
                             completed_first_at, completed_last_at, created_at, updated_at)
       SELECT ${profileUuidSql('i')}, $1, 'user' || i || '@example.com', 'Name' || (i % 997),
              jsonb_build_object(
                'plan', CASE WHEN i % 10 < 6 THEN 'free' WHEN i % 10 < 9 THEN 'pro' ELSE 'enterprise' END,
                'country', (ARRAY['US','US','US','GB','DE','FR','CA','BR','IN','JP'])[1 + (i / 7) % 10],
                'age', 18 + (i * 13) % 60,
                'tags', CASE WHEN i % 4 = 0 THEN '["vip","newsletter"]'::jsonb
                             WHEN i % 4 = 1 THEN '["newsletter"]'::jsonb ELSE '[]'::jsonb END,
                'prefs', jsonb_build_object('news', i % 3 = 0, 'channel', CASE WHEN i % 2 = 0 THEN 'email' ELSE 'sms' END)),
              COALESCE(s.total, 0), COALESCE(s.n, 0), s.first_at, s.last_at,
              now() - ((i * 7919) % (730 * 86400)) * interval '1 second', now()
         FROM generate_series($2::bigint, $3::bigint) i
         LEFT JOIN (SELECT profile_id, sum(total) AS total, count(*)::int AS n, min(occurred_at) AS first_at,
                           max(occurred_at) AS last_at
                      FROM orders WHERE workspace_id = $1 AND status = 'completed' GROUP BY profile_id) s
           ON s.profile_id = ${profileUuidSql('i')}`,
      [workspaceId, from, to],
      LOAD,
    );
  }
  progress(`${size.profiles} profiles in ${((performance.now() - t0) / 1000).toFixed(0)} s`);

  const t1 = performance.now();
  for (let from = 1; from <= size.events; from += CHUNK) {
    const to = Math.min(size.events, from + CHUNK - 1);
    // Each event's seq is drawn once, so its log row, its event_profiles row and its property rows
    // (migration 0029, written by the function processing uses) share it.
    await q.query(
      `WITH s AS MATERIALIZED (
         SELECT nextval(pg_get_serial_sequence('events', 'seq')) AS seq, g, ($4::text[])[1 + (g * 31) % 10] AS name,
                now() - ((g * 7919) % (365 * 86400)) * interval '1 second' AS at,
                ${profileUuidSql(`1 + (g * 2654435761) % $5`)} AS profile_id,
                jsonb_build_object('price', g % 200, 'sku', 'p' || (g % 1000),
                  'category', ($6::text[])[1 + (g / 3) % 8],
                  'product', jsonb_build_object('brand', ($7::text[])[1 + ((g * 40503) / 7) % 10], 'size', (g % 3) + 1))
                  AS payload
           FROM generate_series($2::bigint, $3::bigint) g),
       ev AS (
         INSERT INTO events (seq, id, workspace_id, event_type, event_name, payload, occurred_at, received_at)
         SELECT seq, 'evt_bench_' || g, $1, 'track', name, payload, at, now()
           FROM s),
       applied AS (
         INSERT INTO event_profiles (seq, workspace_id, profile_id, occurred_at, event_type, event_name)
         SELECT seq, $1, profile_id, at, 'track', name FROM s)
       INSERT INTO event_properties (workspace_id, seq, profile_id, event_name, event_type, occurred_at, path, kind,
                                     num, str, bool)
       SELECT $1, s.seq, s.profile_id, s.name, 'track', s.at, r.path, r.kind, r.num, r.str, r.bool
         FROM s CROSS JOIN LATERAL event_property_rows(s.payload) r`,
      [workspaceId, from, to, EVENT_NAMES, size.profiles, CATEGORIES, BRANDS],
      LOAD,
    );
    progress(`events ${to}/${size.events} (${((performance.now() - t1) / 1000).toFixed(0)} s)`);
  }

  const t3 = performance.now();
  for (const { indexdef } of idx) await q.query(indexdef, [], LOAD);
  progress(`${idx.length} indexes rebuilt in ${((performance.now() - t3) / 1000).toFixed(0)} s`);
}
