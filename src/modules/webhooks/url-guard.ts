import { lookup as dnsLookup, type LookupAddress } from 'node:dns';
import { BlockList, isIP } from 'node:net';
import { AppError } from '../../platform/errors';

/**
 * SSRF guard: a webhook may only reach the public internet. Checked when a URL is saved and again
 * at every connection (the `lookup` below), so a name that later resolves to an inside address
 * (DNS rebinding) is refused at send time too.
 */
const BLOCKED = new BlockList();
for (const [net, bits] of [
  ['0.0.0.0', 8], // "this network"
  ['10.0.0.0', 8],
  ['100.64.0.0', 10], // carrier-grade NAT
  ['127.0.0.0', 8],
  ['169.254.0.0', 16], // link-local, cloud metadata (169.254.169.254)
  ['172.16.0.0', 12],
  ['192.0.0.0', 24],
  ['192.168.0.0', 16],
  ['198.18.0.0', 15],
  ['224.0.0.0', 4], // multicast
  ['240.0.0.0', 4], // reserved, broadcast
] as const) {
  BLOCKED.addSubnet(net, bits, 'ipv4');
}
for (const [net, bits] of [
  ['::', 128],
  ['::1', 128],
  ['fc00::', 7], // unique local (AWS metadata fd00:ec2::254 included)
  ['fe80::', 10], // link-local
  ['ff00::', 8], // multicast
  ['64:ff9b::', 96], // NAT64: embeds an IPv4 address we cannot vouch for
  ['2001:db8::', 32], // documentation
] as const) {
  BLOCKED.addSubnet(net, bits, 'ipv6');
}

/** True when the address is loopback, private, link-local, metadata or otherwise not public. */
export function isBlockedAddress(address: string): boolean {
  const family = isIP(address);
  if (family === 4) return BLOCKED.check(address, 'ipv4');
  if (family !== 6) return true;
  // IPv4-mapped (::ffff:a.b.c.d) is judged by its IPv4 address.
  const mapped = /^::ffff:(\d+\.\d+\.\d+\.\d+)$/i.exec(address);
  if (mapped) return BLOCKED.check(mapped[1]!, 'ipv4');
  return BLOCKED.check(address, 'ipv6');
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
  const httpOk = allowPrivate && url.protocol === 'http:';
  if (url.protocol !== 'https:' && !httpOk) throw refuse('url must use https://');
  if (url.username || url.password) throw refuse('url must not carry credentials');
  if (allowPrivate) return;
  const host = url.hostname.replace(/^\[|\]$/g, '');
  let addresses: LookupAddress[];
  try {
    addresses = isIP(host) ? [{ address: host, family: isIP(host) }] : await resolveAll(host);
  } catch {
    throw refuse(`url host ${host} does not resolve`);
  }
  if (addresses.length === 0 || addresses.some((a) => isBlockedAddress(a.address))) {
    throw refuse('url must not point at a loopback, private, link-local or metadata address');
  }
}

function resolveAll(host: string): Promise<LookupAddress[]> {
  return new Promise((resolve, reject) =>
    dnsLookup(host, { all: true }, (err, addresses) => (err ? reject(err) : resolve(addresses))),
  );
}

type LookupCallback = (
  err: NodeJS.ErrnoException | null,
  address: string | LookupAddress[],
  family?: number,
) => void;

/** A `lookup` for http.request that refuses any blocked address the name resolves to at send time. */
export function guardedLookup(hostname: string, options: object, callback: LookupCallback): void {
  dnsLookup(hostname, { ...options, all: true }, (err, addresses) => {
    if (err) return callback(err, '');
    const bad = addresses.find((a) => isBlockedAddress(a.address));
    if (bad)
      return callback(Object.assign(new Error(`refused address ${bad.address}`), { code: 'EBLOCKED' }), '');
    const all = (options as { all?: boolean }).all === true;
    if (all) return callback(null, addresses);
    const first = addresses[0]!;
    callback(null, first.address, first.family);
  });
}
