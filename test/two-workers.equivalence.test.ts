import fc from 'fast-check';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { insertTestEvents } from '../src/modules/processing/processing.test-kit';
import {
  applyOneByOne,
  configureWorkspace,
  differences,
  eventsOf,
  model,
  modelView,
  type Story,
  snapshot,
  storyArb,
  waitDrained,
} from '../src/workflows/merge-equivalence.test-kit';
import { type ServiceProcess, serviceEnv, startService } from './child';
import { startTestService, type TestService } from './harness';
import { onlyOn } from './skips';

/**
 * The equality proof with two worker processes (`ROLE=worker`) on one PostgreSQL database: the
 * stories of src/workflows/merge-equivalence.property.test.ts, written in pieces while both
 * processes claim them (one with one loop and batches of 2, the other with two loops and batches of
 * 5), come to exactly the rows that applying them one event at a time writes on another database
 * (a second service, its own schema), which is what the model says. The work lists (segment and
 * rescoring marks) are left out: the workers' job runners drain them. PGlite is one process.
 */
const RUNS = process.env.CI ? 40 : Number(process.env.MERGE_PROOF_RUNS ?? 15);

onlyOn('postgres', 'PGlite is one process').describe(
  'two worker processes, against one event at a time',
  () => {
    let svc: TestService;
    let reference: TestService;
    const workers: ServiceProcess[] = [];

    beforeAll(async () => {
      // The database under test (its schema owned by this process, which runs no worker) and the
      // reference's, on a schema of its own.
      [svc, reference] = await Promise.all([
        startTestService({ ROLE: 'api' }),
        startTestService({ ROLE: 'api' }),
      ]);
      const env = (batch: number, loops: number) =>
        serviceEnv({
          ROLE: 'worker',
          DATABASE_SCHEMA: svc.config.databaseSchema!,
          LOG_LEVEL: 'debug',
          WORKER_BATCH_SIZE: String(batch),
          WORKER_LOOPS: String(loops),
        });
      workers.push(...(await Promise.all([startService(env(2, 1)), startService(env(5, 2))])));
    });

    afterAll(async () => {
      await Promise.all(workers.map((w) => w.stop()));
      await Promise.all([svc?.close(), reference?.close()]);
    });

    const cutsArb = fc.uniqueArray(fc.integer({ min: 1, max: 13 }), { maxLength: 4 });

    async function check(story: Story, cuts: number[]): Promise<void> {
      const events = eventsOf(story);
      const [ref, underTest] = [
        await reference.newWorkspace('reference'),
        await svc.newWorkspace('under test'),
      ];
      await configureWorkspace(reference.rt.deps.db, ref.id, story);
      await configureWorkspace(svc.rt.deps.db, underTest.id, story);
      const db = svc.rt.deps.db;
      await Promise.all([
        applyOneByOne(reference.rt.deps.db, ref.id, events),
        (async () => {
          const at = [0, ...cuts.filter((c) => c < events.length).sort((a, b) => a - b), events.length];
          for (let k = 1; k < at.length; k++)
            await insertTestEvents(db, underTest.id, events.slice(at[k - 1], at[k]));
          await waitDrained(db);
        })(),
      ]);
      const want = await snapshot(reference.rt.deps.db, ref.id, { marks: false });
      const got = await snapshot(db, underTest.id, { marks: false });
      expect(modelView(want), 'one event at a time agrees with the model').toEqual(model(story).view);
      expect(
        got,
        `two worker processes write what one event at a time writes; differs in ${differences(got, want)}`,
      ).toEqual(want);
    }

    const applied = () =>
      workers.map((w) =>
        w
          .logs()
          .filter((l) => l.msg === 'event batch')
          .reduce((n, l) => n + Number(l.applied ?? 0), 0),
      );

    it(`write the same profiles, identifiers, lineage, event rows, orders, products, memberships and facts as one event at a time, which is what the rules say (property, ${RUNS} runs)`, async () => {
      const property = fc.asyncProperty(storyArb(), cutsArb, async (story, cuts) => {
        // docs/testing.md: these keep a known difference out while another is looked for.
        if (process.env.MERGE_PROOF_NO_MERGES) fc.pre(model(story).counts.merges === 0);
        if (process.env.MERGE_PROOF_NO_SHARED_ORDERS) fc.pre(model(story).counts.sharedOrders === 0);
        await check(story, cuts);
      });
      await fc.assert(property, {
        numRuns: RUNS,
        endOnFailure: Boolean(process.env.CI),
        // The difference itself in the report: a CI log then says what differed, not only the story.
        includeErrorInReport: true,
        ...(process.env.MERGE_PROOF_SEED ? { seed: Number(process.env.MERGE_PROOF_SEED) } : {}),
        ...(process.env.MERGE_PROOF_PATH ? { path: process.env.MERGE_PROOF_PATH } : {}),
      });
      // Both processes took part.
      const [a, b] = applied();
      expect(a, 'events the first worker applied').toBeGreaterThan(0);
      expect(b, 'events the second worker applied').toBeGreaterThan(0);
    }, 600_000);
  },
);
