/**
 * Origin rules (docs/api.md "Authentication and scopes"), pure. A pattern is a host name (`shop.example.com`) or a wildcard
 * (`*.example.com`, which matches any depth of subdomain but not `example.com` itself). Comparison
 * ignores case, scheme and port.
 */
export function hostMatches(host: string, pattern: string): boolean {
  const h = host.toLowerCase().replace(/\.$/, '');
  const p = pattern.toLowerCase();
  if (p.startsWith('*.')) return h.endsWith(p.slice(1)) && h.length > p.length - 1;
  return h === p;
}

/** The host of the request's Origin, or lacking it its Referer; null when neither parses. */
export function requestHost(origin: string | undefined, referer: string | undefined): string | null {
  for (const candidate of [origin, referer]) {
    if (!candidate || candidate === 'null') continue;
    try {
      const host = new URL(candidate).hostname;
      if (host) return host.replace(/^\[|\]$/g, '');
    } catch {
      // not a URL: try the next header
    }
  }
  return null;
}

/** An empty list allows every origin (and none at all); otherwise the host must match one pattern. */
export function originAllowed(allowed: readonly string[], host: string | null): boolean {
  if (allowed.length === 0) return true;
  if (host === null) return false;
  return allowed.some((p) => hostMatches(host, p));
}

/** The longest host name DNS allows: a longer one matches no pattern (and bounds the work of a check). */
export const MAX_HOST_LENGTH = 253;

/** Counters of the work an index has done, shared by the indexes that replace each other. */
export interface IndexWork {
  /** Set lookups made by `matches`: at most the labels of the host plus one per check. */
  probes: number;
}

/**
 * Many owners' patterns (each key's `allowed_domains`) in two sets with reference counts: exact
 * hosts, and the suffixes of wildcards (`*.example.com` is held as `example.com`). `matches` looks
 * up the host, then each suffix that follows one of its dots, so a check costs O(labels of the host),
 * whatever the number of owners and patterns; `set` costs O(the owner's patterns).
 */
export interface HostPatternIndex {
  /** Replaces the patterns of one owner; [] forgets the owner. */
  set(owner: string, patterns: readonly string[]): void;
  /** Same answer as `hostMatches` against every pattern of every owner. */
  matches(host: string): boolean;
  /** Owners holding at least one pattern. */
  readonly owners: number;
  /** Distinct patterns held. */
  readonly patterns: number;
}

export function createHostPatternIndex(work: IndexWork = { probes: 0 }): HostPatternIndex {
  const byOwner = new Map<string, readonly string[]>();
  const exact = new Map<string, number>();
  const suffixes = new Map<string, number>();

  const adjust = (pattern: string, delta: 1 | -1) => {
    const wildcard = pattern.startsWith('*.');
    const set = wildcard ? suffixes : exact;
    const key = wildcard ? pattern.slice(2) : pattern;
    const n = (set.get(key) ?? 0) + delta;
    if (n > 0) set.set(key, n);
    else set.delete(key);
  };

  return {
    set(owner, patterns) {
      for (const p of byOwner.get(owner) ?? []) adjust(p, -1);
      const own = [...new Set(patterns.map((p) => p.toLowerCase()))];
      if (own.length === 0) {
        byOwner.delete(owner);
        return;
      }
      byOwner.set(owner, own);
      for (const p of own) adjust(p, 1);
    },

    matches(host) {
      let h = host.toLowerCase();
      if (h.endsWith('.')) h = h.slice(0, -1);
      if (h.length > MAX_HOST_LENGTH) return false;
      work.probes++;
      if (exact.has(h)) return true;
      // A wildcard needs at least one character before its dot: `*.example.com` never matches
      // `example.com` nor `.example.com`, so the search starts after the first character.
      for (let dot = h.indexOf('.', 1); dot !== -1; dot = h.indexOf('.', dot + 1)) {
        work.probes++;
        if (suffixes.has(h.slice(dot + 1))) return true;
      }
      return false;
    },

    get owners() {
      return byOwner.size;
    },
    get patterns() {
      return exact.size + suffixes.size;
    },
  };
}
