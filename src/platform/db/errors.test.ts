import { describe, expect, it } from 'vitest';
import { classifyDbError, isConflict, isContention, isDataError, isStorageUnavailable } from './errors';

describe('isStorageUnavailable', () => {
  const withCode = (code: string) => Object.assign(new Error('x'), { code });

  it('recognises a database that cannot be reached, went away or did not answer in time', () => {
    for (const c of [
      '08006',
      '08001',
      '57P01',
      '57P02',
      '57P03',
      '53300',
      '53100',
      'ECONNREFUSED',
      'ENETUNREACH',
    ])
      expect(isStorageUnavailable(withCode(c)), c).toBe(true);
    for (const m of [
      'Connection terminated unexpectedly',
      'Connection terminated due to connection timeout',
      'timeout exceeded when trying to connect',
      'Query read timeout',
      'Client has encountered a connection error and is not queryable',
      'Client was closed and is not queryable',
      'PGlite is closed',
    ])
      expect(isStorageUnavailable(new Error(m)), m).toBe(true);
  });

  it('leaves failures caused by the statement or its data alone', () => {
    for (const c of ['42P01', '23505', '22P02', '40001', '40P01', '57014'])
      expect(isStorageUnavailable(withCode(c)), c).toBe(false);
    expect(isStorageUnavailable(new Error('a message mentioning Connection terminated later'))).toBe(false);
    expect(isStorageUnavailable('ECONNREFUSED')).toBe(false);
  });
});

describe('the other classes of database errors', () => {
  const withCode = (code: string) => Object.assign(new Error('x'), { code });
  const classes = (c: string) => ({
    unavailable: isStorageUnavailable(withCode(c)),
    conflict: isConflict(withCode(c)),
    contention: isContention(withCode(c)),
    data: isDataError(withCode(c)),
  });

  it('puts each SQLSTATE in the class its caller acts on, and an unavailable one in no other', () => {
    expect(classes('40P01')).toEqual({ unavailable: false, conflict: true, contention: true, data: false });
    expect(classes('40001')).toEqual({ unavailable: false, conflict: true, contention: true, data: false });
    expect(classes('55P03')).toEqual({ unavailable: false, conflict: false, contention: true, data: false });
    expect(classes('23505')).toEqual({ unavailable: false, conflict: false, contention: true, data: true });
    expect(classes('22P02')).toEqual({ unavailable: false, conflict: false, contention: false, data: true });
    expect(classes('08006')).toEqual({ unavailable: true, conflict: false, contention: false, data: false });
    expect(classes('42P01')).toEqual({ unavailable: false, conflict: false, contention: false, data: false });
  });

  it('answers no for anything without a SQLSTATE', () => {
    for (const e of [null, undefined, 'x', new Error('40P01'), { code: 40001 }]) {
      expect([isConflict(e), isContention(e), isDataError(e)]).toEqual([false, false, false]);
    }
  });
});

describe('classifyDbError', () => {
  const withCode = (code: unknown, message = 'x') => Object.assign(new Error(message), { code });

  it.each([
    ['unavailable', ['08006', '08001', '08P01', '53300', '53100', '57P01', '57P02', '57P03']],
    ['unavailable', ['ECONNREFUSED', 'ECONNRESET', 'ETIMEDOUT', 'EPIPE', 'EAI_AGAIN', 'STORAGE_UNAVAILABLE']],
    ['conflict', ['40001', '40P01']],
    ['contention', ['55P03']],
    ['duplicate', ['23505']],
    ['data', ['22P02', '22001', '22003', '23502', '23503', '23514']],
    ['timeout', ['57014']],
    ['other', ['42P01', '42601', '57P04', '0A000', '25P02', 'FST_ERR_BAD_URL', 'constructor']],
  ])('puts each code in its kind: %s', (kind, codes) => {
    for (const c of codes) expect(classifyDbError(withCode(c)), c).toBe(kind);
  });

  it('falls back on the message only to recognise an outage, matched at its start', () => {
    expect(classifyDbError(new Error('Connection terminated unexpectedly'))).toBe('unavailable');
    expect(classifyDbError(new Error('PGlite thread failed: out of memory'))).toBe('unavailable');
    expect(classifyDbError(new Error('the message says Connection terminated'))).toBe('other');
    expect(classifyDbError(new Error('40P01'))).toBe('other');
  });

  it('lets an outage win over the code it carries: unavailable and nothing else', () => {
    expect(classifyDbError(withCode('40001', 'Connection terminated unexpectedly'))).toBe('unavailable');
    expect(classifyDbError(withCode('23505', 'database is closed'))).toBe('unavailable');
  });

  it('answers other for anything that is not an error object with a string code', () => {
    for (const e of [null, undefined, 'ECONNREFUSED', 40001, { code: 40001 }, {}, new Error('boom')])
      expect(classifyDbError(e), String(e)).toBe('other');
  });
});
