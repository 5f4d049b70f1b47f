import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { hostMatches, originAllowed, requestHost } from './origins';

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
