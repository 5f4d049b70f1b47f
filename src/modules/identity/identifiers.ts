import { createHash } from 'node:crypto';
import { parsePhoneNumberFromString } from 'libphonenumber-js';

/**
 * Identifier classification and normalization (docs/profiles.md), pure.
 *
 * `identity` is classified: contains `@` → email (trimmed, lower-cased); `+` then digits → phone in
 * E.164; anything else → external id (trimmed, case kept: CRM ids are often case-sensitive).
 * `anonymous_id` is its own type (lower-cased, since UUIDs are case-insensitive).
 *
 * A phone-looking value that libphonenumber says cannot be a phone number of any country (too short
 * or too long for its country code, e.g. `+123`) is kept as an external id: the caller chose it as a
 * stable key, so dropping it would lose linkage, but calling it a phone would be a lie. Numbers of
 * possible length that are not assigned (`+1 555 555 0100`, test numbers) stay phones, normalized.
 *
 * Junk values never link anything: `null`, `undefined`, `anonymous`, `0`, empty or blank, a few
 * other placeholders clients are known to send, and the workspace's own list
 * (`settings.junk_identifiers`). Comparison is on the trimmed, lower-cased value and on the
 * normalized value, so a listed `+1 555 0100` also catches `+15550100`.
 */
export type IdentifierType = 'email' | 'phone' | 'external_id' | 'anonymous_id';

export const IDENTIFIER_TYPES: readonly IdentifierType[] = ['email', 'phone', 'external_id', 'anonymous_id'];

export interface Identifier {
  type: IdentifierType;
  value: string;
}

export const BUILTIN_JUNK: readonly string[] = [
  '',
  'null',
  'undefined',
  'anonymous',
  '0',
  // Common client-side placeholders that would otherwise glue unrelated people together.
  'none',
  'nil',
  'nan',
  'n/a',
  'guest',
  'true',
  'false',
  '[object object]',
  '00000000-0000-0000-0000-000000000000',
];

/** Longest identifier value that is linked; longer values are refused as junk (no real id is that long). */
export const MAX_IDENTIFIER_LENGTH = 500;

/** The set a workspace treats as junk: the built-in list plus its own (normalized the same way). */
export function junkSet(workspaceList: readonly unknown[] = []): ReadonlySet<string> {
  const set = new Set(BUILTIN_JUNK);
  for (const v of workspaceList.slice(0, 1000)) {
    if (typeof v !== 'string') continue;
    const lowered = v.trim().toLowerCase();
    set.add(lowered);
    const normalized = classifyRaw(v);
    if (normalized) set.add(normalized.value.toLowerCase());
  }
  return set;
}

/** Built once per settings object: the settings accessor hands out the same object until a change. */
const junkOfSettings = new WeakMap<object, ReadonlySet<string>>();

/** Reads `settings.junk_identifiers` defensively (settings are free-form JSON). */
export function junkSetFromSettings(
  settings: Readonly<Record<string, unknown>> | null | undefined,
): ReadonlySet<string> {
  if (!settings) return junkSet();
  let set = junkOfSettings.get(settings);
  if (!set) {
    const list = settings.junk_identifiers;
    set = junkSet(Array.isArray(list) ? list : []);
    junkOfSettings.set(settings, set);
  }
  return set;
}

const PHONE_SHAPE = /^\+[\d\s().-]+$/;

function classifyRaw(raw: string): Identifier | null {
  const trimmed = raw.trim();
  if (trimmed === '') return null;
  if (trimmed.includes('@')) {
    const email = trimmed.toLowerCase();
    const at = email.lastIndexOf('@');
    // `@`, `a@` or `@b` identify nobody.
    if (at <= 0 || at === email.length - 1) return null;
    return { type: 'email', value: email };
  }
  if (PHONE_SHAPE.test(trimmed)) {
    const parsed = parsePhoneNumberFromString(trimmed);
    if (parsed?.isPossible()) return { type: 'phone', value: parsed.number };
  }
  return { type: 'external_id', value: trimmed };
}

/** Classifies an event's `identity`; null when absent, junk, or unusable. */
export function classifyIdentity(raw: unknown, junk: ReadonlySet<string> = junkSet()): Identifier | null {
  if (typeof raw !== 'string' || raw.length > MAX_IDENTIFIER_LENGTH) return null;
  if (junk.has(raw.trim().toLowerCase())) return null;
  const id = classifyRaw(raw);
  if (!id || junk.has(id.value.toLowerCase())) return null;
  return id;
}

/** Normalizes an event's `anonymous_id`; null when absent or junk. */
export function classifyAnonymousId(raw: unknown, junk: ReadonlySet<string> = junkSet()): Identifier | null {
  if (typeof raw !== 'string' || raw.length > MAX_IDENTIFIER_LENGTH) return null;
  const value = raw.trim().toLowerCase();
  if (junk.has(value)) return null;
  return { type: 'anonymous_id', value };
}

/** Normalizes an e-mail trait or filter value the same way an email identity is normalized. */
export function normalizeEmail(raw: string): string {
  return raw.trim().toLowerCase();
}

/** A stable map key for an identifier within a workspace. */
export const identifierKey = (workspaceId: string, id: Identifier): string =>
  `${workspaceId}|${id.type}|${id.value}`;

/**
 * What the suppression list stores for an identifier: a SHA-256, so the block list that outlives an
 * erasure does not itself keep the erased e-mail or phone number.
 */
export function suppressionHash(workspaceId: string, id: Identifier): string {
  return createHash('sha256').update(`${workspaceId}\n${id.type}\n${id.value}`).digest('hex');
}
