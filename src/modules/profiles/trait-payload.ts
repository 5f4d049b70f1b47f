import { normalizeEmail } from '../identity';
import type { Json, JsonObject } from './json-values';
import { type FieldTimes, PROFILE_FIELDS, type ProfileField, type TraitUpdate } from './trait-types';

/**
 * Splits an identify payload into profile fields and attributes (docs/ingestion.md): `email`,
 * `first_name`, `last_name` set the fields (a number or boolean is kept as its text; an object or
 * array cannot be a name, so it stays an attribute); every other key is an attribute.
 */
export function traitsFromPayload(payload: Readonly<Record<string, unknown>>): TraitUpdate {
  const update: TraitUpdate = {};
  const attributes: JsonObject = {};
  for (const [key, value] of Object.entries(payload)) {
    if (value === undefined || key === '__proto__') continue;
    if ((PROFILE_FIELDS as readonly string[]).includes(key)) {
      const field = key as ProfileField;
      if (value === null || typeof value === 'string') {
        // The e-mail field in the form an email identity has: look-alikes (NFD, zero-width
        // characters, the domain's trailing dot) are one address (identity's normalizeEmail).
        update[field] = typeof value === 'string' && field === 'email' ? normalizeEmail(value) : value;
        continue;
      }
      if (typeof value === 'number' || typeof value === 'boolean') {
        update[field] = String(value);
        continue;
      }
    }
    attributes[key] = value as Json;
  }
  if (Object.keys(attributes).length > 0) update.attributes = attributes;
  return update;
}

/**
 * The write time of each path of a profile being merged away: its own field times, inherited by
 * ancestor, falling back to when the profile was last updated.
 */
export function timesOfProfile(fieldTimes: FieldTimes, fallback: number): (path: string) => number {
  return (path) => {
    let p = path;
    for (;;) {
      const t = fieldTimes[p];
      if (t !== undefined) return t;
      const cut = p.lastIndexOf('/');
      if (cut <= 0) return fallback;
      p = p.slice(0, cut);
    }
  };
}
