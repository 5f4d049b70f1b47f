/**
 * A small seeded random source (sfc32, seeded through splitmix32) with the distributions the demo
 * dataset needs. Deterministic: the same seed gives the same stream on every platform, which
 * Math.random cannot promise.
 */
export interface Rng {
  /** Uniform in [0, 1). */
  next(): number;
  /** Integer in [min, max]. */
  int(min: number, max: number): number;
  chance(p: number): boolean;
  pick<T>(items: readonly T[]): T;
  /** Picks an index with probability proportional to its weight. */
  weighted(weights: readonly number[]): number;
  exponential(rate: number): number;
  /** Gamma(shape, rate): mean shape / rate (Marsaglia & Tsang 2000). */
  gamma(shape: number, rate: number): number;
  /** A random (version 4) UUID. */
  uuid(): string;
}

function splitmix32(seed: number): () => number {
  let s = seed >>> 0;
  return () => {
    s = (s + 0x9e3779b9) >>> 0;
    let z = s;
    z = Math.imul(z ^ (z >>> 16), 0x85ebca6b) >>> 0;
    z = Math.imul(z ^ (z >>> 13), 0xc2b2ae35) >>> 0;
    return (z ^ (z >>> 16)) >>> 0;
  };
}

/** Mixes several integers into one 32-bit seed (e.g. the dataset seed and a customer index). */
export function mixSeed(...parts: number[]): number {
  let h = 0x811c9dc5;
  for (const p of parts) {
    const sm = splitmix32((p ^ h) >>> 0);
    h = (Math.imul(h ^ sm(), 0x01000193) ^ sm()) >>> 0;
  }
  return h >>> 0;
}

export function createRng(seed: number): Rng {
  const init = splitmix32(seed);
  let a = init();
  let b = init();
  let c = init();
  let d = init();
  const next32 = (): number => {
    const t = (((a + b) >>> 0) + d) >>> 0;
    d = (d + 1) >>> 0;
    a = b ^ (b >>> 9);
    b = (c + (c << 3)) >>> 0;
    c = ((c << 21) | (c >>> 11)) >>> 0;
    c = (c + t) >>> 0;
    return t;
  };
  for (let i = 0; i < 12; i++) next32();
  const next = () => next32() / 4294967296;

  const normal = (): number => {
    // Box–Muller; 1 - u keeps the logarithm finite.
    const u = 1 - next();
    const v = next();
    return Math.sqrt(-2 * Math.log(u)) * Math.cos(2 * Math.PI * v);
  };

  const gamma = (shape: number, rate: number): number => {
    if (shape < 1) {
      // Boost: Gamma(a) = Gamma(a + 1) · U^(1/a).
      return gamma(shape + 1, rate) * (1 - next()) ** (1 / shape);
    }
    const dd = shape - 1 / 3;
    const cc = 1 / Math.sqrt(9 * dd);
    for (;;) {
      let x: number;
      let v: number;
      do {
        x = normal();
        v = 1 + cc * x;
      } while (v <= 0);
      v = v * v * v;
      const u = 1 - next();
      if (Math.log(u) < 0.5 * x * x + dd - dd * v + dd * Math.log(v)) return (dd * v) / rate;
    }
  };

  const rng: Rng = {
    next,
    int: (min, max) => min + Math.floor(next() * (max - min + 1)),
    chance: (p) => next() < p,
    pick: (items) => items[Math.floor(next() * items.length)]!,
    weighted(weights) {
      let total = 0;
      for (const w of weights) total += w;
      let r = next() * total;
      for (let i = 0; i < weights.length; i++) {
        r -= weights[i]!;
        if (r < 0) return i;
      }
      return weights.length - 1;
    },
    exponential: (rate) => -Math.log(1 - next()) / rate,
    gamma,
    uuid() {
      const hex: string[] = [];
      for (let i = 0; i < 4; i++) hex.push(next32().toString(16).padStart(8, '0'));
      const h = hex.join('');
      const variant = ((Number.parseInt(h[16]!, 16) & 0x3) | 0x8).toString(16);
      return `${h.slice(0, 8)}-${h.slice(8, 12)}-4${h.slice(13, 16)}-${variant}${h.slice(17, 20)}-${h.slice(20, 32)}`;
    },
  };
  return rng;
}
