import type { Queryable } from '../../platform/db';
import { MAX_ACCOUNT_TRAIT_BYTES } from './accounts.limits';
import { type AccountRow, type AccountWrite, findAccount, upsertAccounts } from './accounts.repo';
import { moveMemberships } from './members.repo';

export { MAX_ACCOUNT_ID_LENGTH, MAX_ACCOUNT_TRAIT_BYTES } from './accounts.limits';
export { registerAccountRoutes } from './accounts.routes';
// The processing pipeline's step.
export { applyMemberships, type GroupStepEvent } from './accounts.step';
export { accountsPersonalData } from './personal-data';
/**
 * The accounts module's public API. An account is a group (a company, a team) named by a
 * Segment-style `group` call: its traits (written by the `/v1` door), and the profiles that made the
 * calls (written by the event pipeline's `apply memberships` step), read at /tenant/accounts
 * (docs/api.md). The module owns the `accounts` and `account_members` tables.
 */
export type { AccountRow, AccountWrite };

/**
 * Applies the traits of several calls, in one statement. Repeats of one group id are folded first,
 * in time order (newer keys win), as the table would have merged them one by one; the writes go in
 * group id order, so two requests naming the same accounts lock them in one order.
 */
export async function writeAccountTraits(
  q: Queryable,
  workspaceId: string,
  writes: readonly AccountWrite[],
): Promise<void> {
  const folded = new Map<string, AccountWrite>();
  for (const w of [...writes].sort((a, b) => Date.parse(a.at) - Date.parse(b.at))) {
    const seen = folded.get(w.groupId);
    folded.set(
      w.groupId,
      seen ? { groupId: w.groupId, traits: { ...seen.traits, ...w.traits }, at: w.at } : w,
    );
  }
  const sorted = [...folded.values()].sort((a, b) =>
    a.groupId < b.groupId ? -1 : a.groupId > b.groupId ? 1 : 0,
  );
  await upsertAccounts(q, workspaceId, sorted, MAX_ACCOUNT_TRAIT_BYTES);
}

export const readAccount = (q: Queryable, workspaceId: string, groupId: string): Promise<AccountRow | null> =>
  findAccount(q, workspaceId, groupId);

/** A merge (src/workflows/merge.ts): the merged-away profiles' memberships become the survivors'. */
export const moveAccountMemberships = (
  q: Queryable,
  workspaceId: string,
  moves: ReadonlyArray<{ from: string; to: string }>,
): Promise<void> => moveMemberships(q, workspaceId, moves);
