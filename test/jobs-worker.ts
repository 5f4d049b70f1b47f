import { createPgliteDb } from '../src/platform/db/pglite';
import { createPostgresDb } from '../src/platform/db/postgres';
import { createJobRunner } from '../src/platform/jobs';
import { letTimePass } from './wait';

/**
 * A job-runner process for test/jobs-processes.test.ts: runs queue `work`, whose jobs record each
 * run in `job_runs` (start, then finish after JOB_MS), and drains on SIGTERM (DRAIN_MS), printing
 * what stop() returned. Database: DATABASE_URL + DATABASE_SCHEMA, else PGlite in DATA_DIR.
 */
const env = process.env;
const db = env.DATABASE_URL
  ? await createPostgresDb({ url: env.DATABASE_URL, schema: env.DATABASE_SCHEMA ?? null })
  : await createPgliteDb({ dataDir: env.DATA_DIR! });
const jobMs = Number(env.JOB_MS ?? 20);
const runner = createJobRunner({ db, pollMs: 20, concurrency: Number(env.CONCURRENCY ?? 4) });
runner.register(
  'work',
  async (_payload, { job }) => {
    await db.query('INSERT INTO job_runs (job_id, pid, attempt) VALUES ($1, $2, $3)', [
      job.id,
      process.pid,
      job.attempts,
    ]);
    process.stdout.write(`started ${job.id}\n`);
    // Deliberately deaf to its abort signal: a drain must cope with handlers that do not listen.
    await letTimePass(jobMs, 'a job that takes JOB_MS');
    await db.query(
      'UPDATE job_runs SET finished_at = now() WHERE job_id = $1 AND pid = $2 AND attempt = $3',
      [job.id, process.pid, job.attempts],
    );
  },
  { timeoutMs: 60_000 },
);
process.once('SIGTERM', () => {
  runner
    .stop({ drainMs: Number(env.DRAIN_MS ?? 10_000) })
    .then(async (result) => {
      process.stdout.write(`stopped ${JSON.stringify(result)}\n`);
      await db.close();
      process.exit(0);
    })
    .catch((err: unknown) => {
      process.stderr.write(`stop failed: ${String(err)}\n`);
      process.exit(1);
    });
});
runner.start();
process.stdout.write('jobs-worker ready\n');
