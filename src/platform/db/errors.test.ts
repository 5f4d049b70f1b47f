import { describe, expect, it } from 'vitest';
import { isStorageUnavailable } from './errors';

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
