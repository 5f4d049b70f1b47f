import type { Db } from '../../platform/db';
import { iso } from '../../platform/http/envelope';
import type { DataSubject, PersonalDataOwner } from '../../platform/personal-data';
import { deleteMemberships, membershipsOfProfiles } from './members.repo';

/**
 * Which accounts a person is a member of. The accounts themselves describe a company or a team
 * (the traits `group` calls carry), not the person, and stay when a member is erased.
 */

async function* accountsOf(db: Db, s: DataSubject): AsyncIterable<unknown> {
  for (const m of await membershipsOfProfiles(db, s.workspaceId, s.profileIds)) {
    yield {
      account_id: m.group_id,
      traits: m.traits,
      first_seen: iso(m.first_seen_at),
      last_seen: iso(m.last_seen_at),
    };
  }
}

export const accountsPersonalData: PersonalDataOwner = {
  module: 'accounts',
  tables: [
    {
      table: 'account_members',
      holds: 'the accounts a person was named a member of by their group calls, and when',
      kept: { as: 'as long as the profile' },
      exported: { section: 'accounts' },
    },
  ],
  async erase(tx, s) {
    return { account_members: await deleteMemberships(tx, s.workspaceId, s.profileIds) };
  },
  sections: [{ name: 'accounts', rows: accountsOf }],
};
