import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestService, type TestService } from '../../test/harness';
import { ENGINE } from '../../test/skips';
import {
  type Applied,
  applyOneByOne,
  applyThroughLoops,
  configureWorkspace,
  differences,
  eventsOf,
  type ModelCounts,
  model,
  modelView,
  type Run,
  runArb,
  type Snapshot,
  type Story,
  snapshot,
  storyArb,
} from './merge-equivalence.test-kit';

/**
 * The equality proof of the event pipeline: however events are claimed (any number of loops, any
 * batch size, batches cut anywhere while the events are still being written), what it writes is
 * exactly what applying the same events one at a time in arrival order writes, and that one-at-a-
 * time reference is what the documented rules say (an in-memory model). Compared: every profile
 * (traits and their field times, e-mail and names, spend, merged_into), every identifier with its
 * owner and times, graph edges, lineage, the profile each event was applied to (event_profiles)
 * and its payload rows (event_properties), dead letters, orders, products, accounts and their
 * members, the outbox facts of each profile in order, and the segment and rescoring marks.
 *
 * The stories (merge-equivalence.test-kit.ts): three people and three devices they share, so
 * identifies merge an anonymous profile into a known one, or are refused (two e-mails or two CRM
 * ids on one device; a small merge cap); orders with items, re-sent from other devices and
 * changing status; Group calls; late events; junk identifiers (built-in and the workspace's list).
 * docs/testing.md ("The pipeline's equality proof") says how to replay and narrow a counterexample
 * (MERGE_PROOF_SEED, MERGE_PROOF_PATH; MERGE_PROOF_BATCH, MERGE_PROOF_NO_MERGES and
 * MERGE_PROOF_NO_SHARED_ORDERS keep a known difference out while another is looked for).
 */
let svc: TestService;
/**
 * Where the reference runs. On PostgreSQL a second service (a schema of its own), so that both runs
 * go at once; on PGlite the same one, one run after the other (its one connection would queue them).
 */
let ref: TestService;
beforeAll(async () => {
  // No worker of the service's own: each run starts the loops it applies its events with.
  const start = () => startTestService({ ROLE: 'api' });
  if (ENGINE === 'postgres') [svc, ref] = await Promise.all([start(), start()]);
  else {
    svc = await start();
    ref = svc;
  }
});
afterAll(async () => {
  await svc?.close();
  if (ref !== svc) await ref?.close();
});

const RUNS = process.env.CI ? 200 : Number(process.env.MERGE_PROOF_RUNS ?? 60);

/** What the runs met, so the test shows its generator reaches the cases it is about. */
const seen = {
  runs: 0,
  multiLoop: 0,
  multiEventBatch: 0,
  deferred: 0,
  merges: 0,
  refusedUnique: 0,
  refusedNewProfile: 0,
  refusedCap: 0,
  deadLetters: 0,
  statusChanges: 0,
  memberships: 0,
  sharedOrders: 0,
};

function note(run: Run, applied: Applied, counts: ModelCounts) {
  seen.runs++;
  if (run.loops > 1) seen.multiLoop++;
  if (applied.batches.some((n) => n > 1)) seen.multiEventBatch++;
  if (applied.deferred > 0) seen.deferred++;
  for (const k of Object.keys(counts) as Array<keyof ModelCounts>) if (counts[k] > 0) seen[k]++;
}

async function check(story: Story, run: Run): Promise<void> {
  const [db, refDb] = [svc.rt.deps.db, ref.rt.deps.db];
  const events = eventsOf(story);
  const [reference, underTest] = await Promise.all([
    ref.newWorkspace('reference'),
    svc.newWorkspace('under test'),
  ]);
  await Promise.all([
    configureWorkspace(refDb, reference.id, story),
    configureWorkspace(db, underTest.id, story),
  ]);

  let applied: Applied;
  if (ref === svc) {
    await applyOneByOne(refDb, reference.id, events);
    applied = await applyThroughLoops(db, underTest.id, events, run);
  } else {
    [, applied] = await Promise.all([
      applyOneByOne(refDb, reference.id, events),
      applyThroughLoops(db, underTest.id, events, run),
    ]);
  }

  const [want, got] = await Promise.all([snapshot(refDb, reference.id), snapshot(db, underTest.id)]);
  const expected = model(story);
  note(run, applied, expected.counts);
  // The reference itself follows the documented rules...
  expect(modelView(want), 'one event at a time agrees with the model').toEqual(expected.view);
  // ...and any loops and batches come to exactly the same rows.
  expect(
    got,
    `${run.loops} loops, batches of ${run.batchSize} (${applied.batches.join(' ')}); differs in ${differences(got, want)}`,
  ).toEqual(want);
}

describe('the event pipeline, against one event at a time and the model', () => {
  it(`writes the same profiles, identifiers, lineage, event rows, orders, products, memberships, facts and marks with 1–4 loops and any batch size as one event at a time, which is what the rules say (property, ${RUNS} runs)`, async () => {
    await fc.assert(
      fc.asyncProperty(storyArb(), runArb(), async (story, run) => {
        if (process.env.MERGE_PROOF_BATCH) run.batchSize = Number(process.env.MERGE_PROOF_BATCH);
        if (process.env.MERGE_PROOF_NO_MERGES) fc.pre(model(story).counts.merges === 0);
        if (process.env.MERGE_PROOF_NO_SHARED_ORDERS) fc.pre(model(story).counts.sharedOrders === 0);
        await check(story, run);
      }),
      {
        numRuns: RUNS,
        // CI reports the first counterexample as found; by hand, fast-check shrinks it (slow: each
        // try is two runs), and MERGE_PROOF_SEED / MERGE_PROOF_PATH replay a reported one.
        endOnFailure: Boolean(process.env.CI),
        // The difference itself in the report: a CI log then says what differed, not only the story.
        includeErrorInReport: true,
        ...(process.env.MERGE_PROOF_SEED ? { seed: Number(process.env.MERGE_PROOF_SEED) } : {}),
        ...(process.env.MERGE_PROOF_PATH ? { path: process.env.MERGE_PROOF_PATH } : {}),
      },
    );
    // The generator reached what the proof is about (each is met in well over these shares of 200
    // runs: docs/testing.md).
    const narrowed = ['BATCH', 'NO_MERGES', 'NO_SHARED_ORDERS'].some((k) => process.env[`MERGE_PROOF_${k}`]);
    if (seen.runs >= 200 && !narrowed) {
      expect(seen.multiLoop, 'runs with several loops').toBeGreaterThan(seen.runs / 2);
      expect(seen.multiEventBatch, 'runs with a batch of several events').toBeGreaterThan(seen.runs / 4);
      expect(seen.merges, 'runs with a merge').toBeGreaterThan(seen.runs / 3);
      for (const k of [
        'refusedUnique',
        'refusedNewProfile',
        'deadLetters',
        'statusChanges',
        'memberships',
        'sharedOrders',
      ] as const)
        expect(seen[k], k).toBeGreaterThan(seen.runs / 20);
      expect(seen.refusedCap, 'runs where the merge cap refused a merge').toBeGreaterThan(seen.runs / 100);
    }
  }, 600_000);
});

/** Both ways of applying a story, side by side: one event at a time, and all of it in one batch. */
async function oneByOneAndOneBatch(story: Story): Promise<{ oneByOne: Snapshot; batch: Snapshot }> {
  const db = svc.rt.deps.db;
  const [one, batch] = [await svc.newWorkspace('one by one'), await svc.newWorkspace('one batch')];
  await applyOneByOne(db, one.id, eventsOf(story));
  await applyThroughLoops(db, batch.id, eventsOf(story), { loops: 1, batchSize: 250, cuts: [] });
  return { oneByOne: await snapshot(db, one.id), batch: await snapshot(db, batch.id) };
}

/**
 * Found by this proof: the orders step runs after the batch's merges, so a guest's order completed
 * before the identify that merges the guest into a customer, in the same batch, was reported about
 * the customer, after the merge. Such a merge now waits for the next batch (ordering.ts,
 * mergesAfterOrders).
 */
it('reports a guest’s order before the merge that a later event of the same batch makes', async () => {
  const { oneByOne, batch } = await oneByOneAndOneBatch({
    mergeCap: 100,
    steps: [
      {
        identity: null,
        anonymous: { device: 0 },
        action: { kind: 'order', orderId: 'o1', status: 'completed', total: 5, items: [] },
        late: 0,
      },
      {
        identity: { person: 0, kind: 'email' },
        anonymous: null,
        action: { kind: 'identify', traits: {} },
        late: 0,
      },
      { identity: { person: 0, kind: 'email' }, anonymous: { device: 0 }, action: { kind: 'page' }, late: 0 },
    ],
  });
  expect(oneByOne.facts['P(m0)']).toEqual([
    'profile.created by m0',
    expect.stringMatching(/^order.completed /),
  ]);
  expect(batch.facts).toEqual(oneByOne.facts);
});

/**
 * Found by this proof: a product kept one time for the whole row, moved only when a mention changed a
 * value, so one event at a time an order arriving late (older than a newer order that named the
 * product with the same values) still renamed it, and two loops applied unlinked people's mentions
 * in commit order. Each field now keeps the mark (time, seq) of the mention that gave its value
 * (migrations/0044_product_field_marks.sql).
 */
it('keeps the values of a product’s newest mention, one event at a time as in one batch', async () => {
  const item = (name: string) => [{ product_id: 'sku-a', name, price: 5, quantity: 1 }];
  const order = (orderId: string, name: string, late = 0) => ({
    identity: null,
    anonymous: { device: 0 },
    action: { kind: 'order' as const, orderId, status: 'completed', total: 5, items: item(name) },
    late,
  });
  const { oneByOne, batch } = await oneByOneAndOneBatch({
    mergeCap: 100,
    steps: [
      order('o1', 'Mug'), // 10:00:00
      { identity: null, anonymous: { device: 0 }, action: { kind: 'page' }, late: 0 },
      order('o2', 'Mug'), // 10:00:02: the newest mention
      order('o3', 'Big mug', 2), // 10:00:01, arriving last
    ],
  });
  const name = (s: Snapshot) => (s.products['sku-a'] as { name: string }).name;
  expect({ oneByOne: name(oneByOne), batch: name(batch) }).toEqual({ oneByOne: 'Mug', batch: 'Mug' });
});

/**
 * Found by the two-worker run of this proof: an edge names the event that first put two identifiers
 * together. An e-mail that an earlier event of the same batch created is, for a later event, as old
 * as it is one event at a time, so a device linked to it only through a merge gets no edge of its
 * own (it got one when "new here" meant new in the batch).
 */
it('records an edge only for the event that created one of its identifiers or merged them, in one batch as one at a time', async () => {
  const email = { person: 0, kind: 'email' as const };
  const crm = { person: 0, kind: 'crm' as const };
  const identify = { kind: 'identify' as const, traits: {} };
  const { oneByOne, batch } = await oneByOneAndOneBatch({
    mergeCap: 100,
    steps: [
      { identity: crm, anonymous: { device: 0 }, action: { kind: 'page' }, late: 0 },
      { identity: crm, anonymous: { device: 1 }, action: { kind: 'page' }, late: 0 },
      { identity: email, anonymous: null, action: identify, late: 0 }, // the e-mail's node
      { identity: email, anonymous: { device: 0 }, action: { kind: 'page' }, late: 0 }, // a merge
      { identity: email, anonymous: { device: 1 }, action: { kind: 'page' }, late: 0 }, // nothing new
    ],
  });
  expect(oneByOne.edges.map((e) => e.replace(/.* by /, 'by ')).sort()).toEqual(['by m0', 'by m1', 'by m3']);
  expect(batch.edges).toEqual(oneByOne.edges);
});
