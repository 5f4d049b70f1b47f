/** What the demo shop sells and who its customers are: the fixed tables demo.generator.ts draws from. */

export interface Product {
  product_id: string;
  name: string;
  price: number;
  category: string;
  /** Relative popularity. */
  weight: number;
}

const P = (product_id: string, name: string, price: number, category: string, weight: number): Product => ({
  product_id,
  name,
  price,
  category,
  weight,
});

/** A small coffee-and-kitchen shop. Prices in USD. */
export const CATALOGUE: readonly Product[] = [
  P('SKU-1001', 'House Blend Coffee 500 g', 14.5, 'coffee', 10),
  P('SKU-1002', 'Ethiopia Yirgacheffe 250 g', 16.9, 'coffee', 6),
  P('SKU-1003', 'Colombia Supremo 1 kg', 27.0, 'coffee', 5),
  P('SKU-1004', 'Decaf Espresso 500 g', 15.5, 'coffee', 3),
  P('SKU-1005', 'Cold Brew Concentrate 1 l', 12.0, 'coffee', 4),
  P('SKU-1006', 'Espresso Capsules (50)', 19.99, 'coffee', 7),
  P('SKU-2001', 'Earl Grey Loose Leaf 200 g', 9.5, 'tea', 4),
  P('SKU-2002', 'Sencha Green Tea 100 g', 11.0, 'tea', 3),
  P('SKU-2003', 'Chai Spice Blend 250 g', 8.75, 'tea', 3),
  P('SKU-3001', 'Pour-Over Dripper', 24.0, 'brewing', 3),
  P('SKU-3002', 'French Press 1 l', 34.9, 'brewing', 3),
  P('SKU-3003', 'Gooseneck Kettle', 59.0, 'brewing', 2),
  P('SKU-3004', 'Burr Grinder', 129.0, 'brewing', 1),
  P('SKU-3005', 'Paper Filters (100)', 5.5, 'brewing', 6),
  P('SKU-3006', 'Digital Scale', 39.0, 'brewing', 1.5),
  P('SKU-3007', 'Espresso Machine Compact', 249.0, 'brewing', 0.4),
  P('SKU-4001', 'Ceramic Mug', 12.0, 'kitchen', 5),
  P('SKU-4002', 'Double-Wall Glass (2)', 18.0, 'kitchen', 3),
  P('SKU-4003', 'Travel Tumbler', 22.5, 'kitchen', 4),
  P('SKU-4004', 'Milk Frother', 29.0, 'kitchen', 2),
  P('SKU-5001', 'Almond Biscotti', 6.5, 'snacks', 5),
  P('SKU-5002', 'Dark Chocolate Bar', 4.25, 'snacks', 6),
  P('SKU-5003', 'Maple Syrup 250 ml', 13.0, 'snacks', 2),
  P('SKU-6001', 'Gift Card $25', 25.0, 'gifts', 1),
  P('SKU-6002', 'Coffee Lover Gift Box', 64.0, 'gifts', 1),
];
export const WEIGHTS = CATALOGUE.map((p) => p.weight);

export const FIRST = [
  'Olivia',
  'Liam',
  'Emma',
  'Noah',
  'Ava',
  'Elijah',
  'Sophia',
  'Mateo',
  'Isabella',
  'Lucas',
  'Mia',
  'Amara',
  'Hiro',
  'Yuki',
  'Priya',
  'Arjun',
  'Chloé',
  'Louis',
  'Lena',
  'Jonas',
  'Sofia',
  'Luca',
  'Aisha',
  'Omar',
  'Zara',
  'Ethan',
  'Grace',
  'Kwame',
  'Nia',
  'Mei',
  'Wei',
  'Ingrid',
  'Lars',
  'Ana',
  'Diego',
  'Fatima',
];
export const LAST = [
  'Smith',
  'Garcia',
  'Müller',
  'Rossi',
  'Kim',
  'Nguyen',
  'Okafor',
  'Silva',
  'Dubois',
  'Kowalski',
  'Tanaka',
  'Patel',
  'Johansson',
  'Haddad',
  'Brown',
  'Martin',
  'Novak',
  'Costa',
  'Schmidt',
  'Jensen',
  'Ali',
  'Chen',
  'Moreau',
  "O'Brien",
  'Santos',
  'Fischer',
  'Ivanova',
  'Mensah',
  'Lopez',
  'Yamamoto',
];
export const COMPANIES = [
  'Acme Corp',
  'Globex',
  'Initech',
  'Umbrella Labs',
  'Stark Industries',
  'Wayne Enterprises',
  'Hooli',
  'Vandelay Imports',
  'Soylent',
  'Tyrell',
  'Cyberdyne',
  'Aperture Science',
];
export const DOMAINS = ['example.com', 'example.org', 'example.net'];
export const COUNTRIES = ['US', 'US', 'US', 'CA', 'GB', 'DE', 'FR', 'NL', 'AU', 'JP', 'BR', 'IN'];
export const PLANS = ['free', 'starter', 'pro', 'enterprise'];
export const BILLING = ['monthly', 'yearly'];
/** Company sizes as sales records them: head counts, or a band. */
export const COMPANY_SIZES: ReadonlyArray<number | string> = [10, 50, 100, 500, 'enterprise'];
/** Tags and the chance a customer has each (`newsletter` follows the newsletter trait). */
export const TAGS: ReadonlyArray<[string, number]> = [
  ['vip', 0.1],
  ['beta', 0.05],
  ['wholesale', 0.03],
];
/** Customers in these countries pay in euros. */
export const EURO_COUNTRIES = new Set(['DE', 'FR', 'NL']);
export const PLAN_WEIGHTS = [50, 30, 15, 5];
export const SOURCES = ['organic', 'google_ads', 'newsletter', 'instagram', 'referral'];
export const SOURCE_WEIGHTS = [40, 25, 15, 12, 8];
export const PAGES: ReadonlyArray<[string, string]> = [
  ['Home', '/'],
  ['Shop', '/shop'],
  ['Brewing Guides', '/guides'],
  ['About', '/about'],
  ['Subscriptions', '/subscriptions'],
];
