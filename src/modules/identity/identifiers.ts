import { createHash } from 'node:crypto';
import { parsePhoneNumberFromString } from 'libphonenumber-js';

/**
 * Identifier classification and normalization (docs/profiles.md), pure. The one home of what makes
 * two identifiers the same: the pipeline, the profile API, the lookups, suppression and the repair
 * of stored values all classify through here.
 *
 * Every value is first made the text it looks like (`normalizeText`): Unicode format characters
 * (category Cf: zero-width space and joiners, word joiner, BOM, soft hyphen, bidi marks) removed, then
 * Unicode NFC, so `josé` typed with a precomposed é and with e + combining accent is one value.
 * Then `identity` is classified: contains `@` → email (trimmed, lower-cased, trailing dots of the
 * domain dropped: `a@x.y.` is `a@x.y`); `+` then digits → phone in E.164; anything else → external id
 * (trimmed, case kept: CRM ids are often case-sensitive). `anonymous_id` is its own type
 * (lower-cased, since UUIDs are case-insensitive).
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

/**
 * Format characters (Unicode category Cf) draw nothing: U+200B–U+200F, U+2060–U+2064, U+FEFF,
 * U+00AD (soft hyphen), the bidi controls, tag characters. Two values that differ only by them look
 * identical to a person, so they are one identifier.
 */
const FORMAT_CHARACTERS = /\p{Cf}/gu;

/** Plain ASCII holds no format character and is its own NFC: most values skip both steps. */
const NON_ASCII = /[\u0080-\u{10ffff}]/u;

/** The text a value is compared as: format characters removed, then Unicode NFC. Idempotent. */
export function normalizeText(raw: string): string {
  return NON_ASCII.test(raw) ? raw.replace(FORMAT_CHARACTERS, '').normalize('NFC') : raw;
}

/** Lower-cased, and NFC again: lower-casing may leave a sequence NFC composes differently. */
const lowerText = (text: string): string => {
  const lowered = text.toLowerCase();
  return NON_ASCII.test(lowered) ? lowered.normalize('NFC') : lowered;
};

/** The set a workspace treats as junk: the built-in list plus its own (normalized the same way). */
export function junkSet(workspaceList: readonly unknown[] = []): ReadonlySet<string> {
  const set = new Set(BUILTIN_JUNK);
  for (const v of workspaceList.slice(0, 1000)) {
    if (typeof v !== 'string') continue;
    const lowered = lowerText(normalizeText(v).trim());
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
  const trimmed = normalizeText(raw).trim();
  if (trimmed === '') return null;
  if (trimmed.includes('@')) {
    const email = normalizeEmail(trimmed);
    const at = email.lastIndexOf('@');
    // `@`, `a@`, `a@.` or `@b` identify nobody.
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
  if (junk.has(lowerText(normalizeText(raw).trim()))) return null;
  const id = classifyRaw(raw);
  if (!id || junk.has(id.value.toLowerCase())) return null;
  return id;
}

/** Normalizes an event's `anonymous_id`; null when absent or junk. */
export function classifyAnonymousId(raw: unknown, junk: ReadonlySet<string> = junkSet()): Identifier | null {
  if (typeof raw !== 'string' || raw.length > MAX_IDENTIFIER_LENGTH) return null;
  const value = anonymousForm(raw);
  if (junk.has(value)) return null;
  return { type: 'anonymous_id', value };
}

const anonymousForm = (raw: string): string => lowerText(normalizeText(raw).trim());

/**
 * Normalizes an e-mail the way an email identity is: the profile's `email` field (from a trait or an
 * identity), the `email=` filter, an identity containing `@`. Trailing dots of the domain go (`x.y.`
 * is the fully qualified spelling of `x.y`). A value that is no address (no `@`) is only made text,
 * trimmed and lower-cased.
 */
export function normalizeEmail(raw: string): string {
  const text = lowerText(normalizeText(raw).trim());
  const at = text.lastIndexOf('@');
  if (at < 0) return text;
  return `${text.slice(0, at)}@${text.slice(at + 1).replace(/\.+$/, '')}`;
}

/**
 * A stored identifier (identity_nodes) in today's normal form, for the repair of values stored
 * before it: classified again as its type was (an e-mail, phone or external id as an `identity`, so
 * an external id that only format characters kept from being a phone becomes the phone), without the
 * junk lists (a stored value is not refused after the fact). Null when nothing is left of it.
 */
export function normalizeStoredIdentifier(type: IdentifierType, value: string): Identifier | null {
  if (type === 'anonymous_id') {
    const v = anonymousForm(value);
    return v === '' ? null : { type, value: v };
  }
  return classifyRaw(value);
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

/**
 * The identifier as versions before `normalizeText` classified this raw value (trimmed; e-mails and
 * anonymous ids lower-cased; no NFC, format characters kept, the domain's trailing dot kept), or
 * null when that is today's value anyway. Only for suppressions stored then (`suppressionHashes`).
 */
export function legacyIdentifier(raw: unknown, kind: 'identity' | 'anonymous_id'): Identifier | null {
  if (typeof raw !== 'string' || raw.length > MAX_IDENTIFIER_LENGTH) return null;
  const trimmed = raw.trim();
  if (trimmed === '') return null;
  let old: Identifier;
  if (kind === 'anonymous_id') old = { type: 'anonymous_id', value: trimmed.toLowerCase() };
  else if (trimmed.includes('@')) {
    const at = trimmed.lastIndexOf('@');
    if (at <= 0 || at === trimmed.length - 1) return null;
    old = { type: 'email', value: trimmed.toLowerCase() };
  } else if (PHONE_SHAPE.test(trimmed))
    return null; // only ASCII fits the shape: unchanged today
  else old = { type: 'external_id', value: trimmed };
  const now = kind === 'anonymous_id' ? classifyAnonymousId(raw, NO_JUNK) : classifyIdentity(raw, NO_JUNK);
  return now && now.type === old.type && now.value === old.value ? null : old;
}

const NO_JUNK: ReadonlySet<string> = new Set();

/**
 * Every hash under which the suppression list may hold this identifier. The list keeps only
 * SHA-256 digests, so entries written before identifiers were normalized cannot be rewritten: they
 * hold the value as it was classified then. A check (and a lift) therefore covers the normal form,
 * the spellings older versions stored for it (its NFD form, and for an e-mail both with the
 * domain's trailing dot) and, when the raw value is at hand, exactly what an older version made of
 * that raw value (`legacyIdentifier`). docs/profiles.md, "Identifiers stored before normalization".
 */
export function suppressionHashes(workspaceId: string, id: Identifier, legacy?: Identifier | null): string[] {
  const values = new Set([id.value]);
  if (id.type !== 'phone') values.add(id.value.normalize('NFD'));
  if (id.type === 'email') for (const v of [...values]) values.add(`${v}.`);
  const hashes = [...values].map((value) => suppressionHash(workspaceId, { type: id.type, value }));
  if (legacy) hashes.push(suppressionHash(workspaceId, legacy));
  return [...new Set(hashes)];
}
