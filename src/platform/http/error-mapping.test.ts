import { describe, expect, it } from 'vitest';
import { AppError } from '../errors';
import { toAppError, validationDetails } from './error-mapping';

const fastifyError = (code: string, statusCode = 400) =>
  Object.assign(new Error('raw text'), { code, statusCode });

describe('toAppError', () => {
  it.each([
    [
      fastifyError('FST_ERR_CTP_INVALID_MEDIA_TYPE', 415),
      'UNSUPPORTED_MEDIA_TYPE',
      'request body must be application/json',
    ],
    [
      fastifyError('FST_ERR_CTP_INVALID_CONTENT_LENGTH'),
      'VALIDATION_ERROR',
      'Content-Length does not match the body',
    ],
    [
      fastifyError('FST_ERR_CTP_BODY_TOO_LARGE', 413),
      'PAYLOAD_TOO_LARGE',
      'request body is larger than this endpoint accepts',
    ],
    [
      fastifyError('FST_ERR_CTP_EMPTY_JSON_BODY'),
      'INVALID_JSON',
      'request body is empty but Content-Type is application/json',
    ],
    [fastifyError('FST_ERR_CTP_INVALID_JSON_BODY'), 'INVALID_JSON', 'request body is not valid JSON'],
    [fastifyError('FST_ERR_BAD_URL'), 'VALIDATION_ERROR', 'the request path is not a valid URL'],
    [fastifyError('FST_ERR_MAX_PARAM_LENGTH'), 'VALIDATION_ERROR', 'a path parameter is too long'],
    [
      new SyntaxError('Object contains forbidden prototype property'),
      'INVALID_JSON',
      'request body contains a forbidden key (__proto__ or constructor)',
    ],
    [new SyntaxError('Unexpected token'), 'INVALID_JSON', 'request body is not valid JSON'],
    [
      Object.assign(new Error('canceling statement due to statement timeout'), { code: '57014' }),
      'BUDGET_EXCEEDED',
      'the request needed more database time than its class allows (docs/api.md, "Budgets")',
    ],
    [fastifyError('X', 404), 'NOT_FOUND', 'not found'],
    [fastifyError('X', 413), 'PAYLOAD_TOO_LARGE', 'request body is too large'],
    [fastifyError('X', 415), 'UNSUPPORTED_MEDIA_TYPE', 'request body must be application/json'],
    [fastifyError('X', 429), 'VALIDATION_ERROR', 'bad request'],
    [fastifyError('X', 503), 'UNAVAILABLE', 'service unavailable'],
    [fastifyError('X', 502), 'INTERNAL_ERROR', 'internal error'],
  ])('maps %s to %s with a fixed message', (err, code, message) => {
    const mapped = toAppError(err);
    expect([mapped.code, mapped.message]).toEqual([code, message]);
  });

  it('keeps the thrown value as the cause of a 500 and of a storage outage, and of nothing the client caused', () => {
    const bug = new TypeError('x');
    expect(toAppError(bug).cause).toBe(bug);
    const down = Object.assign(new Error('connection refused'), { code: 'ECONNREFUSED' });
    const unavailable = toAppError(down);
    expect([unavailable.code, unavailable.status, unavailable.cause]).toEqual(['UNAVAILABLE', 503, down]);
    expect(toAppError(fastifyError('FST_ERR_BAD_URL')).cause).toBeUndefined();
  });

  it('asks a client to retry shortly on a 503, with headers of its own each time', () => {
    const down = Object.assign(new Error('x'), { code: '08006' });
    const a = toAppError(down);
    const b = toAppError(fastifyError('X', 503));
    expect([a.headers, b.headers]).toEqual([{ 'retry-after': '5' }, { 'retry-after': '5' }]);
    expect(a.headers).not.toBe(b.headers);
  });

  it('passes an AppError through, and turns validation errors into details', () => {
    const own = new AppError('CONFLICT', 'already there');
    expect(toAppError(own)).toBe(own);
    const invalid = Object.assign(new Error('x'), {
      validation: [{ instancePath: '', keyword: 'required', params: { missingProperty: 'name' } }],
      validationContext: 'querystring',
    });
    const mapped = toAppError(invalid);
    expect([mapped.code, mapped.message, mapped.details]).toEqual([
      'VALIDATION_ERROR',
      'query /name is required',
      [{ path: '/name', message: 'is required' }],
    ]);
  });

  it('answers 500 for values that are not errors at all', () => {
    for (const v of [undefined, null, 'key_0123', 42]) expect(toAppError(v).code).toBe('INTERNAL_ERROR');
  });
});

describe('validationDetails', () => {
  it('folds a value that fits none of the allowed forms into one detail naming them', () => {
    const details = validationDetails([
      { instancePath: '/retention/events_days', keyword: 'minimum', message: 'must be >= 1' },
      { instancePath: '/retention/events_days', keyword: 'type', message: 'must be string' },
      {
        instancePath: '/retention/events_days',
        keyword: 'const',
        message: 'must be equal to constant',
        params: { allowedValue: 'forever' },
      },
      { instancePath: '/retention/events_days', keyword: 'anyOf', message: 'must match a schema in anyOf' },
      { instancePath: '/merge_cap', keyword: 'type', message: 'must be integer' },
    ]);
    expect(details).toEqual([
      { path: '/retention/events_days', message: 'must be >= 1, or must be "forever"' },
      { path: '/merge_cap', message: 'must be integer' },
    ]);
  });
});
