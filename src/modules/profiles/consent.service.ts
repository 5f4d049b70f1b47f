import type { Static } from 'typebox';
import type { Queryable } from '../../platform/db';
import type { ConsentChoices } from '../ingest';
import { type ConsentChange, consentPath, winningChoices } from './consent';
import { type ConsentRow, readConsentRows, upsertConsent } from './consent.repo';
import { insertLineage } from './lineage.repo';
import type { Source } from './profile-batch';
import type { ConsentSchema } from './profiles.schemas';

/** One consent write: choices made at `at` for a live profile whose lock the caller holds. */
export interface ConsentWriteInput {
  workspaceId: string;
  profileId: string;
  choices: ConsentChoices;
  at: Date;
  source: Source;
}

/**
 * Records the choices that win (newer than the recorded ones), with a lineage row
 * (`/consent/<category>`) for each that changes the state. The caller holds the profile's lock, so
 * no merge or erasure moves it meanwhile. Answers the winning choices.
 */
export async function recordConsent(tx: Queryable, w: ConsentWriteInput): Promise<ConsentChange[]> {
  const rows = await readConsentRows(tx, w.workspaceId, [w.profileId]);
  const current = new Map(rows.map((r) => [r.category, { granted: r.granted, occurredAt: r.occurred_at }]));
  const won = winningChoices(current, w.choices, w.at);
  const at = w.at.toISOString();
  await upsertConsent(
    tx,
    won.map((c) => ({
      workspace_id: w.workspaceId,
      profile_id: w.profileId,
      category: c.category,
      granted: c.granted,
      occurred_at: at,
      source_type: w.source.type,
      source_id: w.source.id,
    })),
  );
  await insertLineage(
    tx,
    won
      .filter((c) => c.before !== c.granted)
      .map((c) => ({
        workspace_id: w.workspaceId,
        profile_id: w.profileId,
        path: consentPath(c.category),
        old_value: c.before,
        new_value: c.granted,
        source_type: w.source.type,
        source_id: w.source.id,
        merged_from: null,
        occurred_at: at,
      })),
  );
  return won;
}

/** Each profile's recorded states (category → granted); a profile with none is absent. */
export async function consentStates(
  q: Queryable,
  workspaceId: string,
  profileIds: readonly string[],
): Promise<Map<string, Map<string, boolean>>> {
  const out = new Map<string, Map<string, boolean>>();
  for (const r of await readConsentRows(q, workspaceId, [...new Set(profileIds)])) {
    const m = out.get(r.profile_id) ?? new Map<string, boolean>();
    m.set(r.category, r.granted);
    out.set(r.profile_id, m);
  }
  return out;
}

export type ConsentView = Static<typeof ConsentSchema>;

export const presentConsent = (rows: readonly ConsentRow[]): ConsentView => ({
  categories: Object.fromEntries(
    rows.map((r) => [
      r.category,
      {
        granted: r.granted,
        updated_at: new Date(r.occurred_at).toISOString(),
        source_type: r.source_type,
        source_id: r.source_id,
      },
    ]),
  ),
});

/** A profile's consent as the API shows it. */
export async function readConsent(
  q: Queryable,
  workspaceId: string,
  profileId: string,
): Promise<ConsentView> {
  return presentConsent(await readConsentRows(q, workspaceId, [profileId]));
}
