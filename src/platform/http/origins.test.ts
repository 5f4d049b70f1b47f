import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { createHostPatternIndex, hostMatches, originAllowed, requestHost } from './origins';

const label = fc.stringMatching(/^[a-z0-9]([a-z0-9-]{0,10}[a-z0-9])?$/);
const host = fc.array(label, { minLength: 1, maxLength: 4 }).map((ls) => ls.join('.'));

describe('allowed_domains matching', () => {
  it('matches a host name exactly, ignoring case', () => {
    fc.assert(fc.property(host, (h) => hostMatches(h.toUpperCase(), h) && hostMatches(h, h.toUpperCase())));
  });

  it('lets a wildcard match every subdomain depth but never the bare domain', () => {
    fc.assert(
      fc.property(host, fc.array(label, { minLength: 1, maxLength: 3 }), (base, subs) => {
        expect(hostMatches(`${subs.join('.')}.${base}`, `*.${base}`)).toBe(true);
        expect(hostMatches(base, `*.${base}`)).toBe(false);
      }),
    );
  });

  it('never matches a host that merely ends with the same characters', () => {
    expect(hostMatches('evilexample.com', '*.example.com')).toBe(false);
    expect(hostMatches('evilexample.com', 'example.com')).toBe(false);
    expect(hostMatches('example.com.evil.io', 'example.com')).toBe(false);
  });

  it('reads the host from Origin first, then Referer, ignoring scheme and port', () => {
    expect(requestHost('https://Shop.Example.com:8443', 'https://other.com/x')).toBe('shop.example.com');
    expect(requestHost(undefined, 'http://a.example.com/path?q=1')).toBe('a.example.com');
    expect(requestHost('null', 'https://b.example.com/')).toBe('b.example.com');
    expect(requestHost('not a url', undefined)).toBeNull();
    expect(requestHost(undefined, undefined)).toBeNull();
  });

  it('allows any origin for a key without a domain list, and none without an origin for a key with one', () => {
    expect(originAllowed([], null)).toBe(true);
    expect(originAllowed(['a.com'], null)).toBe(false);
    expect(originAllowed(['a.com', '*.b.com'], 'x.b.com')).toBe(true);
  });
});

describe('the index of many keys’ patterns', () => {
  // Few labels, so that generated hosts and patterns often meet.
  const near = fc.constantFrom('a', 'b', 'shop', 'example', 'com', 'A', '');
  const nearHost = fc.array(near, { minLength: 1, maxLength: 5 }).map((ls) => ls.join('.'));
  const pattern = fc.tuple(fc.boolean(), nearHost).map(([wild, h]) => (wild ? `*.${h}` : h));
  const owners = fc.array(fc.array(pattern, { maxLength: 4 }), { maxLength: 6 });

  it('answers exactly what hostMatches answers against every pattern of every owner', () => {
    fc.assert(
      fc.property(owners, fc.array(nearHost, { minLength: 1, maxLength: 10 }), (lists, hosts) => {
        const index = createHostPatternIndex();
        for (const [i, l] of lists.entries()) index.set(`k${i}`, l);
        for (const h of [...hosts, ...hosts.map((x) => `${x}.`)]) {
          expect(index.matches(h)).toBe(lists.some((l) => l.some((p) => hostMatches(h, p))));
        }
      }),
    );
  });

  it('forgets exactly the patterns no remaining owner holds', () => {
    fc.assert(
      fc.property(owners, fc.array(fc.nat(), { maxLength: 6 }), nearHost, (lists, drops, host) => {
        const index = createHostPatternIndex();
        for (const [i, l] of lists.entries()) index.set(`k${i}`, l);
        const gone = new Set(drops.map((d) => d % Math.max(1, lists.length)));
        for (const i of gone) index.set(`k${i}`, []);
        const kept = lists.filter((_, i) => !gone.has(i));
        expect(index.matches(host)).toBe(kept.some((l) => l.some((p) => hostMatches(host, p))));
        expect(index.owners).toBe(kept.filter((l) => l.length > 0).length);
      }),
    );
  });

  it('costs one lookup per label of the host, whatever it holds', () => {
    const work = { probes: 0 };
    const index = createHostPatternIndex(work);
    for (let k = 0; k < 1000; k++) index.set(`k${k}`, [`*.k${k}.example`, `k${k}.example`]);
    expect(index.matches('a.b.c.d.evil.com')).toBe(false);
    expect(work.probes).toBe(6);
  });
});
