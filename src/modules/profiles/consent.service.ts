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
  // Per profile (its id is unique across workspaces: the table's key), the state of each category
  // the writes name (absent: no recorded choice), and the write that last won it.
  const profiles = new Map<string, { states: Map<string, ConsentState>; last: Map<string, ConsentWrite> }>();
  const pairs = new Map<string, Array<{ profileId: string; category: string }>>();
  for (const w of writes) {
    let p = profiles.get(w.profileId);
    if (!p) {
      p = { states: new Map(), last: new Map() };
      profiles.set(w.profileId, p);
    }
    let named = pairs.get(w.workspaceId);
    if (!named) {
      named = [];
      pairs.set(w.workspaceId, named);
    }
    for (const category of Object.keys(w.choices)) {
      // A placeholder per named category, so the read below asks for each pair once.
      if (p.last.has(category)) continue;
      p.last.set(category, NO_WRITE);
      named.push({ profileId: w.profileId, category });
    }
  }
  for (const [workspaceId, named] of pairs) {
    for (const r of await readConsentChoices(tx, workspaceId, named)) {
      profiles.get(r.profile_id)!.states.set(r.category, {
        granted: r.granted,
        occurredAt: new Date(r.occurred_at),
      });
    }
  }
  const lineage: LineageWrite[] = [];
  const out: RecordedConsent[] = [];
  for (const w of writes) {
    const { states, last } = profiles.get(w.profileId)!;
    const won = winningChoices(states, w.choices, w.at);
    const at = won.length > 0 ? w.at.toISOString() : '';
    for (const c of won) {
      states.set(c.category, { granted: c.granted, occurredAt: w.at });
      last.set(c.category, {
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
    const named = new Map<string, boolean | null>();
    for (const category of last.keys()) named.set(category, states.get(category)?.granted ?? null);
    out.push({ won, named });
  }
  // Each (profile, category) once, its last winner: one statement cannot update a row twice.
  const upserts: ConsentWrite[] = [];
  for (const { last } of profiles.values())
    for (const row of last.values()) if (row !== NO_WRITE) upserts.push(row);
  await upsertConsent(tx, upserts);
  await insertLineage(tx, lineage);
  return out;
}

/** A named category no write has won yet. */
const NO_WRITE: ConsentWrite = {
  workspace_id: '',
  profile_id: '',
  category: '',
  granted: false,
  occurred_at: '',
  source_type: 'event',
  source_id: null,
};

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
