/**
 * End-to-end processing on PostgreSQL (issue 3): BENCH_EVENTS events (default 1,000,000) over
 * BENCH_CUSTOMERS customers (default a tenth of that) are written straight into the event log (the
 * setup, not measured), then the real service (`node bin/cdp.mjs start`, worker in-process) applies
 * them: identity resolution, anonymous → identified merges, traits with lineage, orders through
 * commerce. Measured: processed events/s from the commit of the backlog to an empty backlog, and the
 * process's peak RSS. Ceiling, measured in the same run on the same server: batched jsonb upserts of
 * profile-shaped rows (1000 per statement), the cheapest write every processed event needs at least.
 *
 *   BENCH_EVENTS=100000 npm run bench -- processing      (a quick run)
 */
import pg from 'pg';
import { memoryOf, note, PG_URL, postgresReachable, report, type Service, sleep, startService } from './lib';

const TARGET_EVENTS_PER_S = 10_000;
const TARGET_RSS_MB = 400;

/**
 * Each customer's journey, one step per round of the whole population (so consecutive events belong
 * to different people, as in a real stream, and every batch touches ~1000 profiles):
 *   0 page (device A) · 1 track (A) · 2 identify e-mail + A (sign-up: the anonymous profile gains the
 *   e-mail) · 3 page (device B for 1 in 5 customers: a second anonymous profile; else A + e-mail) ·
 *   4 identify e-mail + that device (B: merges into the identified profile) · 5 order · 6 track ·
 *   7 identify · 8 page · 9 track, then again from 5 for longer journeys.
 */
function generateSql(): string {
  return `
  INSERT INTO events (id, workspace_id, event_type, event_name, anonymous_id, identity, payload, occurred_at)
  SELECT 'evt_bench' || lpad(i::text, 12, '0'), $1::uuid,
    CASE WHEN k IN (2, 4, 7) THEN 'identify' WHEN k = 5 THEN 'order' WHEN k IN (0, 3, 8) THEN 'page' ELSE 'track' END,
    CASE WHEN k IN (2, 4, 7) THEN 'Identify' WHEN k = 5 THEN 'Order Completed' WHEN k IN (0, 3, 8) THEN 'Page Viewed'
         ELSE 'Product Viewed' END,
    CASE WHEN k IN (3, 4) AND c % 5 = 0 THEN md5('b' || c)::uuid::text ELSE md5('a' || c)::uuid::text END,
    CASE WHEN s < 2 OR (s = 3 AND c % 5 = 0) THEN NULL ELSE 'user' || c || '@example.com' END,
    CASE k
      WHEN 2 THEN jsonb_build_object('first_name', 'User' || c, 'plan', 'free', 'tags', jsonb_build_array('new'))
      WHEN 4 THEN jsonb_build_object('plan', 'pro', 'tags', 'returning', 'email', 'User' || c || '@Example.com')
      WHEN 7 THEN jsonb_build_object('visits', s, 'last_page', '/p/' || (c % 50), 'prefs', jsonb_build_object('news', s % 2 = 0))
      WHEN 5 THEN jsonb_build_object('order_id', 'o' || c || '-' || s, 'total', (c % 90) + 10, 'currency', 'USD',
        'items', jsonb_build_array(jsonb_build_object('product_id', 'p' || (c % 200), 'name', 'Product ' || (c % 200),
          'price', (c % 90) + 10, 'quantity', 1, 'category', 'cat' || (c % 10))))
      ELSE jsonb_build_object('path', '/p/' || ((c + s) % 50))
    END,
    timestamptz '2024-01-01' + (s * 86400 + c % 86400) * interval '1 second'
  FROM (SELECT i, i % $2 AS c, i / $2 AS s, CASE WHEN i / $2 < 10 THEN i / $2 ELSE 5 + (i / $2 - 10) % 5 END AS k
          FROM generate_series(0, $3 - 1) AS i) g`;
}

/** The ceiling: profile-shaped jsonb rows upserted 1000 per statement into a scratch table. */
async function measureUpsertCeiling(client: pg.Client, rows: number): Promise<number> {
  await client.query(`CREATE TEMP TABLE bench_profiles (LIKE profiles INCLUDING DEFAULTS INCLUDING INDEXES)`);
  const batch = (from: number) =>
    JSON.stringify(
      Array.from({ length: 1000 }, (_, j) => ({
        id: `00000000-0000-4000-8000-${String((from + j) % rows).padStart(12, '0')}`,
        workspace_id: '00000000-0000-4000-8000-000000000000',
        email: `user${from + j}@example.com`,
        attributes: { plan: 'pro', tags: ['new', 'returning'], visits: j, prefs: { news: true } },
        field_times: { '/email': 1, '/attributes/plan': 2, '/attributes/tags': 3, '/attributes/visits': 4 },
      })),
    );
  const sql = `INSERT INTO bench_profiles (id, workspace_id, email, attributes, field_times)
    SELECT id, workspace_id, email, attributes, field_times
      FROM jsonb_to_recordset($1::jsonb) AS r(id uuid, workspace_id uuid, email text, attributes jsonb, field_times jsonb)
    ON CONFLICT (id) DO UPDATE SET email = EXCLUDED.email, attributes = EXCLUDED.attributes,
      field_times = EXCLUDED.field_times, updated_at = now()`;
  // Half inserts, half updates of existing rows, like a stream of new and returning customers.
  const payloads = Array.from({ length: (2 * rows) / 1000 }, (_, b) => batch(b * 1000));
  const t0 = performance.now();
  for (const p of payloads) await client.query(sql, [p]);
  const seconds = (performance.now() - t0) / 1000;
  await client.query('DROP TABLE bench_profiles');
  return (2 * rows) / seconds;
}

export default async function run(): Promise<void> {
  if (!(await postgresReachable())) {
    note(`PostgreSQL not reachable at ${PG_URL}: processing bench skipped`);
    return;
  }
  const total = Number(process.env.BENCH_EVENTS ?? 1_000_000);
  const customers = Number(process.env.BENCH_CUSTOMERS ?? Math.max(1, Math.round(total / 10)));
  let svc: Service | null = null;
  try {
    svc = await startService({
      engine: 'postgres',
      env: { ROLE: 'all' },
      nodeArgs: process.env.BENCH_PROF ? ['--cpu-prof', `--cpu-prof-dir=${process.env.BENCH_PROF}`] : [],
    });
    const workspaceId = svc.workspaceId!;
    const schema = await svc.withDb(
      async (db) => (await db.query<{ s: string }>('SELECT current_schema() AS s')).rows[0]!.s,
    );
    const client = new pg.Client({ connectionString: PG_URL, options: `-c search_path=${schema}` });
    await client.connect();
    try {
      const ceiling = await measureUpsertCeiling(client, 50_000);

      const genStart = performance.now();
      await client.query(generateSql(), [workspaceId, customers, total]);
      const t0 = performance.now();
      note(
        `setup: ${total} events over ${customers} customers written in ${((t0 - genStart) / 1000).toFixed(1)} s`,
      );

      const samples: number[] = [];
      let left = total;
      while (left > 0) {
        await sleep(250);
        left = Number(
          (await client.query('SELECT count(*) AS n FROM events WHERE processed_at IS NULL')).rows[0].n,
        );
        samples.push(memoryOf(svc.pid).rssMb);
        if (performance.now() - t0 > 30 * 60_000)
          throw new Error(`still ${left} events unprocessed after 30 min`);
      }
      const seconds = (performance.now() - t0) / 1000;
      const rate = total / seconds;
      const mem = memoryOf(svc.pid);

      const facts = (
        await client.query(
          `SELECT (SELECT count(*) FROM profiles WHERE merged_into IS NULL) AS live,
                  (SELECT count(*) FROM profiles WHERE merged_into IS NOT NULL) AS merged,
                  (SELECT count(*) FROM orders) AS orders, (SELECT count(*) FROM profile_lineage) AS lineage,
                  (SELECT count(*) FROM dead_letters) AS dead`,
        )
      ).rows[0];
      report({
        name: 'processing end-to-end (postgres)',
        value: rate,
        unit: 'events/s',
        ceiling: { value: ceiling, unit: 'profile upserts/s' },
        target: `≥ ${TARGET_EVENTS_PER_S} events/s`,
        pass: rate >= TARGET_EVENTS_PER_S,
      });
      report({
        name: 'processing peak RSS (postgres)',
        value: mem.hwmMb,
        unit: 'MB',
        target: `< ${TARGET_RSS_MB} MB, flat`,
        pass: mem.hwmMb < TARGET_RSS_MB,
      });
      const quarter = (q: number) =>
        samples[Math.min(samples.length - 1, Math.floor((samples.length - 1) * q))] ?? 0;
      note(
        `${total} events in ${seconds.toFixed(1)} s; RSS at 0/25/50/75/100%: ` +
          [0, 0.25, 0.5, 0.75, 1].map((q) => quarter(q).toFixed(0)).join('/') +
          ` MB; live profiles ${facts.live}, merged ${facts.merged}, orders ${facts.orders}, ` +
          `lineage rows ${facts.lineage}, dead letters ${facts.dead}`,
      );
    } finally {
      await client.end();
    }
  } finally {
    await svc?.stop();
  }
}

// Runnable on its own too: `node --import tsx bench/processing.bench.ts`.
if (import.meta.url === `file://${process.argv[1]}`) {
  run().then(
    () => process.exit(0),
    (err: unknown) => {
      process.stderr.write(`${err instanceof Error ? err.stack : String(err)}\n`);
      process.exit(1);
    },
  );
}
