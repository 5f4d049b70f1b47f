import { lookup as dnsLookup, type LookupAddress } from 'node:dns';
import { isIP, type LookupFunction } from 'node:net';
import ipaddr from 'ipaddr.js';
import { AppError } from '../../platform/errors';

/**
 * SSRF guard: a webhook may only reach public unicast addresses. Checked when a URL is saved and
 * again at every new connection (connections.ts), on the host itself when it is an address and on
 * every address the DNS answers when it is a name, so a name later re-pointed at an inside address
 * (DNS rebinding) is refused at send time too. docs/webhooks.md lists what is refused.
 */

/** What an operator sets to lift the guard, named in every refusal so a developer finds it. */
const SETTING_HINT =
  'a server started with CDP_ALLOW_PRIVATE_WEBHOOKS=1 (for development) allows private destinations and http://';

/** ipaddr.js's range names, in words. */
const RANGE_WORDS: Record<string, string> = {
  unspecified: 'an unspecified ("this network") address',
  broadcast: 'the broadcast address',
  multicast: 'a multicast address',
  linkLocal: 'a link-local address',
  loopback: 'a loopback address',
  carrierGradeNat: 'a shared (carrier-grade NAT) address',
  private: 'a private-use address',
  reserved: 'a reserved or documentation address',
  as112: 'an AS112 address',
  amt: 'an AMT address',
  benchmarking: 'a benchmarking address',
  uniqueLocal: 'a unique-local address',
  deprecatedSiteLocal: 'a site-local address',
  discard: 'a discard-only address',
  rfc6145: 'an IPv4-translated (SIIT) address',
  rfc6052: 'a local-use NAT64 address',
  '6to4': 'a 6to4 address',
  teredo: 'a Teredo address',
  as112v6: 'an AS112 address',
  deprecatedOrchid: 'an ORCHID address',
  orchid2: 'an ORCHIDv2 address',
  droneRemoteIdProtocolEntityTags: 'a drone remote ID address',
  segmentRouting: 'a segment routing (SRv6) address',
};

/** IPv6 global unicast: every IPv6 address outside it is reserved by the IETF or special. */
const GLOBAL_UNICAST = ipaddr.IPv6.parseCIDR('2000::/3');
/** NAT64's well-known prefix: what DNS64 answers, in an IPv6-only network, for an IPv4-only host. */
const NAT64_WELL_KNOWN = ipaddr.IPv6.parseCIDR('64:ff9b::/96');

/**
 * Why `address` is not a public unicast address (in words), or null when it is one.
 *
 * IPv4: ipaddr.js's special ranges (the IANA special-purpose registry, multicast, reserved).
 * IPv6: only global unicast (2000::/3) outside ipaddr.js's special ranges (Teredo, 6to4, the
 * 2001::/23 protocol block, documentation …); the one exception is an address that stands for an
 * IPv4 host, judged by that IPv4 address: IPv4-mapped (::ffff:0:0/96) and NAT64's well-known prefix
 * (64:ff9b::/96). The other forms that embed an IPv4 address (IPv4-compatible, SIIT, 6to4, Teredo,
 * local-use NAT64) are refused whatever they embed: they reach a relay or nothing, never a receiver.
 */
export function refusalOf(address: string): string | null {
  // Only the canonical text node:net accepts: no "127.1", no zone index (a scoped address is
  // link-local or site-local anyway).
  if (isIP(address) === 0 || address.includes('%')) return 'not a public IP address';
  // ipaddr.js reads "::a.b.c.d" as IPv4-mapped; it is IPv4-compatible (::/96), outside 2000::/3.
  const text = address.replace(/^::(?=\d+\.\d+\.\d+\.\d+$)/, '0:0:0:0:0:0:');
  let parsed = ipaddr.parse(text);
  if (parsed.kind() === 'ipv6') {
    const v6 = parsed as ipaddr.IPv6;
    if (v6.isIPv4MappedAddress()) parsed = v6.toIPv4Address();
    else if (v6.match(NAT64_WELL_KNOWN)) {
      const [hi, lo] = v6.parts.slice(6) as [number, number];
      parsed = new ipaddr.IPv4([hi >> 8, hi & 0xff, lo >> 8, lo & 0xff]);
    } else {
      const range = v6.range() as string;
      if (range !== 'unicast') return RANGE_WORDS[range] ?? `a special-purpose (${range}) address`;
      if (!v6.match(GLOBAL_UNICAST)) return 'an IPv6 address outside global unicast (2000::/3)';
      return null;
    }
  }
  const range = parsed.range() as string;
  if (range === 'unicast') return null;
  const words = RANGE_WORDS[range] ?? `a special-purpose (${range}) address`;
  return parsed.toString() === address ? words : `${words} (${parsed.toString()} inside)`;
}

/** True when the address is loopback, private, link-local, metadata or otherwise not public. */
export function isBlockedAddress(address: string): boolean {
  return refusalOf(address) !== null;
}

/** The message of a refused address, as the attempt log and the API say it. */
export function refusedAddressMessage(address: string, why: string): string {
  return `refused address ${address}, ${why}: webhooks may only reach public addresses; ${SETTING_HINT}`;
}

/** Why a scheme is refused (in words), or null. http:// goes only where private destinations are allowed. */
export function refusalOfScheme(protocol: string, allowPrivate: boolean): string | null {
  if (protocol === 'https:' || (allowPrivate && protocol === 'http:')) return null;
  if (protocol === 'http:') return `url must use https://; ${SETTING_HINT}`;
  return 'url must use https://';
}

const refuse = (message: string) =>
  new AppError('VALIDATION_ERROR', message, { details: [{ path: '/url', message }] });

/** Refuses a destination (400) unless it is https:// on a public address; `allowPrivate` relaxes both. */
export async function checkDestination(raw: string, allowPrivate: boolean): Promise<void> {
  let url: URL;
  try {
    url = new URL(raw);
  } catch {
    throw refuse('url is not a valid absolute URL');
  }
  const scheme = refusalOfScheme(url.protocol, allowPrivate);
  if (scheme) throw refuse(scheme);
  if (url.username || url.password) throw refuse('url must not carry credentials');
  if (allowPrivate) return;
  const host = url.hostname.replace(/^\[|\]$/g, '');
  if (isIP(host)) {
    const why = refusalOf(host);
    if (why)
      throw refuse(`url host ${host} is ${why}: webhooks may only reach public addresses; ${SETTING_HINT}`);
    return;
  }
  let addresses: LookupAddress[];
  try {
    addresses = await resolveAll(host);
  } catch {
    throw refuse(`url host ${host} does not resolve`);
  }
  if (addresses.length === 0) throw refuse(`url host ${host} does not resolve`);
  for (const { address } of addresses) {
    // The address itself stays unsaid: it may be an inside one the caller has no business learning.
    const why = refusalOf(address);
    if (why)
      throw refuse(
        `url host ${host} resolves to ${why}: webhooks may only reach public addresses; ${SETTING_HINT}`,
      );
  }
}

function resolveAll(host: string): Promise<LookupAddress[]> {
  return new Promise((resolve, reject) =>
    dnsLookup(host, { all: true }, (err, addresses) => (err ? reject(err) : resolve(addresses))),
  );
}

/** The error of a refused connection; `code` EBLOCKED marks it for the sender (send.ts). */
export function blockedError(message: string): NodeJS.ErrnoException {
  return Object.assign(new Error(message), { code: 'EBLOCKED' });
}

/**
 * Wraps a DNS lookup (node's by default) for the HTTP client: every address the name resolves to
 * must be public, else the connection fails with EBLOCKED before it is made.
 */
export function guardLookup(resolve: LookupFunction = dnsLookup as LookupFunction): LookupFunction {
  return (hostname, options, callback) => {
    resolve(hostname, { ...options, all: true }, (err, answer) => {
      if (err) return callback(err, '', 0);
      const addresses = (
        Array.isArray(answer) ? answer : [{ address: answer, family: isIP(answer) }]
      ) as LookupAddress[];
      for (const { address } of addresses) {
        const why = refusalOf(address);
        if (why) return callback(blockedError(refusedAddressMessage(address, why)), '', 0);
      }
      if (addresses.length === 0)
        return callback(Object.assign(new Error(`${hostname} has no address`), { code: 'ENOTFOUND' }), '', 0);
      if (options.all) return callback(null, addresses);
      const first = addresses[0]!;
      callback(null, first.address, first.family);
    });
  };
}
