import type { CursorCodec, Page, PageRequest } from '../../platform/cursor';
import { toPage } from '../../platform/cursor';
import type { Queryable } from '../../platform/db';
import { AppError, notFound } from '../../platform/errors';
import { iso } from '../../platform/http/envelope';
import { findLiveProfileId } from '../profiles';
import { MAX_LISTED_MEMBERS, MEMBER_COUNT_CAP } from './accounts.limits';
import { type AccountRow, findAccount, listAccounts as listRows } from './accounts.repo';
import { countMembers, listMembers } from './members.repo';

export interface AccountView {
  id: string;
  traits: Record<string, unknown>;
  first_seen: string;
  last_seen: string;
  created_at: string;
  updated_at: string;
}

export interface AccountDetailView extends AccountView {
  member_count: number;
  members: Array<{ profile_id: string; first_seen: string; last_seen: string }>;
}

const present = (r: AccountRow): AccountView => ({
  id: r.group_id,
  traits: r.traits,
  first_seen: iso(r.first_seen_at)!,
  last_seen: iso(r.last_seen_at)!,
  created_at: iso(r.created_at)!,
  updated_at: iso(r.updated_at)!,
});

/** The keyset of a cursor this listing sealed: one row number. */
function afterOf(page: PageRequest): number | null {
  if (page.after === null) return null;
  const [seq] = page.after;
  if (page.after.length !== 1 || typeof seq !== 'number' || !Number.isSafeInteger(seq)) {
    throw new AppError('INVALID_CURSOR', 'cursor is not valid for this collection');
  }
  return seq;
}

export async function listAccounts(
  q: Queryable,
  codec: CursorCodec,
  workspaceId: string,
  page: PageRequest,
  filter: { profile_id?: string | undefined },
): Promise<Page<AccountView>> {
  const after = afterOf(page);
  let profileId: string | null = null;
  if (filter.profile_id !== undefined) {
    // A merged-away id lists its survivor's accounts (memberships follow the survivor).
    profileId = await findLiveProfileId(q, workspaceId, filter.profile_id);
    // An unknown profile (or one of another workspace) is simply in no account here.
    if (profileId === null) return toPage(codec, page, [], () => [], present);
  }
  const rows = await listRows(q, workspaceId, { profileId, after, limit: page.limit + 1 });
  return toPage(codec, page, rows, (r) => [r.seq], present);
}

export async function getAccount(q: Queryable, workspaceId: string, id: string): Promise<AccountDetailView> {
  const row = await findAccount(q, workspaceId, id);
  if (!row) throw notFound('account');
  const members = await listMembers(q, workspaceId, id, MAX_LISTED_MEMBERS);
  // Fewer than the page's bound: the count is the list's length, no second statement.
  const count =
    members.length < MAX_LISTED_MEMBERS
      ? members.length
      : await countMembers(q, workspaceId, id, MEMBER_COUNT_CAP);
  return {
    ...present(row),
    member_count: count,
    members: members.map((m) => ({
      profile_id: m.profile_id,
      first_seen: iso(m.first_seen_at)!,
      last_seen: iso(m.last_seen_at)!,
    })),
  };
}
