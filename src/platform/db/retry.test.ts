import { describe, expect, it } from 'vitest';
import { AppError } from '../errors';
import { isConflict } from './errors';
import { retryConflicts } from './retry';

const pgError = (code: string) => Object.assign(new Error(code), { code });

describe('retryConflicts', () => {
  it('runs the transaction again after a deadlock or a serialization failure', async () => {
    const failures = [pgError('40P01'), pgError('40001')];
    let runs = 0;
    const result = await retryConflicts(async () => {
      runs++;
      const err = failures.shift();
      if (err) throw err;
      return 'done';
    });
    expect(result).toBe('done');
    expect(runs).toBe(3);
  });

  it('retries what the caller calls a lost race, and nothing else', async () => {
    class Stale extends Error {}
    let runs = 0;
    await expect(
      retryConflicts(
        async () => {
          runs++;
          throw runs < 3 ? new Stale() : pgError('23503');
        },
        { retryOn: (err) => err instanceof Stale },
      ),
    ).rejects.toMatchObject({ code: '23503' });
    expect(runs).toBe(3);
    expect(isConflict(pgError('23505'))).toBe(false);
    expect(isConflict(new AppError('CONFLICT', 'x'))).toBe(false);
  });

  it('gives up after the bounded tries with a 503 and Retry-After, keeping the cause', async () => {
    let runs = 0;
    const err = await retryConflicts(
      async () => {
        runs++;
        throw pgError('40P01');
      },
      { tries: 3 },
    ).catch((e: unknown) => e);
    expect(runs).toBe(3);
    expect(err).toBeInstanceOf(AppError);
    expect(err).toMatchObject({ code: 'UNAVAILABLE', status: 503, headers: { 'retry-after': '1' } });
    expect((err as Error).cause).toMatchObject({ code: '40P01' });
  });
});
