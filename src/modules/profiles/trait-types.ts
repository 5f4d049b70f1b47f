import type { Json, JsonObject } from './json-values';

/** What the trait merger reads and writes (traits.ts): a profile's fields, attributes and times. */

/** JSON pointer → epoch milliseconds of the write that last set the value there. */
export type FieldTimes = Record<string, number>;

export const PROFILE_FIELDS = ['email', 'first_name', 'last_name'] as const;
export type ProfileField = (typeof PROFILE_FIELDS)[number];

export interface TraitState {
  email: string | null;
  first_name: string | null;
  last_name: string | null;
  attributes: JsonObject;
  field_times: FieldTimes;
}

export interface TraitUpdate {
  email?: string | null;
  first_name?: string | null;
  last_name?: string | null;
  attributes?: JsonObject;
}

export interface FieldChange {
  path: string;
  old: Json;
  new: Json;
}

export interface MergeResult {
  /** The very same object as the input when neither a value nor a recorded time changed. */
  state: TraitState;
  changes: FieldChange[];
  /**
   * Bytes the attributes grew as JSON (negative when they shrank): `jsonBytes` after − before, plus
   * one byte for each object that was empty before the write and gained keys (an upper bound that
   * costs nothing to keep; measure the attributes when the exact size matters).
   */
  growth: number;
}
