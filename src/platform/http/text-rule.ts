import { isUtf8 } from 'node:buffer';
import { AppError, type ErrorDetail } from '../errors';
import type { App } from './types';

/**
 * The text rule, one for every input of the API (docs/api.md, "Text"): what PostgreSQL cannot
 * store is refused with a 400 naming where it is, never replaced and never left to fail in the
 * database as a 500. PostgreSQL text and jsonb hold neither NUL (U+0000) nor unpaired UTF-16
 * surrogates, and JSON numbers beyond ±1.8e308 turn into Infinity in JavaScript (then `null` in
 * jsonb). The JSON body parser (json-body.ts) applies it to every body; `registerTextRule` to query
 * strings and path parameters. Refusing, not replacing: a replaced identity or id would silently
 * become another one (two ids differing only in a bad character would collide).
 */

/** Nesting of arrays and objects a JSON body may have anywhere (ingest payloads allow less). */
export const MAX_JSON_DEPTH = 64;
/** At most this many problems are listed in `details`. */
const MAX_DETAILS = 100;

export const TEXT_MESSAGE = 'must not contain NUL characters or unpaired surrogates';
const KEY_MESSAGE = `key ${TEXT_MESSAGE}`;
const NUMBER_MESSAGE = 'must be a finite number (at most ±1.7976931348623157e308)';
const DEPTH_MESSAGE = `nests deeper than ${MAX_JSON_DEPTH} levels`;

type WellFormed = { isWellFormed?: () => boolean };
const LONE_SURROGATE = /\p{Cs}/u;
const hasIsWellFormed = typeof (String.prototype as WellFormed).isWellFormed === 'function';

/** True when PostgreSQL can store the string: no NUL, no unpaired surrogate. */
export function isStorableText(s: string): boolean {
  if (s.includes('\u0000')) return false;
  return hasIsWellFormed ? (s as unknown as WellFormed).isWellFormed!() : !LONE_SURROGATE.test(s);
}

export const escapePointer = (s: string): string => s.replace(/~/g, '~0').replace(/\//g, '~1');

/** A key as it may appear in a detail path: cut short, and without the characters being refused. */
const showKey = (k: string): string =>
  escapePointer(k.length > 50 ? `${k.slice(0, 50)}…` : k)
    .replaceAll('\u0000', '\\u0000')
    .replace(/\p{Cs}/gu, '\uFFFD');

/**
 * Every place in a parsed JSON value that breaks the rule, as JSON pointers in document order (at
 * most 100): strings and keys with NUL or unpaired surrogates (only when `checkText`: the caller
 * knows from the raw text whether any can exist), non-finite numbers, nesting deeper than
 * MAX_JSON_DEPTH. Linear in the size of the value; paths are only built for the problems found.
 */
export function findUnstorable(value: unknown, checkText = true): ErrorDetail[] {
  // Nearly every value is fine: a quick pass that builds no paths, the detailed one only on a find.
  if (!hasUnstorable(value, checkText, 0)) return [];
  const details: ErrorDetail[] = [];
  walkUnstorable(value, 0, [], details, checkText);
  return details;
}

/**
 * findUnstorable for a top-level array whose items arrive one at a time (json-body.ts parses big
 * arrays in slices): `add(item, i, checkText)` checks item `i`; `details` holds what was found so
 * far, the same paths, order and cap as findUnstorable over the whole array.
 */
export function createItemChecker(): {
  add(item: unknown, index: number, checkText: boolean): void;
  readonly details: ErrorDetail[];
} {
  const details: ErrorDetail[] = [];
  return {
    details,
    add(item, index, checkText) {
      if (details.length >= MAX_DETAILS || !hasUnstorable(item, checkText, 1)) return;
      walkUnstorable(item, 1, [String(index)], details, checkText);
    },
  };
}

/** The detailed pass: appends to `details` each problem under `path` (pointer parts so far). */
function walkUnstorable(
  value: unknown,
  startDepth: number,
  path: string[],
  details: ErrorDetail[],
  checkText: boolean,
): void {
  const at = (last?: string) => {
    const parts = last === undefined ? path : [...path, last];
    return parts.length === 0 ? '/' : `/${parts.join('/')}`;
  };
  const walk = (v: unknown, depth: number): void => {
    if (details.length >= MAX_DETAILS) return;
    if (typeof v === 'string') {
      if (checkText && !isStorableText(v)) details.push({ path: at(), message: TEXT_MESSAGE });
      return;
    }
    if (typeof v === 'number') {
      if (!Number.isFinite(v)) details.push({ path: at(), message: NUMBER_MESSAGE });
      return;
    }
    if (typeof v !== 'object' || v === null) return;
    if (depth >= MAX_JSON_DEPTH) {
      details.push({ path: at(), message: DEPTH_MESSAGE });
      return;
    }
    if (Array.isArray(v)) {
      for (let i = 0; i < v.length; i++) {
        path.push(String(i));
        walk(v[i], depth + 1);
        path.pop();
      }
      return;
    }
    for (const k of Object.keys(v)) {
      if (checkText && !isStorableText(k)) {
        details.push({ path: at(showKey(k)), message: KEY_MESSAGE });
        continue;
      }
      path.push(escapePointer(k));
      walk((v as Record<string, unknown>)[k], depth + 1);
      path.pop();
    }
  };
  walk(value, startDepth);
}

/** Whether findUnstorable would find anything (the hot path: every JSON body goes through it). */
function hasUnstorable(v: unknown, checkText: boolean, depth: number): boolean {
  if (typeof v === 'string') return checkText && !isStorableText(v);
  if (typeof v === 'number') return !Number.isFinite(v);
  if (typeof v !== 'object' || v === null) return false;
  if (depth >= MAX_JSON_DEPTH) return true;
  if (Array.isArray(v)) {
    for (let i = 0; i < v.length; i++) if (hasUnstorable(v[i], checkText, depth + 1)) return true;
    return false;
  }
  const o = v as Record<string, unknown>;
  for (const k in o) {
    if (checkText && !isStorableText(k)) return true;
    if (hasUnstorable(o[k], checkText, depth + 1)) return true;
  }
  return false;
}

/** The 400 for a value that breaks the rule; `part` names the request part (body, query, path). */
export function unstorableError(part: string, details: ErrorDetail[]): AppError {
  const first = details[0]!;
  return new AppError('VALIDATION_ERROR', `${part} ${first.path} ${first.message}`, { details });
}

/** Bytes firstInvalidUtf8 hands to the native check at a time. */
const UTF8_CHUNK = 64 * 1024;

/**
 * Offset of the first byte that breaks UTF-8, -1 if none (error path: `isUtf8` said there is one).
 * The native `isUtf8` finds the 64 KiB chunk holding it, the byte loop only reads that chunk: on a
 * 4 MiB body the loop alone took 5–30 ms of the event loop. A chunk never ends inside a character,
 * so each is checked from a character boundary, as the whole-buffer loop would.
 */
export function firstInvalidUtf8(buf: Uint8Array, chunkBytes = UTF8_CHUNK): number {
  let start = 0;
  while (start < buf.length) {
    let end = Math.min(buf.length, start + chunkBytes);
    // Take in the continuation bytes (10xxxxxx, at most 3 in a valid character) so none is cut.
    for (let k = 0; k < 3 && end < buf.length && (buf[end]! & 0xc0) === 0x80; k++) end++;
    const chunk = buf.subarray(start, end);
    if (!isUtf8(chunk)) {
      const at = scanUtf8(chunk);
      if (at !== -1) return start + at;
    }
    start = end;
  }
  return -1;
}

/** The byte loop of firstInvalidUtf8 over one chunk. */
function scanUtf8(buf: Uint8Array): number {
  let i = 0;
  while (i < buf.length) {
    const b = buf[i]!;
    if (b < 0x80) {
      i++;
      continue;
    }
    let n: number;
    let min: number;
    if (b >= 0xc2 && b <= 0xdf) [n, min] = [1, 0x80];
    else if (b >= 0xe0 && b <= 0xef) [n, min] = [2, 0x800];
    else if (b >= 0xf0 && b <= 0xf4) [n, min] = [3, 0x10000];
    else return i;
    let cp = b & (0x3f >> n);
    for (let j = 1; j <= n; j++) {
      const c = buf[i + j];
      if (c === undefined || (c & 0xc0) !== 0x80) return i;
      cp = (cp << 6) | (c & 0x3f);
    }
    if (cp < min || cp > 0x10ffff || (cp >= 0xd800 && cp <= 0xdfff)) return i;
    i += n + 1;
  }
  return -1;
}

/** Whether the raw query string is well-formed percent-encoded UTF-8 (`%FF`, `%ED%A0%80` are not). */
function isValidQueryEncoding(query: string): boolean {
  if (!query.includes('%')) return true;
  for (const part of query.split(/[&=]/)) {
    if (!part.includes('%')) continue;
    try {
      decodeURIComponent(part);
    } catch {
      return false;
    }
  }
  return true;
}

/**
 * The rule for inputs that arrive as text in the URL: query values and keys, and path parameters.
 * Runs in preValidation, so after authentication (an unauthenticated caller learns nothing) and
 * before the schema. A percent-encoding that is not UTF-8 is refused rather than kept as the
 * literal `%FF` it would otherwise become.
 */
export function registerTextRule(app: App): void {
  app.addHook('preValidation', (req, _reply, done) => {
    const url = req.raw.url ?? '';
    const q = url.indexOf('?');
    if (q !== -1) {
      if (!isValidQueryEncoding(url.slice(q + 1))) {
        return done(
          new AppError('VALIDATION_ERROR', 'query string is not valid percent-encoded UTF-8', {
            details: [{ path: '/', message: 'is not valid percent-encoded UTF-8' }],
          }),
        );
      }
      const problems = findUnstorable(req.query);
      if (problems.length > 0) return done(unstorableError('query', problems));
    }
    const params = req.params as Record<string, unknown> | undefined;
    if (params && typeof params === 'object') {
      for (const k in params) {
        const v = params[k];
        if (typeof v === 'string' && !isStorableText(v)) {
          return done(unstorableError('path', [{ path: `/${escapePointer(k)}`, message: TEXT_MESSAGE }]));
        }
      }
    }
    done();
  });
}
