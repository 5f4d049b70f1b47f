/**
 * Origin rules (contract §2), pure. A pattern is a host name (`shop.example.com`) or a wildcard
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
