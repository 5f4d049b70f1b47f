import { BACKGROUND_SLICE_MS, createYielder } from '../../platform/cooperate';
import type { Db } from '../../platform/db';
import { newSortableId } from '../../platform/ids';
import { createSliceSizer, type Slicer, slicerFor } from '../../platform/slices';
import type { PurchaseModelName } from './models';
import { runCooperatively } from './models/nelder-mead';
import { fitWorkspaceModelsSteps } from './models/workspace-models';
import { createFitAccumulator, type StoredFit, storedFit, toSummary } from './scoring';
import { SUMMARY_CHUNK, streamWorkspaceSummaries } from './summaries.repo';

// A workspace's models fitted on its order summaries, without storing anything: the live fit
// (intelligence.service.ts) and the back-test (backtest.ts) both start here.

/**
 * A fit's rescoring pages. On PostgreSQL 10,000: half the statements and commits of 5,000 for the
 * same rows; 1M customers rescored in 41.8 s instead of 48.1 s (`npm run bench -- intelligence`,
 * two chunks in flight; 39.9 s with three, FIT_RESCORE_PARALLEL). A page's profiles stay locked
 * about a second; the per-order rescoring keeps RESCORE_CHUNK.
 */
export const FIT_RESCORE_CHUNK = { postgres: 10_000, pglite: 1000 } as const;

/**
 * A fit's summary pages read at once, and its rescoring chunks in flight at once. Each statement
 * runs on one backend, one core, and both passes are database work (reading summaries; writing
 * scores, locking and updating profiles): with one at a time a 2-core server had a core idle.
 * PGlite has one connection, so one.
 */
export const RESCORE_PARALLEL = { postgres: 2, pglite: 1 } as const;

/**
 * Rescoring chunks in flight at once. A chunk is a dozen statements, and between two of them its
 * backend waits for the service (a round trip, the scoring): a third chunk fills those gaps.
 */
export const FIT_RESCORE_PARALLEL = { postgres: 3, pglite: 1 } as const;

/**
 * On PGlite a fit's pages are sized by time instead (platform/slices.ts), towards the 10 ms slice
 * that segment refreshes keep: the single connection is free between two statements, so another
 * workspace's ingest or read waits behind at most one page. A whole 20,000-customer summary read or
 * a 1,000-customer rescoring transaction held it for up to a second on a busy machine: that
 * workspace's ingest p99 went to 1.2 s while a neighbour fitted (bench/neighbour.bench.ts,
 * BENCH_NEIGHBOUR_KINDS=fit; docs/benchmarks.md "Noisy neighbour").
 */
const PGLITE_FIT_SLICES = {
  read: createSliceSizer({ targetMs: 10, min: 50, max: SUMMARY_CHUNK, initial: 500 }),
  rescore: createSliceSizer({ targetMs: 10, min: 20, max: FIT_RESCORE_CHUNK.pglite, initial: 100 }),
};

/** A fixed page size on PostgreSQL (its own connections), time-sized pages on PGlite. */
export function fitPages(db: Db, workspaceId: string, kind: 'read' | 'rescore'): Slicer | null {
  return db.engine === 'pglite' ? slicerFor(PGLITE_FIT_SLICES[kind], workspaceId) : null;
}

/**
 * Fits the workspace's models on its completed orders at or before asOf, without storing anything:
 * the summaries stream through the fit's accumulators page by page (no customer is held), then the
 * fit runs as steps that give the event loop a turn every few ms. Shared by the live fit and the
 * back-test (backtest.ts).
 */
export async function fitWorkspace(
  db: Db,
  workspaceId: string,
  asOf: Date,
  fittedAt: Date,
  model: PurchaseModelName | undefined,
): Promise<{ fit: StoredFit; customers: number; readMs: number }> {
  const yieldNow = createYielder(BACKGROUND_SLICE_MS);
  const t0 = performance.now();
  const acc = createFitAccumulator();
  const pages = streamWorkspaceSummaries(
    db,
    workspaceId,
    asOf,
    fitPages(db, workspaceId, 'read') ?? SUMMARY_CHUNK,
    RESCORE_PARALLEL[db.engine],
  );
  for await (const page of pages) {
    for (const row of page) {
      acc.add(toSummary(row));
      if (yieldNow.due()) await yieldNow();
    }
  }
  const { data, rfm } = acc.finish();
  const readMs = performance.now() - t0;
  const models = await runCooperatively(
    fitWorkspaceModelsSteps(data, { model: model ?? 'mbg_nbd' }),
    yieldNow,
  );
  return {
    fit: storedFit(newSortableId('fit'), asOf, fittedAt, models, data, rfm),
    customers: data.customers,
    readMs,
  };
}
