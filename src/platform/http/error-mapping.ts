import type { FastifyError } from 'fastify';
import { isStatementTimeout, isStorageUnavailable } from '../db/errors';
import { AppError, type ErrorCode, type ErrorDetail } from '../errors';

/**
 * What a client is told about anything thrown while handling its request: a table of the errors
 * the service knows how to name, and a 500 that names nothing for the rest. Pure; errors-handler.ts
 * writes the answer.
 */

interface AjvLikeError {
  instancePath?: string;
  message?: string;
  keyword?: string;
  params?: Record<string, unknown>;
}

const escapePointer = (s: string) => s.replace(/~/g, '~0').replace(/\//g, '~1');

/** The words of one failed check (a `const` names the value it wants). */
function wordsOf(e: AjvLikeError): string {
  const p = e.params ?? {};
  if (e.keyword === 'const' && p.allowedValue !== undefined)
    return `must be ${JSON.stringify(p.allowedValue)}`;
  return e.message ?? 'is invalid';
}

/**
 * A value that fits none of the forms an `anyOf` allows (`retention.events_days`: days or
 * "forever") fails every branch at the same path; the client gets one detail there that names the
 * forms, not one per branch.
 */
function foldAlternatives(errors: readonly AjvLikeError[]): AjvLikeError[] {
  const alternatives = new Set(errors.filter((e) => e.keyword === 'anyOf').map((e) => e.instancePath ?? ''));
  if (alternatives.size === 0) return [...errors];
  const branches = new Map<string, string[]>();
  const out: AjvLikeError[] = [];
  for (const e of errors) {
    const path = e.instancePath ?? '';
    if (!alternatives.has(path) || e.keyword === 'anyOf') {
      out.push(e);
      continue;
    }
    // A type error beside another error of the same path says less than it (`must be string` next to `must be "forever"`).
    if (
      e.keyword === 'type' &&
      errors.some(
        (o) => o !== e && (o.instancePath ?? '') === path && o.keyword !== 'type' && o.keyword !== 'anyOf',
      )
    )
      continue;
    const words = branches.get(path) ?? [];
    if (!words.includes(wordsOf(e))) words.push(wordsOf(e));
    branches.set(path, words);
  }
  return out.map((e) =>
    e.keyword === 'anyOf'
      ? { ...e, message: (branches.get(e.instancePath ?? '') ?? []).join(', or ') || e.message }
      : e,
  );
}

/** Ajv errors → JSON-pointer details, naming the missing or unexpected property itself. */
export function validationDetails(errors: readonly AjvLikeError[]): ErrorDetail[] {
  const seen = new Set<string>();
  const details: ErrorDetail[] = [];
  for (const e of foldAlternatives(errors)) {
    let path = e.instancePath ?? '';
    let message = e.message ?? 'is invalid';
    const p = e.params ?? {};
    if (e.keyword === 'required' && typeof p.missingProperty === 'string') {
      path = `${path}/${escapePointer(p.missingProperty)}`;
      message = 'is required';
    } else if (e.keyword === 'additionalProperties' && typeof p.additionalProperty === 'string') {
      path = `${path}/${escapePointer(p.additionalProperty)}`;
      message = 'is not a known field';
    } else if (e.keyword === 'enum' && Array.isArray(p.allowedValues)) {
      message = `must be one of: ${p.allowedValues.join(', ')}`;
    }
    const key = `${path}|${message}`;
    if (seen.has(key)) continue;
    seen.add(key);
    details.push({ path: path || '/', message });
  }
  return details.slice(0, 100);
}

const PART_NAMES: Record<string, string> = {
  body: 'body',
  querystring: 'query',
  params: 'path',
  headers: 'header',
};

/** A thrown value as the mapping table looks at it: Fastify's errors carry a code and a status. */
type Thrown = { code?: unknown; statusCode?: unknown; message?: unknown } | null | undefined;

/** One row of the mapping: which thrown values it takes, and the AppError (code, message) they become. */
interface Mapping {
  match: (err: unknown) => boolean;
  code: ErrorCode;
  message: string;
  headers?: Readonly<Record<string, string>>;
  /** Keep the thrown value as the AppError's cause: logged, never sent. */
  keepCause?: true;
}

const RETRY_SHORTLY = { 'retry-after': '5' } as const;
const frameworkCode = (code: string) => (err: unknown) => (err as Thrown)?.code === code;
const statusOf = (err: unknown): number => {
  const status = (err as Thrown)?.statusCode;
  return typeof status === 'number' ? status : 500;
};
const status = (n: number) => (err: unknown) => statusOf(err) === n;

/** Tried in order, the first match wins; an AppError and a validation failure are handled before. */
const MAPPINGS: readonly Mapping[] = [
  // Fastify's own errors, by code.
  {
    match: frameworkCode('FST_ERR_CTP_INVALID_MEDIA_TYPE'),
    code: 'UNSUPPORTED_MEDIA_TYPE',
    message: 'request body must be application/json',
  },
  {
    match: frameworkCode('FST_ERR_CTP_INVALID_CONTENT_LENGTH'),
    code: 'VALIDATION_ERROR',
    message: 'Content-Length does not match the body',
  },
  {
    match: frameworkCode('FST_ERR_CTP_BODY_TOO_LARGE'),
    code: 'PAYLOAD_TOO_LARGE',
    message: 'request body is larger than this endpoint accepts',
  },
  {
    match: frameworkCode('FST_ERR_CTP_EMPTY_JSON_BODY'),
    code: 'INVALID_JSON',
    message: 'request body is empty but Content-Type is application/json',
  },
  {
    match: frameworkCode('FST_ERR_CTP_INVALID_JSON_BODY'),
    code: 'INVALID_JSON',
    message: 'request body is not valid JSON',
  },
  {
    match: frameworkCode('FST_ERR_BAD_URL'),
    code: 'VALIDATION_ERROR',
    message: 'the request path is not a valid URL',
  },
  {
    match: frameworkCode('FST_ERR_MAX_PARAM_LENGTH'),
    code: 'VALIDATION_ERROR',
    message: 'a path parameter is too long',
  },
  // secure-json-parse refuses __proto__ / constructor.prototype keys with a SyntaxError.
  {
    match: (err) => err instanceof SyntaxError && /prototype/i.test(err.message),
    code: 'INVALID_JSON',
    message: 'request body contains a forbidden key (__proto__ or constructor)',
  },
  {
    match: (err) => err instanceof SyntaxError,
    code: 'INVALID_JSON',
    message: 'request body is not valid JSON',
  },
  {
    match: isStorageUnavailable,
    code: 'UNAVAILABLE',
    message: 'storage is not answering; retry shortly',
    headers: RETRY_SHORTLY,
    keepCause: true,
  },
  // A statement the server cancelled at the bound of its request class, where the route did not say
  // more (routes with a budget of their own answer BUDGET_EXCEEDED naming it).
  {
    match: isStatementTimeout,
    code: 'BUDGET_EXCEEDED',
    message: 'the request needed more database time than its class allows (docs/api.md, "Budgets")',
  },
  // Anything else that names an HTTP status.
  { match: status(404), code: 'NOT_FOUND', message: 'not found' },
  { match: status(413), code: 'PAYLOAD_TOO_LARGE', message: 'request body is too large' },
  { match: status(415), code: 'UNSUPPORTED_MEDIA_TYPE', message: 'request body must be application/json' },
  {
    match: (err) => statusOf(err) >= 400 && statusOf(err) < 500,
    code: 'VALIDATION_ERROR',
    message: 'bad request',
  },
  { match: status(503), code: 'UNAVAILABLE', message: 'service unavailable', headers: RETRY_SHORTLY },
];

const INTERNAL: Mapping = {
  match: () => true,
  code: 'INTERNAL_ERROR',
  message: 'internal error',
  keepCause: true,
};

/** Turns anything thrown while handling a request into an AppError the client may see. */
export function toAppError(err: unknown): AppError {
  if (err instanceof AppError) return err;
  const fe = err as FastifyError & { validationContext?: string };
  if (fe && Array.isArray(fe.validation)) {
    const part = PART_NAMES[fe.validationContext ?? 'body'] ?? 'request';
    const details = validationDetails(fe.validation as AjvLikeError[]);
    const first = details[0];
    const message = first ? `${part} ${first.path} ${first.message}` : `${part} is invalid`;
    return new AppError('VALIDATION_ERROR', message, { details });
  }
  const m = MAPPINGS.find((row) => row.match(err)) ?? INTERNAL;
  return new AppError(m.code, m.message, {
    ...(m.keepCause ? { cause: err } : {}),
    ...(m.headers ? { headers: { ...m.headers } } : {}),
  });
}
