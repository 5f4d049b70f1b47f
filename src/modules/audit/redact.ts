/**
 * What an audit entry's diff never keeps (docs/api.md, "Audit log"): secrets, by the name of the
 * field that holds them or by the look of the value. A pure function, so what it hides is tested
 * once for every route.
 */

export const REDACTED = '[redacted]';

/**
 * Field names that hold a credential: API keys (`api_key`, `writeKey`), webhook secrets, session
 * and operator tokens, passwords, and anything else named like them (`client_secret`,
 * `refresh_token`, `Authorization`, …). Matched case-insensitively anywhere in the name.
 */
const SECRET_NAME =
  /secret|token|passw(or)?d|passphrase|api_?key|write_?key|authori[sz]ation|cookie|credential|private_?key|signature/i;

/**
 * Values that are credentials whatever field they are in (a key pasted into a name): the service's
 * own API keys (`cdp_sk_…`, `cdp_pk_…`) and webhook secrets (`whsec_…`).
 */
const SECRET_VALUE = /^(cdp_[sp]k_|whsec_)\S{16,}/;

/** Limits of a diff (docs/api.md, "Audit log"). */
export const DIFF_LIMITS = {
  /** Nesting kept; deeper values are replaced by `[nested]`. */
  depth: 8,
  /** A diff whose JSON is longer is replaced by a summary of its top-level fields. */
  bytes: 16 * 1024,
} as const;

/** A copy of `value` with every secret replaced by `[redacted]`. */
export function redactSecrets(value: unknown, depth = 0): unknown {
  if (typeof value === 'string') return SECRET_VALUE.test(value) ? REDACTED : value;
  if (value === null || typeof value !== 'object') return value;
  if (depth >= DIFF_LIMITS.depth) return '[nested]';
  if (Array.isArray(value)) return value.map((v) => redactSecrets(v, depth + 1));
  const out: Record<string, unknown> = {};
  for (const [k, v] of Object.entries(value as Record<string, unknown>)) {
    out[k] = SECRET_NAME.test(k) && v !== null && v !== undefined ? REDACTED : redactSecrets(v, depth + 1);
  }
  return out;
}

const isPlainObject = (v: unknown): v is Record<string, unknown> =>
  v !== null && typeof v === 'object' && !Array.isArray(v);

/**
 * The diff as it is stored: secrets redacted, within the size limit (a larger one keeps the names
 * of its fields and its size, so the entry still says what the request touched).
 */
export function storedDiff(diff: Record<string, unknown>): Record<string, unknown> {
  const redacted = redactSecrets(diff) as Record<string, unknown>;
  const text = JSON.stringify(redacted);
  if (Buffer.byteLength(text) <= DIFF_LIMITS.bytes) return redacted;
  return { truncated: true, bytes: Buffer.byteLength(text), fields: fieldNames(redacted) };
}

/** `request.body.email`, … down to two levels below the top: what a truncated diff still names. */
function fieldNames(v: Record<string, unknown>, prefix = '', depth = 0): string[] {
  const names: string[] = [];
  for (const [k, inner] of Object.entries(v)) {
    const name = prefix ? `${prefix}.${k}` : k;
    if (isPlainObject(inner) && depth < 2) names.push(...fieldNames(inner, name, depth + 1));
    else names.push(name);
    if (names.length >= 100) break;
  }
  return names.slice(0, 100);
}
