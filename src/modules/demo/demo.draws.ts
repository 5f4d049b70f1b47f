import { CATALOGUE, WEIGHTS } from './demo.catalogue';
import type { Rng } from './prng';

/** The generator's small draws (demo.generator.ts): an order's catalogue lines, a referer, a name as ASCII. */

interface Line {
  product_id: string;
  name: string;
  price: number;
  quantity: number;
  category: string;
}

/** Catalogue lines until the order reaches about the target value (at least one, at most eight). */
export function fillOrder(rng: Rng, target: number): Line[] {
  const lines: Line[] = [];
  let sum = 0;
  while (lines.length < 8 && (lines.length === 0 || sum < target * 0.9)) {
    const prod = CATALOGUE[rng.weighted(WEIGHTS)]!;
    const quantity = prod.price < 20 && rng.chance(0.3) ? rng.int(2, 3) : 1;
    const existing = lines.find((l) => l.product_id === prod.product_id);
    if (existing) existing.quantity += quantity;
    else
      lines.push({
        product_id: prod.product_id,
        name: prod.name,
        price: prod.price,
        quantity,
        category: prod.category,
      });
    sum += prod.price * quantity;
  }
  return lines;
}

export function refererOf(rng: Rng): string {
  return rng.pick(['https://www.google.com/', 'https://www.instagram.com/', 'https://news.example.org/']);
}

/** E-mail local parts stay ASCII (Chloé → chloe, O'Brien → obrien). */
export function ascii(s: string): string {
  return s
    .normalize('NFKD')
    .replace(/[^A-Za-z]/g, '')
    .toLowerCase();
}
