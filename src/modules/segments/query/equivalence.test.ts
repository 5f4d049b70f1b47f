import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { openTestDb, type TestDb } from '../../../platform/jobs/jobs.test-kit';
import * as arb from './arbitraries.test-kit';
import { evaluateSegment } from './evaluate';
import { parseSegmentQuery } from './parse';
import { clearWorkspace, createWorkspaceRow, loadProfiles, NOW, selectMatching } from './query.test-kit';
import type { SegmentQuery } from './types';

/**
 * The compiled SQL and the in-memory evaluator are two implementations of one language; this test
 * holds them to each other on random profiles and random queries, on the engine under test
 * (PGlite without DATABASE_URL, PostgreSQL with it).
 */
/** 60 keeps the suite fast; raise it locally when changing the compiler. */
const RUNS = Number(process.env.SEGMENT_PROPERTY_RUNS ?? 60);
let t: TestDb;
let ws: string;
let decoy: string;

beforeAll(async () => {
  t = await openTestDb();
  ws = await createWorkspaceRow(t.db);
  decoy = await createWorkspaceRow(t.db);
});
afterAll(() => t?.close());

function parsed(q: unknown): SegmentQuery {
  const r = parseSegmentQuery(q);
  if (!r.ok) throw new Error(`generated an invalid query ${JSON.stringify(q)}: ${JSON.stringify(r.errors)}`);
  return r.query;
}

describe('the compiled SQL and the evaluator', () => {
  it(
    'select the same profiles for random queries over random profiles, correlated or as sets',
    async () => {
      await fc.assert(
        fc.asyncProperty(
          arb.profiles,
          arb.query(['seg_a', 'seg_b']),
          arb.query(),
          arb.query(['seg_a']),
          async (profiles, q, a, b) => {
            const segments = new Map([
              ['seg_a', parsed(a)],
              ['seg_b', parsed(b)],
            ]);
            const query = parsed(q);
            await clearWorkspace(t.db, ws);
            await clearWorkspace(t.db, decoy);
            await loadProfiles(t.db, ws, profiles, decoy);
            const expected = profiles
              .filter((p) => evaluateSegment(query, p, { now: NOW, segments }))
              .map((p) => p.id)
              .sort();
            if (process.env.SEGMENT_STATS) console.log(`${expected.length}/${profiles.length}`);
            // Both ways of writing count and sum tests (compile.ts, `strategy`) give the one answer.
            expect(await selectMatching(t.db, ws, query, { now: NOW, segments })).toEqual(expected);
            expect(await selectMatching(t.db, ws, query, { now: NOW, segments, strategy: 'set' })).toEqual(
              expected,
            );
          },
        ),
        { numRuns: RUNS },
      );
    },
    60_000 + RUNS * 100,
  );

  it(
    'select the same profiles for event conditions with property tests (every operator, nested paths, long strings, oversized payloads)',
    async () => {
      await fc.assert(
        fc.asyncProperty(arb.profiles, arb.propertyQuery, async (profiles, q) => {
          const segments = new Map<string, SegmentQuery>();
          const query = parsed(q);
          await clearWorkspace(t.db, ws);
          await clearWorkspace(t.db, decoy);
          await loadProfiles(t.db, ws, profiles, decoy);
          const expected = profiles
            .filter((p) => evaluateSegment(query, p, { now: NOW, segments }))
            .map((p) => p.id)
            .sort();
          expect(await selectMatching(t.db, ws, query, { now: NOW, segments })).toEqual(expected);
          expect(await selectMatching(t.db, ws, query, { now: NOW, segments, strategy: 'set' })).toEqual(
            expected,
          );
        }),
        { numRuns: RUNS * 2 },
      );
    },
    60_000 + RUNS * 200,
  );
});
