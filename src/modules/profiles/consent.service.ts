import type { Static } from 'typebox';
import type { Queryable } from '../../platform/db';
import type { ConsentChoices } from '../ingest';
import { type ConsentChange, type ConsentState, consentPath, winningChoices } from './consent';
import {
  type ConsentRow,
  type ConsentWrite,
  readConsentChoices,
  readConsentRows,
  upsertConsent,
} from './consent.repo';
import { insertLineage, type LineageWrite } from './lineage.repo';
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

/** What one write came to. */
export interface RecordedConsent {
  /** Its choices that won. */
  won: ConsentChange[];
  /**
   * The profile's states after it, of the categories the call's writes name for the profile (null:
   * no recorded choice yet); its other categories are as they were before the call, and still are.
   */
  named: ReadonlyMap<string, boolean | null>;
}

/**
 * Records the choices that win (at least as new as the recorded ones), with a lineage row
 * (`/consent/<category>`) for each that changes the state. Several writes (a batch's events, in seq
 * order) are recorded in the order given as one at a time would be, in three statements whatever
 * their number: the recorded state of each (profile, category) they name read at once (per
 * workspace), each write judged against the states the writes before it left (so two events of one
 * profile in a batch are two choices, the later one's lineage row starting from the earlier one's
 * state), then one upsert of each category's last winning choice and one insert of every lineage
 * row. One statement per event was 5–6 round trips each (docs/benchmarks.md, "Consent"). The
 * caller holds the profiles' locks.
 */
export async function recordConsentWrites(
  tx: Queryable,
  writes: readonly ConsentWriteInput[],
): Promise<RecordedConsent[]> {
  const key = (workspaceId: string, profileId: string) => `${workspaceId} ${profileId}`;
  // Per profile, the state of each category the writes name (absent: no recorded choice).
  const current = new Map<string, Map<string, ConsentState>>();
  const categories = new Map<string, Set<string>>();
  const named = new Map<string, Map<string, { profileId: string; category: string }>>();
  for (const w of writes) {
    current.set(key(w.workspaceId, w.profileId), new Map());
    const mine = categories.get(key(w.workspaceId, w.profileId)) ?? new Set<string>();
    const pairs = named.get(w.workspaceId) ?? new Map<string, { profileId: string; category: string }>();
    for (const category of Object.keys(w.choices)) {
      mine.add(category);
      pairs.set(`${w.profileId} ${category}`, { profileId: w.profileId, category });
    }
    categories.set(key(w.workspaceId, w.profileId), mine);
    named.set(w.workspaceId, pairs);
  }
  for (const [workspaceId, pairs] of named) {
    for (const r of await readConsentChoices(tx, workspaceId, [...pairs.values()])) {
      current.get(key(workspaceId, r.profile_id))!.set(r.category, {
        granted: r.granted,
        occurredAt: new Date(r.occurred_at),
      });
    }
  }
  // Each (profile, category) once: one statement cannot update a row twice; the last winner stays.
  const upserts = new Map<string, ConsentWrite>();
  const lineage: LineageWrite[] = [];
  const out: RecordedConsent[] = [];
  for (const w of writes) {
    const states = current.get(key(w.workspaceId, w.profileId))!;
    const won = winningChoices(states, w.choices, w.at);
    const at = w.at.toISOString();
    for (const c of won) {
      states.set(c.category, { granted: c.granted, occurredAt: w.at });
      upserts.set(`${key(w.workspaceId, w.profileId)} ${c.category}`, {
        workspace_id: w.workspaceId,
        profile_id: w.profileId,
        category: c.category,
        granted: c.granted,
        occurred_at: at,
        source_type: w.source.type,
        source_id: w.source.id,
      });
      if (c.before === c.granted) continue;
      lineage.push({
        workspace_id: w.workspaceId,
        profile_id: w.profileId,
        path: consentPath(c.category),
        old_value: c.before,
        new_value: c.granted,
        source_type: w.source.type,
        source_id: w.source.id,
        merged_from: null,
        occurred_at: at,
      });
    }
    const mine = [...categories.get(key(w.workspaceId, w.profileId))!];
    out.push({ won, named: new Map(mine.map((c) => [c, states.get(c)?.granted ?? null])) });
  }
  await upsertConsent(tx, [...upserts.values()]);
  await insertLineage(tx, lineage);
  return out;
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
