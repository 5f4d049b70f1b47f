import type { Logger } from 'pino';
import { suppressIdentifiers } from '../modules/identity';
import { logHorizon } from '../modules/ingest';
import { recordErasure, withRetry } from '../modules/profiles';
import { type Db, notify } from '../platform/db';
import { newSortableId } from '../platform/ids';
import {
  type DataSubject,
  ERASURE_CHANNEL,
  type ErasureSlice,
  type PersonalDataRegistry,
} from '../platform/personal-data';
import { createSliceSizer, slicerFor } from '../platform/slices';
import { dataSubject } from './data-subject';

export interface ErasureView {
  id: string;
  profile_id: string;
  erased_profile_ids: string[];
  suppressed: boolean;
  /** Rows removed (or scrubbed) per table, every registered owner's. */
  counts: Record<string, number>;
}

/**
 * Slices of an erasure before its final transaction: about 10 ms of the database each on PGlite
 * (where every other workspace waits behind them), 50 ms on PostgreSQL (where only the person's
 * rows are locked); 1 to 5,000 rows.
 */
const SIZERS = {
  pglite: createSliceSizer({ targetMs: 10, min: 1, max: 5_000, initial: 200 }),
  postgres: createSliceSizer({ targetMs: 50, min: 10, max: 5_000, initial: 1_000 }),
};

/** Where each walk stood when the slices ended (its final step goes on from there). */
type Walks = Map<ErasureSlice, string | null>;

/**
 * Walks every owner's large tables in short transactions of the worker lane, sized by time, so a
 * history of any length never holds the database (or PGlite's one connection) for long. What the
 * person sends meanwhile is taken by the final transaction.
 */
async function runSlices(
  db: Db,
  registry: PersonalDataRegistry,
  subject: DataSubject,
  counts: Record<string, number>,
): Promise<Walks> {
  const walks: Walks = new Map();
  const slicer = slicerFor(SIZERS[db.engine], subject.workspaceId);
  const lane = db.lane('worker');
  for (const owner of registry.owners) {
    for (const walk of owner.slices ?? []) {
      let from: string | null = null;
      for (;;) {
        const size = slicer.size();
        const t0 = performance.now();
        const step = await lane.transaction((tx) => walk.step(tx, subject, size, from));
        slicer.record(size, performance.now() - t0);
        counts[walk.table] = (counts[walk.table] ?? 0) + step.removed;
        from = step.from;
        if (step.done) break;
      }
      walks.set(walk, from);
    }
  }
  return walks;
}

/**
 * DELETE /tenant/profiles/{id} (docs/profiles.md, "Erasure"): forgets a person everywhere the
 * personal-data registry (src/personal-data.ts) says they are: the profile and every profile merged
 * into it, their events (applied, waiting or dead-lettered), identifiers, lineage, outbox facts and
 * the webhook deliveries that carried them, segment and account memberships, scores; their orders
 * stay for the books without the link. The answer and the erasure log carry ids and counts only.
 *
 * 1. Large histories are removed first in short slices (runSlices), while the profile still lives.
 * 2. One transaction, the profiles locked in the one lock order, does the rest: each walk's last
 *    step from where it stood, every owner's `erase` in registry order, the identifiers blocked
 *    (for good with `suppress`, else up to this erasure's horizon, so an event received before it
 *    and still on its way is dropped rather than bring the person back), the log, and a notification
 *    (ERASURE_CHANNEL) that makes every process drop what it holds in memory of the workspace's events.
 * If the service stops between the two, nothing was acknowledged: the next DELETE finishes it.
 */
export async function eraseProfile(
  db: Db,
  log: Logger,
  registry: PersonalDataRegistry,
  workspaceId: string,
  id: string,
  opts: { suppress: boolean; apiKeyId: string | null },
): Promise<ErasureView> {
  const counts: Record<string, number> = {};
  const first = await withRetry(() =>
    db.transaction((tx) => dataSubject(tx, workspaceId, id, { lock: true })),
  );
  const walks = await runSlices(db, registry, first, counts);
  const view = await withRetry(() =>
    db.transaction(async (tx) => {
      // The person again: a merge meanwhile may have brought more profiles and identifiers.
      const subject = await dataSubject(tx, workspaceId, id, { lock: true });
      const final: Record<string, number> = { ...counts };
      const add = (table: string, n: number) => {
        final[table] = (final[table] ?? 0) + n;
      };
      for (const [walk, from] of walks) add(walk.table, (await walk.step(tx, subject, null, from)).removed);
      for (const owner of registry.owners) {
        for (const [table, n] of Object.entries(await owner.erase(tx, subject))) add(table, n);
      }
      await suppressIdentifiers(
        tx,
        workspaceId,
        subject.identifiers,
        opts.suppress ? null : await logHorizon(tx),
      );
      const erasure: ErasureView = {
        id: newSortableId('era'),
        profile_id: subject.profileIds[0]!,
        erased_profile_ids: [...subject.profileIds],
        suppressed: opts.suppress,
        counts: final,
      };
      await recordErasure(tx, {
        id: erasure.id,
        workspaceId,
        profileId: erasure.profile_id,
        erasedIds: erasure.erased_profile_ids,
        apiKeyId: opts.apiKeyId,
        suppressed: opts.suppress,
        counts: erasure.counts,
      });
      await notify(tx, ERASURE_CHANNEL, workspaceId);
      return erasure;
    }),
  );
  // Ids and counts only: the erased data itself is gone and must not reappear in logs.
  log.info(
    {
      workspace_id: workspaceId,
      erasure_id: view.id,
      profile_id: view.profile_id,
      suppressed: view.suppressed,
      counts: view.counts,
    },
    'profile erased',
  );
  return view;
}
