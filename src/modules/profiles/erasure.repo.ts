import type { Queryable } from '../../platform/db';

/** The erasure log (profile_erasures): who erased which profile id when, and how much, never what. */
export async function insertErasure(
  q: Queryable,
  e: {
    id: string;
    workspaceId: string;
    profileId: string;
    erasedIds: readonly string[];
    apiKeyId: string | null;
    suppressed: boolean;
    counts: Record<string, number>;
  },
): Promise<void> {
  await q.query(
    `INSERT INTO profile_erasures (id, workspace_id, profile_id, erased_profile_ids, api_key_id, suppressed, counts)
     VALUES ($1, $2, $3, $4::uuid[], $5, $6, $7::jsonb)`,
    [e.id, e.workspaceId, e.profileId, e.erasedIds, e.apiKeyId, e.suppressed, JSON.stringify(e.counts)],
  );
}
