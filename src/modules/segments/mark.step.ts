import type { Queryable } from '../../platform/db';
import { OK, type StepResult } from '../../platform/pipeline';
import { markDirty } from './membership.repo';
import { enqueueRefresh } from './refresh.job';

/** What the pipeline step needs of a batch: the profiles its events touched and the merges it made. */
export interface TouchedProfiles {
  items: ReadonlyArray<{ workspaceId: string; profileId: string | null }>;
  moves: ReadonlyMap<string, ReadonlyArray<{ from: string; to: string }>>;
}

/**
 * Pipeline step `mark segment work`: the batch's touched profiles (every event's profile, and both
 * sides of every merge) go on the dirty list of workspaces that have saved segments, and a refresh
 * job is queued for each such workspace, all in the claiming transaction, so a committed event
 * always has its refresh coming. Over-marking costs a re-evaluation; it never changes an answer.
 */
export async function markSegmentWork(tx: Queryable, batch: TouchedProfiles): Promise<StepResult> {
  const marks: Array<{ workspaceId: string; profileId: string }> = [];
  for (const i of batch.items)
    if (i.profileId) marks.push({ workspaceId: i.workspaceId, profileId: i.profileId });
  for (const [workspaceId, moves] of batch.moves) {
    for (const m of moves) {
      marks.push({ workspaceId, profileId: m.from }, { workspaceId, profileId: m.to });
    }
  }
  for (const workspaceId of await markDirty(tx, marks)) await enqueueRefresh(tx, workspaceId);
  return OK;
}
