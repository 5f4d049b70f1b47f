import { describe, expect, it } from 'vitest';
import { isConflict, isContention, isDataError, isStorageUnavailable } from './errors';

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
