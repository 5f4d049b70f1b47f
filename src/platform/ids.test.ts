import { describe, expect, it } from 'vitest';
import { isUuid, newSortableId, newUuid, sortableIdTime } from './ids';

describe('sortable ids', () => {
  it('carry the prefix, 10 characters of time and 16 of randomness', () => {
    expect(newSortableId('evt')).toMatch(/^evt_[0-9a-hjkmnp-tv-z]{26}$/);
  });

  it('never repeat, also across refills of the random pool', () => {
    // 4 KiB pool / 16 bytes an id = 256 ids a refill: 10,000 ids cross it many times.
    const ids = Array.from({ length: 10_000 }, () => newSortableId('evt', 0));
    expect(new Set(ids).size).toBe(ids.length);
    expect(new Set(ids.map((id) => id.slice(14))).size).toBe(ids.length);
  });

  it('sort by creation time', () => {
    const times = [0, 1, 31, 32, 1_700_000_000_000, 1_700_000_000_001, 2 ** 45];
    const ids = times.map((t) => newSortableId('key', t));
    expect([...ids].sort()).toEqual(ids);
  });

  it('tell the time they were made, and nothing for ids of another shape', () => {
    for (const t of [0, 31, 1_700_000_000_123, 2 ** 45])
      expect(sortableIdTime(newSortableId('evt', t))).toBe(t);
    expect(sortableIdTime('evt_short')).toBeNull();
    expect(sortableIdTime(`evt_${'u'.repeat(26)}`)).toBeNull();
  });
});

describe('uuids', () => {
  it('are recognised, and junk is not', () => {
    expect(isUuid(newUuid())).toBe(true);
    expect(isUuid('not-a-uuid')).toBe(false);
  });
});
