import type { Queryable } from '../../platform/db';
import * as erasureRepo from './erasure.repo';
import { StaleReadError } from './profile-batch.types';
import * as repo from './profiles.repo';

/** The profiles module's part of an erasure (the erasure workflow calls every owner's part in one transaction). */

/**
 * Locks a live profile and every profile merged into it, in the one lock order, and answers their
 * ids (the survivor first); StaleReadError when it was merged or erased before the lock.
 */
export async function lockProfileFamily(tx: Queryable, survivor: string): Promise<string[]> {
  const locked = await repo.lockProfiles(tx, [survivor]);
  if (!locked.complete || locked.rows[0]?.merged_into !== null) {
    throw new StaleReadError('the profile changed before it was locked');
  }
  return [survivor, ...locked.merged.map((r) => r.id)];
}

/** The erasure log: who erased which profile id when, and how much, never what. */
export const recordErasure = erasureRepo.insertErasure;
