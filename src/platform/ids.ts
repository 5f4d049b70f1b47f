import { randomFillSync, randomUUID } from 'node:crypto';

const CROCKFORD = '0123456789abcdefghjkmnpqrstvwxyz';

/**
 * A time-ordered id: 10 characters of millisecond time, then 16 of randomness (a lower-case ULID).
 * Sorting by id sorts by creation time, which keeps inserts append-only in B-tree indexes.
 */
export function newSortableId(prefix: string, now: number = Date.now()): string {
  let time = '';
  let t = now;
  for (let i = 0; i < 10; i++) {
    time = CROCKFORD[t % 32] + time;
    t = Math.floor(t / 32);
  }
  const at = takeRandom(16);
  let tail = '';
  for (let i = 0; i < 16; i++) tail += CROCKFORD[pool[at + i]! & 31];
  return `${prefix}_${time}${tail}`;
}

/**
 * Random bytes are drawn 4 KiB at a time (as randomUUID does internally): one randomBytes(16) per id
 * was ≈ 4% of the ingest path's CPU in a profile, most of it per-call overhead.
 */
const pool = Buffer.alloc(4096);
let poolOffset = pool.length;

function takeRandom(n: number): number {
  if (poolOffset + n > pool.length) {
    randomFillSync(pool);
    poolOffset = 0;
  }
  const at = poolOffset;
  poolOffset += n;
  return at;
}

export const newUuid = (): string => randomUUID();

const UUID_RE = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;
export const isUuid = (s: string): boolean => UUID_RE.test(s);

/**
 * The creation time (ms) of an id made by newSortableId (`prefix_` + 10 time characters + 16
 * random), or null when `id` does not have that shape.
 */
export function sortableIdTime(id: string): number | null {
  const m = /^[a-z]+_([0-9a-hjkmnp-tv-z]{10})[0-9a-hjkmnp-tv-z]{16}$/.exec(id);
  if (!m) return null;
  let t = 0;
  for (const c of m[1]!) t = t * 32 + CROCKFORD.indexOf(c);
  return t;
}
