/**
 * A small seeded PRNG and the samplers the generative processes need. Seeded so synthetic data and the
 * parameter-recovery tests are reproducible run to run.
 */

export type Random = () => number;

/** mulberry32: 32-bit state, period 2^32, passes the usual quick statistical batteries; plenty here. */
export function createRandom(seed: number): Random {
  let state = seed >>> 0;
  return () => {
    state = (state + 0x6d2b79f5) >>> 0;
    let t = state;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

/** Uniform in (0, 1): never 0, so logs of it are finite. */
function sampleOpenUnit(random: Random): number {
  let u = random();
  while (u === 0) u = random();
  return u;
}

export function sampleNormal(random: Random): number {
  return Math.sqrt(-2 * Math.log(sampleOpenUnit(random))) * Math.cos(2 * Math.PI * random());
}

export function sampleExponential(random: Random, rate: number): number {
  return -Math.log(sampleOpenUnit(random)) / rate;
}

/**
 * Gamma(shape, rate) by Marsaglia & Tsang (2000); shape < 1 uses Gamma(shape + 1)·U^(1/shape).
 */
export function sampleGamma(random: Random, shape: number, rate = 1): number {
  if (shape < 1) return sampleGamma(random, shape + 1, rate) * sampleOpenUnit(random) ** (1 / shape);
  const d = shape - 1 / 3;
  const c = 1 / Math.sqrt(9 * d);
  for (;;) {
    let z: number;
    let v: number;
    do {
      z = sampleNormal(random);
      v = 1 + c * z;
    } while (v <= 0);
    v = v * v * v;
    const u = sampleOpenUnit(random);
    if (Math.log(u) < 0.5 * z * z + d - d * v + d * Math.log(v)) return (d * v) / rate;
  }
}

export function sampleBeta(random: Random, a: number, b: number): number {
  const x = sampleGamma(random, a);
  const y = sampleGamma(random, b);
  return x / (x + y);
}
