/**
 * The cost of a trait merge against the size of the write (traits.ts). The unit test
 * (traits.test.ts) counts the merger's field-time operations and finds them exactly linear; this
 * times the whole pure merge (copies included) on a profile of exactly the keys written, each
 * written again: 5,000 keys, then 40,000. Linear is ≈ 8×; the quadratic merge this replaced
 * measured ≈ 64× and more. Figure: the ratio, best of 5 timings each after a warm-up, against a
 * ceiling of 24×.
 *
 *   npm run bench -- traits
 */
import { emptyTraits, mergeTraits, type TraitUpdate } from '../src/modules/profiles/traits';
import { note, report } from './lib';

const CEILING = 24;
const TIMINGS = 5;

const update = (keys: number, v: number): TraitUpdate => ({
  attributes: Object.fromEntries(
    Array.from({ length: keys / 100 }, (_, g) => [
      `g${g}`,
      Object.fromEntries(Array.from({ length: 100 }, (_, k) => [`k${k}`, v])),
    ]),
  ),
});

/** The best of TIMINGS merges of a `keys`-key write into a profile of those keys, in ms. */
function cost(keys: number): number {
  const s = mergeTraits(mergeTraits(emptyTraits(), update(keys, 1), 1).state, update(keys, 2), 2).state;
  const u = update(keys, 3);
  let best = Number.POSITIVE_INFINITY;
  for (let i = 0; i < TIMINGS; i++) {
    const t0 = performance.now();
    mergeTraits(s, u, 3);
    best = Math.min(best, performance.now() - t0);
  }
  return best;
}

export default async function run(): Promise<void> {
  cost(5_000); // warm-up
  const small = cost(5_000);
  const big = cost(40_000);
  const ratio = big / small;
  report({
    name: 'traits: merge time of a 40,000-key write over a 5,000-key one (8× the keys)',
    value: ratio,
    unit: '×',
    ceiling: { value: CEILING, unit: '×' },
    target: `≤ ${CEILING}× (linear ≈ 8×)`,
    pass: ratio <= CEILING,
  });
  note(`5,000 keys: ${small.toFixed(1)} ms; 40,000 keys: ${big.toFixed(1)} ms (best of ${TIMINGS})`);
}
