import type { Queryable } from '../../platform/db';
import { DEFAULT_TRIES, retryConflicts } from '../../platform/db/retry';
import { validationError } from '../../platform/errors';
import type { createProfileBatch } from './profile-batch';
import { StaleReadError } from './profile-batch.types';
import * as repo from './profiles.repo';
import { countTraitKeys, TOO_MANY_TRAIT_KEYS, TRAIT_LIMITS } from './traits';

/**
 * The rules of every writer of profiles: the lock order and the retry of a lost race, the checks of
 * an API write's attributes, and the order summary commerce computes.
 */

const MAX_DEPTH = TRAIT_LIMITS.depth;

/**
 * An API write's attributes: at most TRAIT_LIMITS.keysPerWrite keys (counted first, and the count
 * stops at the limit: the cost of a write, and its lineage, grow with its keys), then checkAttributes.
 */
export function checkAttributeWrite(attributes: unknown): void {
  if (countTraitKeys(attributes, TRAIT_LIMITS.keysPerWrite) > TRAIT_LIMITS.keysPerWrite)
    throw validationError('/attributes', TOO_MANY_TRAIT_KEYS);
  checkAttributes(attributes);
}

/** Attributes are stored as jsonb: no NUL anywhere, and a bounded depth (the merger recurses). */
export function checkAttributes(value: unknown, path = '/attributes', depth = 0): void {
  if (depth > MAX_DEPTH) throw validationError(path, `is nested deeper than ${MAX_DEPTH} levels`);
  if (typeof value === 'string') {
    if (value.includes('\u0000')) throw validationError(path, 'must not contain NUL characters');
    return;
  }
  if (typeof value !== 'object' || value === null) return;
  for (const [k, v] of Object.entries(value)) {
    const child = `${path}/${k.replace(/~/g, '~0').replace(/\//g, '~1')}`;
    if (k.includes('\u0000')) throw validationError(child, 'key must not contain NUL characters');
    checkAttributes(v, child, depth + 1);
  }
}

/**
 * Runs a transaction over profiles again when it lost a race: a deadlock or serialization failure
 * (the safety net: the lock order should prevent them) or a stale read found after locking (a
 * profile merged, erased or an identifier linked meanwhile). Bounded; see retryConflicts.
 */
export function withRetry<T>(fn: () => Promise<T>, tries = DEFAULT_TRIES): Promise<T> {
  return retryConflicts(fn, { tries, retryOn: (err) => err instanceof StaleReadError });
}

/**
 * Locks profiles by id, with the profiles merged into them (repo.lockProfiles: the one lock order),
 * and adds the live ones to a batch; throws StaleReadError when one was merged or erased meanwhile.
 */
export async function lockInto(
  tx: Queryable,
  batch: ReturnType<typeof createProfileBatch>,
  ids: readonly string[],
): Promise<void> {
  const { rows, complete } = await repo.lockProfiles(tx, ids);
  if (!complete || rows.length !== new Set(ids).size || rows.some((r) => r.merged_into !== null)) {
    throw new StaleReadError('a profile changed before it was locked');
  }
  batch.addLocked(rows);
}

/**
 * Stores total_spend and the completed-order summary as commerce computed them from the orders;
 * only the profiles whose values changed are written. Runs in the caller's transaction.
 */
export function storeOrderSummary(
  tx: Queryable,
  workspaceId: string,
  summaries: readonly repo.StoredOrderSummary[],
): Promise<void> {
  return repo.storeOrderSummary(tx, workspaceId, summaries);
}
