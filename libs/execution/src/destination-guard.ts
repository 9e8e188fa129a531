/**
 * The SSRF guard: decides whether a webhook may connect to an IP address. Everything that is not
 * a public unicast address is refused (loopback, private, link-local, CGNAT, cloud metadata,
 * reserved, documentation, multicast, unique-local v6, and IPv4 hidden inside IPv6), unless the
 * allow-list names the host or a CIDR containing the address. The check is applied to the
 * address actually connected to (see webhook-connector.ts), not to the URL's host name.
 */
import { isIP } from 'node:net';

/** Why an address is refused; 'public' is the only class allowed by default. */
export type AddressClass =
  | 'public'
  | 'unspecified'
  | 'loopback'
  | 'private'
  | 'link-local'
  | 'metadata'
  | 'cgnat'
  | 'reserved'
  | 'documentation'
  | 'benchmarking'
  | 'multicast'
  | 'broadcast'
  | 'unique-local'
  | 'site-local';

/** A refused destination: never retried, dead-lettered with this message. */
export class DestinationRefusedError extends Error {
  readonly code = 'TICKWORK_DESTINATION_REFUSED';
  constructor(
    readonly host: string,
    readonly address: string,
    readonly addressClass: AddressClass | 'unresolved',
  ) {
    super(
      addressClass === 'unresolved'
        ? `destination ${host} refused: the connected address could not be determined`
        : `destination ${host} refused: ${address} is a ${addressClass} address (allow it with TICKWORK_WEBHOOK_ALLOW)`,
    );
    this.name = 'DestinationRefusedError';
  }
}

interface ParsedAddress {
  readonly version: 4 | 6;
  /** 4 or 16 bytes, network order. */
  readonly bytes: Uint8Array;
}

interface Cidr extends ParsedAddress {
  readonly prefix: number;
}

/** Parses an IPv4 or IPv6 literal (brackets and a zone id are tolerated); null if it is not one. */
export function parseAddress(raw: string): ParsedAddress | null {
  let text = raw.trim();
  if (text.startsWith('[') && text.endsWith(']')) text = text.slice(1, -1);
  const zone = text.indexOf('%');
  if (zone >= 0) text = text.slice(0, zone);
  const kind = isIP(text);
  if (kind === 4) return { version: 4, bytes: Uint8Array.from(text.split('.').map(Number)) };
  if (kind === 6) return { version: 6, bytes: parseIpv6(text) };
  return null;
}

function parseIpv6(text: string): Uint8Array {
  // isIP has validated the syntax; expand "::" and a trailing dotted quad.
  let groups: string[];
  const lastColon = text.lastIndexOf(':');
  let tail: number[] = [];
  if (text.includes('.', lastColon)) {
    const quad = text
      .slice(lastColon + 1)
      .split('.')
      .map(Number);
    tail = [((quad[0] ?? 0) << 8) | (quad[1] ?? 0), ((quad[2] ?? 0) << 8) | (quad[3] ?? 0)];
    text = text.slice(0, lastColon + 1) + '0:0';
  }
  const halves = text.split('::');
  const head = halves[0] ? halves[0].split(':') : [];
  const rest = halves.length > 1 && halves[1] ? halves[1].split(':') : [];
  if (halves.length > 1)
    groups = [...head, ...Array<string>(8 - head.length - rest.length).fill('0'), ...rest];
  else groups = head;
  const words = groups.map((g) => parseInt(g, 16));
  if (tail.length === 2) {
    words[6] = tail[0]!;
    words[7] = tail[1]!;
  }
  const bytes = new Uint8Array(16);
  words.forEach((w, i) => {
    bytes[i * 2] = (w >> 8) & 0xff;
    bytes[i * 2 + 1] = w & 0xff;
  });
  return bytes;
}

/** Parses `10.0.0.0/8`, `fd00::/8` or a bare address (a /32 or /128); null if malformed. */
export function parseCidr(raw: string): Cidr | null {
  const [addr, len, ...extra] = raw.trim().split('/');
  if (addr === undefined || extra.length > 0) return null;
  const parsed = parseAddress(addr);
  if (!parsed) return null;
  const max = parsed.version === 4 ? 32 : 128;
  if (len === undefined) return { ...parsed, prefix: max };
  if (!/^\d{1,3}$/.test(len) || Number(len) > max) return null;
  return { ...parsed, prefix: Number(len) };
}

function inCidr(a: ParsedAddress, c: Cidr): boolean {
  if (a.version !== c.version) return false;
  let bits = c.prefix;
  for (let i = 0; bits > 0; i++, bits -= 8) {
    const mask = bits >= 8 ? 0xff : (0xff << (8 - bits)) & 0xff;
    if (((a.bytes[i] ?? 0) & mask) !== ((c.bytes[i] ?? 0) & mask)) return false;
  }
  return true;
}

const table = (rows: [string, AddressClass][]): [Cidr, AddressClass][] =>
  rows.map(([c, k]) => [parseCidr(c)!, k]);

// Most specific first: the first match wins.
const V4_RANGES = table([
  ['169.254.169.254/32', 'metadata'], // AWS, GCP, Azure, OpenStack instance metadata
  ['100.100.100.200/32', 'metadata'], // Alibaba Cloud metadata
  ['255.255.255.255/32', 'broadcast'],
  ['0.0.0.0/8', 'unspecified'],
  ['10.0.0.0/8', 'private'],
  ['100.64.0.0/10', 'cgnat'],
  ['127.0.0.0/8', 'loopback'],
  ['169.254.0.0/16', 'link-local'],
  ['172.16.0.0/12', 'private'],
  ['192.0.0.0/24', 'reserved'],
  ['192.0.2.0/24', 'documentation'],
  ['192.88.99.0/24', 'reserved'],
  ['192.168.0.0/16', 'private'],
  ['198.18.0.0/15', 'benchmarking'],
  ['198.51.100.0/24', 'documentation'],
  ['203.0.113.0/24', 'documentation'],
  ['224.0.0.0/4', 'multicast'],
  ['240.0.0.0/4', 'reserved'],
]);

const V6_RANGES = table([
  ['fd00:ec2::254/128', 'metadata'], // AWS instance metadata over IPv6
  ['::/128', 'unspecified'],
  ['::1/128', 'loopback'],
  ['::/96', 'reserved'], // IPv4-compatible (deprecated)
  ['64:ff9b:1::/48', 'reserved'], // local-use NAT64
  ['100::/64', 'reserved'], // discard-only
  ['2001:db8::/32', 'documentation'],
  ['2001::/23', 'reserved'], // IETF protocol assignments, incl. Teredo
  ['3fff::/20', 'documentation'],
  ['fc00::/7', 'unique-local'],
  ['fe80::/10', 'link-local'],
  ['fec0::/10', 'site-local'],
  ['ff00::/8', 'multicast'],
]);

/** IPv6 forms that carry an IPv4 address the packets really go to: classify that instead. */
function embeddedIpv4(a: ParsedAddress): ParsedAddress | null {
  if (a.version !== 6) return null;
  const b = a.bytes;
  const zeros = (from: number, to: number) => b.slice(from, to).every((x) => x === 0);
  // ::ffff:a.b.c.d (IPv4-mapped) and ::ffff:0:a.b.c.d (IPv4-translated)
  if (zeros(0, 10) && b[10] === 0xff && b[11] === 0xff) return { version: 4, bytes: b.slice(12, 16) };
  if (zeros(0, 8) && b[8] === 0xff && b[9] === 0xff && zeros(10, 12))
    return { version: 4, bytes: b.slice(12, 16) };
  // 64:ff9b::a.b.c.d (NAT64 well-known prefix)
  if (b[0] === 0x00 && b[1] === 0x64 && b[2] === 0xff && b[3] === 0x9b && zeros(4, 12))
    return { version: 4, bytes: b.slice(12, 16) };
  // 2002:AABB:CCDD::/48 (6to4)
  if (b[0] === 0x20 && b[1] === 0x02) return { version: 4, bytes: b.slice(2, 6) };
  return null;
}

/** Classifies an IP address literal; throws on something that is not one. */
export function classifyAddress(raw: string): AddressClass {
  const a = parseAddress(raw);
  if (!a) throw new Error(`${JSON.stringify(raw)} is not an IP address`);
  return classifyParsed(a);
}

function classifyParsed(a: ParsedAddress): AddressClass {
  const v4 = embeddedIpv4(a);
  if (v4) return classifyParsed(v4);
  for (const [cidr, kind] of a.version === 4 ? V4_RANGES : V6_RANGES) if (inCidr(a, cidr)) return kind;
  // Only global unicast (2000::/3) is public in IPv6; anything else is unassigned or special.
  if (a.version === 6 && ((a.bytes[0] ?? 0) & 0xe0) !== 0x20) return 'reserved';
  return 'public';
}

/** One allow-list entry: a host name (optionally `*.suffix`) or a CIDR / address. */
export type AllowEntry =
  | { readonly kind: 'host'; readonly name: string; readonly wildcard: boolean }
  | ({ readonly kind: 'cidr' } & Cidr);

/** Parses TICKWORK_WEBHOOK_ALLOW entries; throws naming the first bad one. */
export function parseAllowList(entries: readonly string[]): AllowEntry[] {
  return entries.map((raw) => {
    const text = raw.trim().toLowerCase();
    const cidr = parseCidr(text);
    if (cidr) return { kind: 'cidr', ...cidr };
    const wildcard = text.startsWith('*.');
    const name = (wildcard ? text.slice(2) : text).replace(/\.$/, '');
    if (!/^[a-z0-9]([a-z0-9-]*[a-z0-9])?(\.[a-z0-9]([a-z0-9-]*[a-z0-9])?)*$/.test(name)) {
      throw new Error(
        `TICKWORK_WEBHOOK_ALLOW has ${JSON.stringify(raw)}: each entry must be a host name, *.domain, an IP address or a CIDR`,
      );
    }
    return { kind: 'host', name, wildcard };
  });
}

/** Applies the classification and the allow-list to (host name, connected address) pairs. */
export class DestinationGuard {
  private readonly hosts: Extract<AllowEntry, { kind: 'host' }>[];
  private readonly cidrs: Cidr[];

  constructor(allow: readonly AllowEntry[] = []) {
    this.hosts = allow.filter((e): e is Extract<AllowEntry, { kind: 'host' }> => e.kind === 'host');
    this.cidrs = allow.filter((e): e is Extract<AllowEntry, { kind: 'cidr' }> => e.kind === 'cidr');
  }

  /** True when the URL host itself is allow-listed (its addresses are then not checked). */
  hostAllowed(host: string): boolean {
    const h = normalizeHost(host);
    return this.hosts.some((e) => (e.wildcard ? h.endsWith(`.${e.name}`) : h === e.name));
  }

  /** Throws DestinationRefusedError unless `address` (what `host` resolved to) may be reached. */
  check(host: string, address: string): void {
    if (this.hostAllowed(host)) return;
    const parsed = parseAddress(address);
    if (!parsed) throw new DestinationRefusedError(host, address, 'unresolved');
    const effective = embeddedIpv4(parsed) ?? parsed;
    if (this.cidrs.some((c) => inCidr(effective, c) || inCidr(parsed, c))) return;
    const kind = classifyParsed(parsed);
    if (kind !== 'public') throw new DestinationRefusedError(host, address, kind);
  }
}

function normalizeHost(host: string): string {
  let h = host.trim().toLowerCase();
  if (h.startsWith('[') && h.endsWith(']')) h = h.slice(1, -1);
  return h.replace(/\.$/, '');
}
