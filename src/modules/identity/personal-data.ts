import type { Queryable } from '../../platform/db';
import { iso } from '../../platform/http/envelope';
import type { DataSubject, PersonalDataOwner, SubjectIdentifier } from '../../platform/personal-data';
import { classifyAnonymousId, classifyIdentity, identifierKey } from './identifiers';
import * as repo from './identity.repo';

/**
 * The identity graph's personal data: a person's identifiers (nodes) and the evidence that linked
 * them (edges), found by profile id. The suppression list keeps hashes of erased people's
 * identifiers on purpose (that is what blocks them), never the identifiers.
 */

/** Every identifier of these profiles, normalized: who the person is, read before anything is erased. */
export async function identifiersOfProfiles(
  q: Queryable,
  profileIds: readonly string[],
): Promise<SubjectIdentifier[]> {
  const byProfile = await repo.listIdentifiersOfProfiles(q, profileIds);
  return [...byProfile.values()].flat();
}

/**
 * Whether a raw event (its `identity` and `anonymous_id` as received) names the person: each value is
 * normalized as the pipeline would (docs/profiles.md, "Identifiers") and looked up among theirs.
 */
export function subjectMatcher(subject: DataSubject): (identity: unknown, anonymousId: unknown) => boolean {
  const keys = new Set(subject.identifiers.map((i) => identifierKey(subject.workspaceId, i)));
  const named = (id: ReturnType<typeof classifyIdentity>) =>
    id !== null && keys.has(identifierKey(subject.workspaceId, id));
  return (identity, anonymousId) =>
    named(classifyIdentity(identity)) || named(classifyAnonymousId(anonymousId));
}

async function* identifiersSection(db: Queryable, s: DataSubject): AsyncIterable<unknown> {
  for (const n of await repo.listNodesOfProfiles(db, s.workspaceId, s.profileIds)) {
    yield {
      id: n.id,
      type: n.type,
      value: n.value,
      first_seen: iso(n.first_seen),
      last_seen: iso(n.last_seen),
    };
  }
}

async function* edgesSection(db: Queryable, s: DataSubject): AsyncIterable<unknown> {
  for (const e of await repo.listEdgesOfProfiles(db, s.workspaceId, s.profileIds)) {
    yield { from: e.from_node, to: e.to_node, event_id: e.event_id, created_at: iso(e.created_at) };
  }
}

export const identityPersonalData: PersonalDataOwner = {
  module: 'identity',
  tables: [
    {
      table: 'identity_nodes',
      holds: "a person's identifiers (e-mail, phone, external ids, anonymous ids), by profile id",
      kept: { as: 'as long as the profile' },
      exported: { section: 'identifiers' },
    },
    {
      table: 'identity_edges',
      holds: 'which two identifiers of a person an event linked, and when',
      kept: { as: 'as long as its nodes' },
      exported: { section: 'identity_links' },
    },
    {
      table: 'identifier_suppressions',
      holds: 'SHA-256 hashes of the identifiers of erased people, never the identifiers',
      kept: {
        as: 'for good after an erasure with ?suppress=true (until DELETE /tenant/suppressions/{identifier}); else until no event received before the erasure waits any more',
      },
      exported: { not: 'a hash of identifiers the person no longer has here; nothing to give back' },
    },
  ],
  async erase(tx, s) {
    return { identity_nodes: await repo.deleteNodesOfProfiles(tx, s.workspaceId, s.profileIds) };
  },
  sections: [
    { name: 'identifiers', rows: identifiersSection },
    { name: 'identity_links', rows: edgesSection },
  ],
};
