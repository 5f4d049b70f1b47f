/**
 * The generative processes of BG/NBD and MBG/NBD (FHL 2005, §2; Batislam et al. 2007), for synthetic
 * benchmarks and parameter-recovery tests: draw each customer's λ ~ Gamma(r, α) and p ~ Beta(a, b),
 * then walk their purchases up to their age T.
 */
import type { FrequencyRecency } from './purchase-data';
import type { PurchaseModelName, PurchaseParams } from './purchase-model';
import { createRandom, sampleBeta, sampleExponential, sampleGamma } from './random';

export interface SimulatedCustomer extends FrequencyRecency {
  /** Repeat purchase times in weeks after the first purchase (which is at 0). */
  purchaseTimes: number[];
  lambda: number;
  p: number;
  /** Whether the customer is still active at T (known only in simulation). */
  alive: boolean;
}

/**
 * One simulated customer per entry of `ages` (their T, in weeks). BG/NBD: after each repeat purchase
 * the customer drops out with probability p. MBG/NBD: also right after the first purchase.
 */
export function simulatePurchases(
  model: PurchaseModelName,
  { r, alpha, a, b }: PurchaseParams,
  ages: readonly number[],
  seed: number,
): SimulatedCustomer[] {
  const random = createRandom(seed);
  return ages.map((T) => {
    const lambda = sampleGamma(random, r, alpha);
    const p = sampleBeta(random, a, b);
    const purchaseTimes: number[] = [];
    let alive = model === 'bg_nbd' || random() >= p;
    let t = 0;
    while (alive) {
      t += sampleExponential(random, lambda);
      if (t > T) break;
      purchaseTimes.push(t);
      alive = random() >= p;
    }
    const x = purchaseTimes.length;
    return { x, tx: x > 0 ? purchaseTimes[x - 1]! : 0, T, purchaseTimes, lambda, p, alive };
  });
}
