import { Type } from 'typebox';

/**
 * Consent choices as clients send them (docs/profiles.md, "Consent"): category → granted, on a
 * native event (`consent.categories`), a Segment or RudderStack message (mapped by the tracking
 * module) or PUT /tenant/profiles/{id}/consent. Defined here, at the door, because the event log
 * keeps them (events.consent); the profiles module records them per profile.
 */

/** Limits of one write of choices. */
export const CONSENT_LIMITS = {
  /** Categories in one write. */
  categories: 50,
  /** Characters of a category name. */
  categoryLength: 100,
} as const;

/** The choices one write carries: category → granted. */
export type ConsentChoices = Readonly<Record<string, boolean>>;

/** A category name: 1–100 characters, no NUL (PostgreSQL text cannot hold it). */
export const CategoryNameSchema = Type.String({
  minLength: 1,
  maxLength: CONSENT_LIMITS.categoryLength,
  pattern: '^[^\\u0000]*$',
});

export const ConsentChoicesSchema = Type.Record(Type.String(), Type.Boolean(), {
  minProperties: 1,
  maxProperties: CONSENT_LIMITS.categories,
  propertyNames: CategoryNameSchema,
  description: `Category → \`true\` (granted) or \`false\` (denied): 1 to ${CONSENT_LIMITS.categories} categories, names of 1 to ${CONSENT_LIMITS.categoryLength} characters.`,
});

const escapeKey = (k: string): string => k.replace(/~/g, '~0').replace(/\//g, '~1');

/**
 * The choices in a value a client sent in a place no schema covers (a Segment message's context),
 * or what is wrong with it: an object of at most CONSENT_LIMITS.categories keys, each 1–100
 * characters without NUL, each value a boolean. Null for an absent or empty one.
 */
export function readChoices(
  value: unknown,
): { ok: true; choices: ConsentChoices | null } | { ok: false; path: string; message: string } {
  if (value === undefined || value === null) return { ok: true, choices: null };
  if (typeof value !== 'object' || Array.isArray(value)) {
    return { ok: false, path: '', message: 'must be an object of category → true | false' };
  }
  const entries = Object.entries(value as Record<string, unknown>);
  if (entries.length > CONSENT_LIMITS.categories) {
    return { ok: false, path: '', message: `must have at most ${CONSENT_LIMITS.categories} categories` };
  }
  for (const [k, v] of entries) {
    if (k.length === 0 || k.length > CONSENT_LIMITS.categoryLength || k.includes('\u0000')) {
      return {
        ok: false,
        path: `/${escapeKey(k)}`,
        message: `a category name must be 1 to ${CONSENT_LIMITS.categoryLength} characters, without NUL`,
      };
    }
    if (typeof v !== 'boolean')
      return { ok: false, path: `/${escapeKey(k)}`, message: 'must be true or false' };
  }
  return { ok: true, choices: entries.length === 0 ? null : (value as ConsentChoices) };
}
