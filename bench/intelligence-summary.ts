/**
 * The cost of GET /intelligence/summary's two statements (docs/intelligence.md, "The workspace at a
 * glance"): a workspace of N scored live profiles (default 100,000) beside another of N/2, both
 * written straight into `profiles` with spread-out scores; then the summary read 7 times, the
 * median and the worst reported, with how long a neighbour's `SELECT 1` waited meanwhile (on
 * PGlite, the longest the summary held the single connection), and on PostgreSQL the plan of the
 * grouped statement.
 *
 *   node --import tsx bench/intelligence-summary.ts                     # PGlite (in memory)
 *   DATABASE_URL=postgres://postgres@127.0.0.1:5432/test node --import tsx bench/intelligence-summary.ts
 *
 * On PostgreSQL it works in a schema of its own, dropped at the end. SUMMARY_PROFILES=N sizes it.
 */
import { randomBytes } from 'node:crypto';
import pg from 'pg';
import { loadConfig } from '../src/config';
import { getSummary } from '../src/modules/intelligence/intelligence.summary';
import { openDb } from '../src/platform/db';
import { migrate } from '../src/platform/db/migrate';

const n = Number(process.env.SUMMARY_PROFILES ?? 100_000);
const url = process.env.DATABASE_URL;
const schema = `bench_summary_${randomBytes(4).toString('hex')}`;
const db = await openDb(
  loadConfig({
    ...process.env,
    DATABASE_SCHEMA: schema,
    DATA_DIR: ':memory:',
    DATABASE_STATEMENT_TIMEOUT_MS: '600000',
  }),
);
try {
  await migrate(db);
  const ws = [randomBytes(16).toString('hex'), randomBytes(16).toString('hex')].map(
    (h) => `${h.slice(0, 8)}-${h.slice(8, 12)}-4${h.slice(13, 16)}-8${h.slice(17, 20)}-${h.slice(20, 32)}`,
  );
  for (const [i, id] of ws.entries()) {
    await db.query('INSERT INTO workspaces (id, name) VALUES ($1, $2)', [id, `w${i}`]);
    await db.query(
      `INSERT INTO profiles (id, workspace_id, rfm_segment, rfm_score, churn_risk_score, predicted_clv)
       SELECT gen_random_uuid(), $1, (ARRAY['champions','loyal','lost','at_risk','promising'])[1 + g % 5],
              (1 + g % 5) * 100 + (1 + (g / 5) % 5) * 10 + 1 + (g / 25) % 5, random(),
              round((random() * random() * 3000)::numeric, 2)
         FROM generate_series(1, $2::int) g`,
      [id, i === 0 ? n : n / 2],
    );
  }
  await db.query('ANALYZE profiles');
  const times: number[] = [];
  let scored = 0;
  // A neighbour's tiny foreground statement, sent again as soon as answered while the summaries run:
  // how long one waits is how long the summary holds what the neighbour needs (PGlite's connection).
  const waits: number[] = [];
  let probing = true;
  const probe = (async () => {
    while (probing) {
      const t0 = performance.now();
      await db.query('SELECT 1');
      waits.push(performance.now() - t0);
      await new Promise((r) => setTimeout(r, 1));
    }
  })();
  for (let i = 0; i < 7; i++) {
    const t0 = performance.now();
    scored = (await getSummary(db.lane('analytics'), ws[0]!)).profiles_scored;
    times.push(performance.now() - t0);
  }
  probing = false;
  await probe;
  times.sort((a, b) => a - b);
  waits.sort((a, b) => a - b);
  console.log(
    `${db.engine}: ${scored} scored profiles (another workspace holds ${n / 2}); summary median ` +
      `${times[3]!.toFixed(0)} ms, worst ${times[6]!.toFixed(0)} ms, best ${times[0]!.toFixed(0)} ms; ` +
      `a neighbour's SELECT 1 meanwhile: p99 ${waits[Math.floor(waits.length * 0.99)]!.toFixed(1)} ms, ` +
      `longest ${waits.at(-1)!.toFixed(1)} ms (${waits.length} sent)`,
  );
  if (db.engine === 'postgres') {
    const { rows } = await db.query<{ 'QUERY PLAN': string }>(
      `EXPLAIN (ANALYZE, COSTS OFF) SELECT count(*) FROM profiles
        WHERE workspace_id = $1 AND merged_into IS NULL AND rfm_segment IS NOT NULL`,
      [ws[0]],
    );
    console.log(rows.map((r) => r['QUERY PLAN']).join('\n'));
  }
} finally {
  await db.close();
  if (url) {
    const c = new pg.Client({ connectionString: url });
    await c.connect();
    await c.query(`DROP SCHEMA IF EXISTS ${schema} CASCADE`);
    await c.end();
  }
}
