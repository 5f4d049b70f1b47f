/**
 * Close journeys: the demo dataset (`cdp demo load`: guests browse, order, then sign in within a
 * few events) drained by the processing loop with the engine's default loops and batch size. The
 * pipeline holds back a merge of a profile an earlier order event of its batch touched, with that
 * person's later events (docs/decisions.md, "An order's fact before a later merge"); here such
 * pairs are frequent, so this shows what the holding back costs: claims per event against the
 * ceiling of one claim per event, and the drain rate.
 *
 * The dataset is appended through the demo's loader (the ingest module's append, as `cdp demo
 * load` does) before the loop starts, so the drain is measured alone.
 *
 * Env: BENCH_ENGINES (pglite,postgres), BENCH_DEMO_CUSTOMERS (400).
 */
import { randomBytes } from 'node:crypto';
import { loadConfig } from '../src/config';
import { loadDemoDataset } from '../src/modules/demo/demo.service';
import { countBacklog } from '../src/modules/processing';
import { BATCH_SIZE, CONCURRENCY } from '../src/modules/processing/processing.policy';
import { startProcessingLoop } from '../src/modules/processing/processing.worker';
import { bootstrapDefaultWorkspace } from '../src/modules/workspaces/workspaces.service';
import { openDb } from '../src/platform/db';
import { migrate } from '../src/platform/db/migrate';
import { createLogger } from '../src/platform/logger';
import { dropSchema, type EngineName, engines, note, PG_URL, report, sleep } from './lib';

/** Claims per event above this mean batches re-queue a share of their events, not a rounding error. */
const MAX_CLAIMS_PER_EVENT = 1.1;

async function runEngine(engine: EngineName, customers: number): Promise<void> {
  const schema = `bench_${randomBytes(4).toString('hex')}`;
  const config = loadConfig(
    engine === 'postgres' ? { DATABASE_URL: PG_URL, DATABASE_SCHEMA: schema } : { DATA_DIR: ':memory:' },
  );
  const db = await openDb(config);
  try {
    await migrate(db);
    const { workspace } = (await bootstrapDefaultWorkspace(db, config.initialAdminKey))!;
    const loaded = await loadDemoDataset(db, workspace.id, { seed: 1, customers, now: new Date() });
    let claimed = 0;
    let deferred = 0;
    let batches = 0;
    const log = createLogger('debug', {
      write(line: string) {
        const l = JSON.parse(line) as { msg?: string; claimed?: number; deferred?: number };
        if (l.msg !== 'event batch' || !l.claimed) return;
        batches++;
        claimed += l.claimed;
        deferred += l.deferred ?? 0;
      },
    });
    const started = performance.now();
    const loop = await startProcessingLoop(db.lane('worker'), log, {
      batchSize: BATCH_SIZE[engine],
      concurrency: CONCURRENCY[engine],
    });
    try {
      while ((await countBacklog(db)) > 0) await sleep(20);
    } finally {
      await loop.stop();
    }
    const ms = performance.now() - started;
    const events = loaded.stored;
    report({
      name: `close journeys ${engine}: claims`,
      value: claimed,
      unit: 'claims',
      ceiling: { value: events, unit: 'events' },
      target: `≤ ${MAX_CLAIMS_PER_EVENT} of ceiling`,
      pass: claimed <= events * MAX_CLAIMS_PER_EVENT,
    });
    report({
      name: `close journeys ${engine}: drain`,
      value: events / (ms / 1000),
      unit: 'events/s',
      target: 'figure (processing bench holds the rate target)',
    });
    note(
      `${customers} customers, ${events} events, ${Math.round(ms)} ms, ${batches} batches of up to ` +
        `${BATCH_SIZE[engine]} on ${CONCURRENCY[engine]} loop(s), ${deferred} claims deferred`,
    );
  } finally {
    await db.close();
    if (engine === 'postgres') await dropSchema(PG_URL, schema);
  }
}

export default async function run(): Promise<void> {
  const customers = Number(process.env.BENCH_DEMO_CUSTOMERS ?? 400);
  for (const engine of await engines()) await runEngine(engine, customers);
}
