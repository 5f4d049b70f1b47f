import type { LookupAddress } from 'node:dns';
import net from 'node:net';
import ipaddr from 'ipaddr.js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { send } from './send';
import { checkDestination } from './url-guard';

/**
 * The address guard against every block of the IANA special-purpose address registries, as they
 * stand in 2026 (https://www.iana.org/assignments/iana-ipv4-special-registry and
 * .../iana-ipv6-special-registry), plus multicast and the documentation ranges outside them. Each
 * block's first, last and a middle address is refused at creation (as the URL's host) and at
 * connection (as the host, and as the answer of the DNS lookup the HTTP client makes), and each
 * IPv4 one also in every IPv6 form that embeds an IPv4 address.
 *
 * Blocks the registry marks "globally reachable" (AS112, AMT, the anycast addresses) are refused
 * too: they are network services, never a webhook receiver.
 */
const IPV4_BLOCKS: Array<[cidr: string, name: string]> = [
  ['0.0.0.0/8', '"This network"'],
  ['0.0.0.0/32', '"This host on this network"'],
  ['10.0.0.0/8', 'Private-Use'],
  ['100.64.0.0/10', 'Shared Address Space'],
  ['127.0.0.0/8', 'Loopback'],
  ['169.254.0.0/16', 'Link Local'],
  ['172.16.0.0/12', 'Private-Use'],
  ['192.0.0.0/24', 'IETF Protocol Assignments'],
  ['192.0.0.0/29', 'IPv4 Service Continuity Prefix'],
  ['192.0.0.8/32', 'IPv4 dummy address'],
  ['192.0.0.9/32', 'Port Control Protocol Anycast'],
  ['192.0.0.10/32', 'Traversal Using Relays around NAT Anycast'],
  ['192.0.0.170/32', 'NAT64/DNS64 Discovery'],
  ['192.0.0.171/32', 'NAT64/DNS64 Discovery'],
  ['192.0.2.0/24', 'Documentation (TEST-NET-1)'],
  ['192.31.196.0/24', 'AS112-v4'],
  ['192.52.193.0/24', 'AMT'],
  ['192.88.99.0/24', 'Deprecated (6to4 Relay Anycast)'],
  ['192.88.99.2/32', '6a44-relay anycast address'],
  ['192.168.0.0/16', 'Private-Use'],
  ['192.175.48.0/24', 'Direct Delegation AS112 Service'],
  ['198.18.0.0/15', 'Benchmarking'],
  ['198.51.100.0/24', 'Documentation (TEST-NET-2)'],
  ['203.0.113.0/24', 'Documentation (TEST-NET-3)'],
  ['240.0.0.0/4', 'Reserved'],
  ['255.255.255.255/32', 'Limited Broadcast'],
  // Outside the special-purpose registry: the multicast space, and its documentation block.
  ['224.0.0.0/4', 'Multicast'],
  ['233.252.0.0/24', 'MCAST-TEST-NET (documentation)'],
];

/** `inside` replaces the middle address where that one would embed a public IPv4 address. */
const IPV6_BLOCKS: Array<[cidr: string, name: string, inside?: string]> = [
  ['::1/128', 'Loopback Address'],
  ['::/128', 'Unspecified Address'],
  ['::ffff:0:0/96', 'IPv4-mapped Address', '::ffff:169.254.169.254'],
  ['64:ff9b::/96', 'IPv4-IPv6 Translat.', '64:ff9b::10.0.0.1'],
  ['64:ff9b:1::/48', 'IPv4-IPv6 Translat.'],
  ['100::/64', 'Discard-Only Address Block'],
  ['100:0:0:1::/64', 'Dummy IPv6 Prefix'],
  ['2001::/23', 'IETF Protocol Assignments'],
  ['2001::/32', 'TEREDO'],
  ['2001:1::1/128', 'Port Control Protocol Anycast'],
  ['2001:1::2/128', 'Traversal Using Relays around NAT Anycast'],
  ['2001:1::3/128', 'DNS-SD Service Registration Protocol Anycast'],
  ['2001:2::/48', 'Benchmarking'],
  ['2001:3::/32', 'AMT'],
  ['2001:4:112::/48', 'AS112-v6'],
  ['2001:10::/28', 'Deprecated (previously ORCHID)'],
  ['2001:20::/28', 'ORCHIDv2'],
  ['2001:30::/28', 'Drone Remote ID Protocol Entity Tags (DETs) Prefix'],
  ['2001:db8::/32', 'Documentation'],
  ['2002::/16', '6to4'],
  ['2620:4f:8000::/48', 'Direct Delegation AS112 Service'],
  ['3fff::/20', 'Documentation'],
  ['5f00::/16', 'Segment Routing (SRv6) SIDs'],
  ['fc00::/7', 'Unique-Local'],
  ['fe80::/10', 'Link-Local Unicast'],
  // Outside the special-purpose registry: multicast, the deprecated site-local and IPv4-compatible
  // blocks of the IPv6 address architecture.
  ['ff00::/8', 'Multicast'],
  ['fec0::/10', 'Site-local (deprecated)'],
  ['::/96', 'IPv4-compatible (deprecated)'],
];

const toBig = (a: ipaddr.IPv4 | ipaddr.IPv6) => a.toByteArray().reduce((n, b) => (n << 8n) | BigInt(b), 0n);
function fromBig(n: bigint, bytes: number): string {
  const out: number[] = [];
  for (let i = 0; i < bytes; i++) out.unshift(Number((n >> BigInt(8 * i)) & 0xffn));
  return ipaddr.fromByteArray(out).toString();
}

/** The first, a middle and the last address of a block. */
function representatives(cidr: string, inside?: string): string[] {
  const [base, bits] = ipaddr.parseCIDR(cidr);
  const width = base.kind() === 'ipv4' ? 32 : 128;
  const first = toBig(base);
  const size = 1n << BigInt(width - bits);
  const bytes = width / 8;
  return [
    fromBig(first, bytes),
    inside ?? fromBig(first + size / 2n, bytes),
    fromBig(first + size - 1n, bytes),
  ];
}

const hex = (hi: number, lo: number) => ((hi << 8) | lo).toString(16);

/** Every IPv6 text that embeds the IPv4 address `v4`, by the mechanism that embeds it. */
function ipv6Forms(v4: string): Array<[form: string, address: string]> {
  const [a, b, c, d] = ipaddr.IPv4.parse(v4).octets as [number, number, number, number];
  const x = (n: number) => (n ^ 0xffff).toString(16);
  return [
    ['IPv4-mapped, dotted', `::ffff:${v4}`],
    ['IPv4-mapped, hex', `::ffff:${hex(a, b)}:${hex(c, d)}`],
    ['IPv4-compatible, dotted', `::${v4}`],
    ['IPv4-compatible, hex', `::${hex(a, b)}:${hex(c, d)}`],
    ['IPv4-translated (SIIT)', `::ffff:0:${v4}`],
    ['NAT64 well-known prefix', `64:ff9b::${v4}`],
    // RFC 6052 layout under a /48: two octets, the zero u octet, two octets.
    ['NAT64 local-use prefix', `64:ff9b:1:${hex(a, b)}:${c.toString(16)}:${(d << 8).toString(16)}::`],
    ['6to4', `2002:${hex(a, b)}:${hex(c, d)}::1`],
    // Teredo: the server's IPv4 in the clear, the client's obfuscated (every bit flipped).
    ['Teredo server', `2001:0:${hex(a, b)}:${hex(c, d)}:8000:63bf:3fff:fdd2`],
    ['Teredo client', `2001:0:4136:e378:8000:63bf:${x((a << 8) | b)}:${x((c << 8) | d)}`],
  ];
}

/** A host as a URL writes it. */
const urlHost = (address: string) => (net.isIPv6(address) ? `[${address}]` : address);

/** A DNS lookup that answers `address` for any name, in the shape node:net asks for. */
function answering(address: string) {
  return (
    _host: string,
    options: { all?: boolean },
    cb: (err: Error | null, a: string | LookupAddress[], f?: number) => void,
  ) => {
    const family = net.isIP(address);
    if (options.all) cb(null, [{ address, family }]);
    else cb(null, address, family);
  };
}

let receiver: net.Server;
let port: number;
let connections = 0;
beforeAll(async () => {
  // Listens on loopback: if a loopback representative got through, it would show up here.
  receiver = net.createServer((s) => {
    connections++;
    s.destroy();
  });
  await new Promise<void>((r) => receiver.listen(0, '127.0.0.1', r));
  port = (receiver.address() as net.AddressInfo).port;
});
afterAll(async () => {
  await new Promise((r) => receiver.close(r));
});

const sendOpts = (lookup?: ReturnType<typeof answering>) => ({
  timeoutMs: 2_000,
  allowPrivate: false,
  signal: new AbortController().signal,
  ...(lookup ? { lookup } : {}),
});

/** Refused at creation as the URL's host, at connection as the host and as the DNS answer. */
async function expectRefusedEverywhere(address: string, label: string): Promise<void> {
  const url = `https://${urlHost(address)}:${port}/hook`;
  await expect(checkDestination(url, false), `${label}: creation`).rejects.toMatchObject({
    code: 'VALIDATION_ERROR',
  });
  const literal = await send(url, '{}', {}, sendOpts());
  expect(literal.refused, `${label}: connection to the literal (${literal.error})`).toBe(true);
  const named = await send(`https://hook.example:${port}/hook`, '{}', {}, sendOpts(answering(address)));
  expect(named.refused, `${label}: connection after the DNS answer (${named.error})`).toBe(true);
}

describe('the IPv4 Special-Purpose Address Registry, multicast and documentation blocks', () => {
  it.each(IPV4_BLOCKS)('refuses %s (%s), and each IPv6 form embedding it', async (cidr, name) => {
    const before = connections;
    for (const v4 of representatives(cidr)) {
      await expectRefusedEverywhere(v4, `${cidr} ${name}: ${v4}`);
      for (const [form, v6] of ipv6Forms(v4)) {
        await expectRefusedEverywhere(v6, `${cidr} ${name}: ${v4} as ${form} ${v6}`);
      }
    }
    expect(connections).toBe(before);
  });

  it('lets through the public addresses on either side of every block', async () => {
    const inAnyBlock = (a: string) =>
      IPV4_BLOCKS.some(([cidr]) => ipaddr.IPv4.parse(a).match(ipaddr.IPv4.parseCIDR(cidr)));
    const neighbours = IPV4_BLOCKS.flatMap(([cidr]) => {
      const [base, bits] = ipaddr.IPv4.parseCIDR(cidr);
      const first = toBig(base);
      return [first - 1n, first + (1n << BigInt(32 - bits))]
        .filter((n) => n >= 0n && n < 1n << 32n)
        .map((n) => fromBig(n, 4));
    }).filter((a) => !inAnyBlock(a));
    expect(neighbours).toContain('172.32.0.0');
    for (const a of neighbours) {
      await expect(checkDestination(`https://${a}/hook`, false), a).resolves.toBeUndefined();
    }
  });
});

describe('the IPv6 Special-Purpose Address Registry, multicast and the deprecated blocks', () => {
  it.each(IPV6_BLOCKS)('refuses %s (%s)', async (cidr, name, inside) => {
    for (const a of representatives(cidr, inside)) await expectRefusedEverywhere(a, `${cidr} ${name}: ${a}`);
  });

  it('lets through global unicast (2000::/3) on either side of the blocks inside it, and nothing outside it', async () => {
    const inAnyBlock = (a: ipaddr.IPv6) => IPV6_BLOCKS.some(([cidr]) => a.match(ipaddr.IPv6.parseCIDR(cidr)));
    const globalUnicast = ipaddr.IPv6.parseCIDR('2000::/3');
    const neighbours = IPV6_BLOCKS.flatMap(([cidr]) => {
      const [base, bits] = ipaddr.IPv6.parseCIDR(cidr);
      const first = toBig(base);
      return [first - 1n, first + (1n << BigInt(128 - bits))]
        .filter((n) => n >= 0n && n < 1n << 128n)
        .map((n) => ipaddr.IPv6.parse(fromBig(n, 16)));
    }).filter((a) => !inAnyBlock(a));
    const outside = neighbours.filter((a) => !a.match(globalUnicast)).map(String);
    const inside = neighbours.filter((a) => a.match(globalUnicast)).map(String);
    expect(inside).toContain('2001:200::');
    expect(outside).toContain('5eff:ffff:ffff:ffff:ffff:ffff:ffff:ffff');
    for (const a of inside) {
      await expect(checkDestination(`https://[${a}]/hook`, false), a).resolves.toBeUndefined();
    }
    for (const a of outside) await expectRefusedEverywhere(a, `${a} (outside 2000::/3)`);
  });
});

describe('IPv6 forms that embed a public IPv4 address', () => {
  // The IPv4-mapped form is the IPv4 host itself, and a DNS64 resolver (an IPv6-only network's)
  // answers 64:ff9b::/96 for every IPv4-only receiver: both are judged by the IPv4 inside. The
  // tunnel and deprecated forms reach a relay or nothing, never a receiver: refused whatever they hold.
  const judged = (form: string) => form.startsWith('IPv4-mapped') || form === 'NAT64 well-known prefix';
  it.each(ipv6Forms('93.184.215.14').map(([form, a]) => [form, a, judged(form) ? 'let through' : 'refused']))(
    '%s (%s) is %s',
    async (_form, address, verdict) => {
      const created = checkDestination(`https://[${address}]/hook`, false);
      if (verdict === 'let through') await expect(created).resolves.toBeUndefined();
      else await expect(created).rejects.toMatchObject({ code: 'VALIDATION_ERROR' });
    },
  );
});
