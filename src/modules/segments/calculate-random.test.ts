import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestService, type TestService } from '../../../test/harness';
import { waitRescored } from '../intelligence/intelligence.test-kit';
import { type EvalProfile, evaluateSegment, parseSegmentQuery, type SegmentQuery } from './query';
import { randomQueries, randomWorkspaceEvents, shiftTo } from './random-workspace.test-kit';
import { readEvalProfiles, waitSegmentsSettled } from './segments.test-kit';

/**
 * Random segment queries through the real API (`POST /tenant/segments/calculate`), over a workspace
 * loaded through the API and the pipeline: 500 people, about 3,500 events of several names and
 * types with nested and array payloads (some too big for the property table), identify traits and
 * orders (random-workspace.test-kit.ts). Each answer must equal the in-memory evaluator's over the
 * same rows (the language's reference semantics, query/evaluate.ts), and none may answer 422 or take
 * longer than BOUND_MS: a bound against plans that explode (a read of the whole workspace per
 * profile took minutes here), not a speed target. The cost of a query is the business of
 * benchmarks (docs/testing.md).
 */
const PROFILES = 500;
const QUERIES = Number(process.env.SEGMENT_RANDOM_QUERIES ?? 300);
const SEED = Number(process.env.SEGMENT_RANDOM_SEED ?? 7);
const BOUND_MS = 2_000;
const PAGE = 5;

let svc: TestService;
let shift: number;
let people: EvalProfile[];
beforeAll(async () => {
  svc = await startTestService();
  shift = shiftTo(new Date());
  const events = randomWorkspaceEvents(PROFILES, SEED, shift);
  for (let i = 0; i < events.length; i += 1000) {
    const res = await svc.call('POST', '/tenant/ingest/batch', { body: events.slice(i, i + 1000) });
    expect(res.status, res.text).toBe(202);
  }
  // Processed, then scored by the models (rfm_segment, churn_risk_score and predicted_clv are
  // fields a query may test), then every refresh those caused done.
  await waitSegmentsSettled(svc.rt.deps.db, 120_000);
  await waitRescored(svc.rt.deps.db, 60_000);
  await waitSegmentsSettled(svc.rt.deps.db, 60_000);
  people = await readEvalProfiles(svc.rt.deps.db, svc.ws.id);
  expect(people).toHaveLength(PROFILES);
}, 180_000);
afterAll(async () => svc?.close());

function parsed(q: unknown): SegmentQuery {
  const r = parseSegmentQuery(q);
  if (!r.ok) throw new Error(`generated an invalid query ${JSON.stringify(q)}: ${JSON.stringify(r.errors)}`);
  return r.query;
}

/** The ids the evaluator selects at `now`, oldest profile first (readEvalProfiles' order). */
const selected = (query: SegmentQuery, now: Date) =>
  people.filter((p) => evaluateSegment(query, p, { now, segments: new Map() })).map((p) => p.id);

describe('random calculations over a workspace loaded through the API', () => {
  it(`answer ${QUERIES} random queries as the evaluator does, each within ${BOUND_MS} ms and none over budget`, async () => {
    const wrong: string[] = [];
    let slowest = 0;
    let telling = 0;
    for (const q of randomQueries(QUERIES, SEED + 1, shift)) {
      const query = parsed(q);
      const before = new Date();
      const t0 = performance.now();
      const res = await svc.call('POST', '/tenant/segments/calculate', { body: { query: q, limit: PAGE } });
      const ms = performance.now() - t0;
      slowest = Math.max(slowest, ms);
      const what = `${JSON.stringify(q)} →`;
      if (res.status !== 200) {
        wrong.push(`${what} ${res.status} ${res.body?.code} after ${ms.toFixed(0)} ms`);
        continue;
      }
      if (ms > BOUND_MS) wrong.push(`${what} took ${ms.toFixed(0)} ms`);
      // A window counts back from the server's clock, read between these two instants: the answer
      // must be the evaluator's at one of them (they differ only for an event within a few ms of
      // the window's edge).
      const after = new Date();
      const got = {
        count: res.body.data.count,
        page: res.body.data.profiles.map((p: { id: string }) => p.id),
      };
      if (got.count > 0 && got.count < PROFILES) telling++;
      const agrees = () =>
        [before, after]
          .map((now) => selected(query, now))
          .some((ids) => ids.length === got.count && ids.slice(0, PAGE).join() === got.page.join());
      if (agrees()) continue;
      // A model refit may have rescored profiles since they were read: read them again, once.
      people = await readEvalProfiles(svc.rt.deps.db, svc.ws.id);
      if (!agrees())
        wrong.push(`${what} ${got.count} profiles, the evaluator ${selected(query, after).length}`);
    }
    expect(wrong).toEqual([]);
    // The pools make queries that select some profiles and not others, not only all or none (108
    // of the 300 with the default seed).
    expect(telling).toBeGreaterThan(QUERIES / 4);
    expect(slowest).toBeLessThanOrEqual(BOUND_MS);
  }, 240_000);
});
