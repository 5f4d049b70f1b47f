import { isUtf8 } from 'node:buffer';
import { setImmediate as nextTurn } from 'node:timers/promises';
import sjson from 'secure-json-parse';
import { createYielder, yielderFor } from '../cooperate';
import { AppError } from '../errors';
import { createItemChecker, findUnstorable, firstInvalidUtf8, unstorableError } from './text-rule';
import type { App } from './types';

/** `charset` parameter of a Content-Type, lower-cased; null when there is none. */
const charsetOf = (contentType: string | undefined): string | null => {
  const m = /;\s*charset\s*=\s*"?([^";\s]*)/i.exec(contentType ?? '');
  return m ? m[1]!.toLowerCase() : null;
};

/**
 * The only body parser: this API takes JSON and nothing else, so any other content type is 415
 * (Fastify would accept text/plain). Our own parser so that a `__proto__` or
 * `constructor.prototype` key, at any depth, is refused with a message saying so.
 *
 * It is also the one place where every body meets the text rule (text-rule.ts): the body must be
 * UTF-8 (a `charset` other than UTF-8 is 415, invalid bytes are 400), a `Content-Encoding` is 415
 * (no route takes compressed bodies; a gzip body must not be read as if it were plain), and the
 * parsed value may hold no NUL, unpaired surrogate, non-finite number or nesting deeper than 64.
 * A big array (a batch) is parsed and checked in slices that let other requests in between
 * (parseArrayInSlices); everything else in one go (parseJsonBody). Both give the same answer.
 */
export function registerJsonBodyParser(app: App): void {
  app.removeAllContentTypeParsers();
  app.addContentTypeParser('application/json', { parseAs: 'buffer' }, (req, body, done) => {
    const buf = body as Buffer;
    if (buf.length === 0) {
      // Some clients send `Content-Type: application/json` on every request, bodies or not; an empty
      // body is only an error where the route expects one.
      if (!req.routeOptions.schema?.body) return done(null, undefined);
      return done(new AppError('INVALID_JSON', 'request body is empty'), undefined);
    }
    const encoding = req.headers['content-encoding']?.trim().toLowerCase();
    if (encoding && encoding !== 'identity') {
      return done(
        new AppError(
          'UNSUPPORTED_MEDIA_TYPE',
          `Content-Encoding ${encoding.slice(0, 50)} is not supported: send the body uncompressed`,
        ),
        undefined,
      );
    }
    const charset = charsetOf(req.headers['content-type']);
    if (charset !== null && charset !== 'utf-8' && charset !== 'utf8') {
      return done(
        new AppError('UNSUPPORTED_MEDIA_TYPE', 'request body must be UTF-8 (charset=utf-8, or no charset)'),
        undefined,
      );
    }
    if (!isUtf8(buf)) {
      return done(
        new AppError(
          'INVALID_JSON',
          `request body is not valid UTF-8 (first bad byte at offset ${firstInvalidUtf8(buf)})`,
        ),
        undefined,
      );
    }
    const text = buf.toString('utf8');
    if (buf.length > SLICED_BODY_BYTES && startsArray(text)) {
      // A turn first: receiving and decoding the body was a stretch of its own.
      nextTurn()
        .then(() => parseArrayInSlices(text, yielderFor(req)))
        .then(
          (value) => done(null, value),
          (err: unknown) => done(err as AppError, undefined),
        );
      return;
    }
    let value: unknown;
    try {
      value = parseJsonBody(text);
    } catch (err) {
      return done(err as AppError, undefined);
    }
    done(null, value);
  });
}

/**
 * Bodies larger than this that are a JSON array are parsed in slices (parseArrayInSlices). Smaller
 * ones cost at most ≈ 8 ms in one go (identify events of 1,000 traits, the costliest JSON per byte
 * measured), about one slice, and skip the scanner's ≈ 1.5 ns a character: a batch of 1,000 small
 * events (≈ 200 KB) is parsed as fast as before.
 */
export const SLICED_BODY_BYTES = 256 * 1024;

const PARSE_OPTIONS = { protoAction: 'error', constructorAction: 'error' } as const;

const invalidJson = () => new AppError('INVALID_JSON', 'request body is not valid JSON');
const forbiddenKey = () =>
  new AppError('INVALID_JSON', 'request body contains a forbidden key (__proto__ or constructor)');
/** secure-json-parse refuses `__proto__` and `constructor.prototype` with a SyntaxError saying so. */
const isForbiddenKey = (err: unknown) => err instanceof SyntaxError && /prototype/i.test(err.message);

/** The body as one value, or the AppError that refuses it: the whole text in one go. */
export function parseJsonBody(text: string): unknown {
  let value: unknown;
  try {
    value = sjson.parse(text, null, PARSE_OPTIONS);
  } catch (err) {
    throw isForbiddenKey(err) ? forbiddenKey() : invalidJson();
  }
  // NUL and unpaired surrogates can only come from `\u` escapes (raw control characters are not
  // JSON, and valid UTF-8 holds no surrogates), so bodies without one skip the string checks.
  const problems = findUnstorable(value, text.includes('\\u'));
  if (problems.length > 0) throw unstorableError('body', problems);
  return value;
}

// JSON's own whitespace (JSON.parse accepts no other around a value).
const isJsonSpace = (c: number) => c === 0x20 || c === 0x0a || c === 0x0d || c === 0x09;

/** Whether the first character that is not JSON whitespace is `[` (a BOM is not: see sjson). */
function startsArray(text: string): boolean {
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    if (!isJsonSpace(c)) return c === 0x5b;
  }
  return false;
}

const isBlank = (text: string, from: number, to: number): boolean => {
  for (let i = from; i < to; i++) if (!isJsonSpace(text.charCodeAt(i))) return false;
  return true;
};

/** Characters the item scanner reads between two looks at the clock (≈ 0.2 ms). */
const SCAN_CHARS = 64 * 1024;

/**
 * Where each item of the top-level array starts and ends in `text` (pairs of offsets, the item's
 * text without its separators), or null when the text cannot be a JSON array: an unterminated
 * string, an empty item (`[1,,2]`, `[1,]`), a `}` closing the array, or anything after its `]`.
 * Only strings (with their escapes) and nesting are tracked; the items themselves are left to
 * JSON.parse, which refuses whatever else is wrong. On a valid array the bounds are exact, so a
 * refusal here is a body JSON.parse would refuse too.
 */
export async function findArrayItems(text: string, yieldNow: () => Promise<void>): Promise<number[] | null> {
  const bounds: number[] = [];
  let i = text.indexOf('[') + 1; // the caller checked that `[` comes first
  let start = i;
  let depth = 0;
  let clockAt = i + SCAN_CHARS;
  while (i < text.length) {
    if (i >= clockAt) {
      await yieldNow();
      clockAt = i + SCAN_CHARS;
    }
    const c = text.charCodeAt(i);
    if (c === 0x22) {
      // A string ends at the first `"` preceded by an even number of backslashes.
      let q = i;
      for (;;) {
        q = text.indexOf('"', q + 1);
        if (q === -1) return null;
        let b = q - 1;
        while (text.charCodeAt(b) === 0x5c) b--;
        if ((q - 1 - b) % 2 === 0) break;
      }
      i = q + 1;
      continue;
    }
    if (c === 0x5b || c === 0x7b) depth++;
    else if (c === 0x5d || c === 0x7d) {
      if (depth > 0) depth--;
      else {
        if (c !== 0x5d || !isBlank(text, i + 1, text.length)) return null;
        if (isBlank(text, start, i)) return bounds.length === 0 ? bounds : null; // `[]` or `[1,]`
        bounds.push(start, i);
        return bounds;
      }
    } else if (c === 0x2c && depth === 0) {
      if (isBlank(text, start, i)) return null;
      bounds.push(start, i);
      start = i + 1;
    }
    i++;
  }
  return null;
}

/** Items are parsed in groups of about this many characters (≈ 1 ms of parsing at most). */
const GROUP_CHARS = 32 * 1024;

/**
 * parseJsonBody for a big JSON array, in slices that give the event loop back every ≈ 8 ms: a
 * 4 MiB batch took ≈ 130 ms of parsing and text rule in one go, during which nothing else (not even
 * /health) was answered. The scanner finds the items; consecutive items are parsed together, as
 * the array `[item,…,item]` of about GROUP_CHARS, and each item is checked with its index in front
 * of its paths. The answer is the one parseJsonBody gives for the same text, error or value
 * (json-body.test.ts compares them): a syntax error anywhere wins over a forbidden key, which wins
 * over the text rule, as when the whole text fails JSON.parse first. A single item is still parsed
 * in one go; an item of the batch route is bounded by its 4 MiB body.
 */
export async function parseArrayInSlices(
  text: string,
  yieldNow: () => Promise<void> = createYielder(),
): Promise<unknown[]> {
  const bounds = await findArrayItems(text, yieldNow);
  if (bounds === null) throw invalidJson();
  const items: unknown[] = [];
  const checker = createItemChecker();
  const checkText = text.includes('\\u'); // as parseJsonBody decides it: for the whole text
  let forbidden = false;
  const count = bounds.length / 2;
  for (let first = 0; first < count; ) {
    // Items first..last-1, with the commas between them: `[` and `]` make it an array again (and
    // keep sjson from dropping a BOM that would start an item: inside an array a BOM is an error).
    let last = first + 1;
    while (last < count && bounds[2 * last + 1]! - bounds[2 * first]! < GROUP_CHARS) last++;
    const groupText = `[${text.slice(bounds[2 * first], bounds[2 * last - 1])}]`;
    let group: unknown[] = [];
    try {
      group = sjson.parse(groupText, null, PARSE_OPTIONS) as unknown[];
    } catch (err) {
      if (!isForbiddenKey(err)) throw invalidJson();
      // The rest is still parsed: a syntax error further on is the answer the whole text gets.
      forbidden = true;
    }
    if (!forbidden) {
      for (let k = 0; k < group.length; k++) {
        checker.add(group[k], first + k, checkText);
        items.push(group[k]);
      }
    }
    first = last;
    await yieldNow();
  }
  if (forbidden) throw forbiddenKey();
  if (checker.details.length > 0) throw unstorableError('body', checker.details);
  return items;
}
