import { describe, expect, it } from 'vitest';
import { accountLabel } from './format';

describe("an account's label in lists", () => {
  it('is its name trait when it has one', () => {
    expect(accountLabel({ name: 'Acme Inc', plan: 'pro' })).toBe('Acme Inc');
  });

  it('names its first three trait keys when it has no name', () => {
    expect(accountLabel({ plan: 'pro', seats: 4 })).toBe('plan, seats');
    expect(accountLabel({ a: 1, b: 2, c: 3, d: 4 })).toBe('a, b, c…');
  });

  it('falls back to the keys when the name is blank or not text, and is a dash without traits', () => {
    expect(accountLabel({})).toBe('—');
    expect(accountLabel({ name: '  ' })).toBe('name');
    expect(accountLabel({ name: 42 })).toBe('name');
  });
});
