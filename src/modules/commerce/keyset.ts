import { AppError } from '../../platform/errors';

/** The decoded keyset, checked: a sealed cursor of the right collection always passes. */
export function keyset(k: unknown[] | null, n: number): number[] | null {
  if (k === null) return null;
  if (k.length !== n || !k.every((v) => typeof v === 'number' && Number.isSafeInteger(v))) {
    throw new AppError('INVALID_CURSOR', 'cursor is not valid for this collection');
  }
  return k as number[];
}
