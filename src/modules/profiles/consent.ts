import type { ConsentChoices } from '../ingest';
import { escapeKey } from './json-values';

/**
 * Consent, the pure part (docs/profiles.md, "Consent"): a profile's state per category is the
 * newest choice made for it (event time or request time, as traits are newer-wins), and a use that
 * needs some categories is allowed when every one is granted, a category with no recorded choice
 * counting as the workspace's `consent_default`.
 */

/** A category's recorded state. */
export interface ConsentState {
  granted: boolean;
  occurredAt: Date;
}

/** One choice that won against the recorded state (a new category, a newer choice). */
export interface ConsentChange {
  category: string;
  /** The state before, or null for a category with no recorded choice. */
  before: boolean | null;
  granted: boolean;
}

/**
 * The choices of a write at `at` that win against `current`: those of a category with no recorded
 * choice, and those at least as new as the recorded one (a later write at the same time wins, as a
 * re-sent PUT should). A winning choice that repeats the state still wins: its time and source are
 * the newest.
 */
export function winningChoices(
  current: ReadonlyMap<string, ConsentState>,
  choices: ConsentChoices,
  at: Date,
): ConsentChange[] {
  const out: ConsentChange[] = [];
  for (const [category, granted] of Object.entries(choices)) {
    const was = current.get(category);
    if (was && was.occurredAt.getTime() > at.getTime()) continue;
    out.push({ category, before: was?.granted ?? null, granted });
  }
  return out;
}

/** Does a profile with these states allow a use that needs `required`? */
export function consentAllows(
  states: ReadonlyMap<string, boolean> | undefined,
  required: readonly string[],
  defaultGranted: boolean,
): boolean {
  return required.every((c) => states?.get(c) ?? defaultGranted);
}

/** A choice's lineage path: `/consent/<category>` (JSON pointer, so `/` and `~` are escaped). */
export const consentPath = (category: string): string => `/consent/${escapeKey(category)}`;
