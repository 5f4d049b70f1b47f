import type { Queryable } from '../../platform/db';
import { OK, type StepResult } from '../../platform/pipeline';
import { MAX_ACCOUNT_ID_LENGTH } from './accounts.limits';
import { type MembershipWrite, upsertMemberships } from './members.repo';

/** What the memberships step reads of an event of the batch. */
export interface GroupStepEvent {
  workspaceId: string;
  eventType: string;
  eventName: string;
  profileId: string | null;
  at: Date;
  payload: Record<string, unknown>;
}

/** The account a `group` call names: a `track` event named `Group` with a `group_id` (docs/ingestion.md). */
export function groupIdOf(e: GroupStepEvent): string | null {
  if (e.eventType !== 'track' || e.eventName !== 'Group') return null;
  const id = e.payload.group_id;
  return typeof id === 'string' && id.length > 0 && id.length <= MAX_ACCOUNT_ID_LENGTH ? id : null;
}

/**
 * The pipeline's `apply memberships` step: the profile of each `Group` event becomes (or stays) a
 * member of the account it names, with the call's time as seen. After `write profiles`, so the
 * profile is the event's survivor. Nothing to settle: an event that names no account is left alone.
 */
export async function applyMemberships(
  tx: Queryable,
  events: readonly GroupStepEvent[],
): Promise<StepResult> {
  const folded = new Map<string, MembershipWrite>();
  for (const e of events) {
    const groupId = groupIdOf(e);
    if (groupId === null || e.profileId === null) continue;
    const key = JSON.stringify([e.workspaceId, groupId, e.profileId]);
    const seen = folded.get(key);
    folded.set(key, {
      workspaceId: e.workspaceId,
      groupId,
      profileId: e.profileId,
      first: seen && seen.first < e.at ? seen.first : e.at,
      last: seen && seen.last > e.at ? seen.last : e.at,
    });
  }
  if (folded.size === 0) return OK;
  // One order for every writer of these rows (keys sorted), so two batches never wait on each other in a circle.
  await upsertMemberships(
    tx,
    [...folded.entries()].sort(([a], [b]) => (a < b ? -1 : 1)).map(([, w]) => w),
  );
  return OK;
}
