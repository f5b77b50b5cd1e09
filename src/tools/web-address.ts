// Which addresses web_fetch may connect to. The bot runs next to internal services and cloud
// metadata endpoints, so a URL from the model (or a page's redirect) must not reach them: every
// hop is resolved here, each address classified, and the connection pinned to a vetted address.
import { lookup } from 'node:dns/promises';
import { isIP } from 'node:net';
import ipaddr from 'ipaddr.js';
import { ToolError } from '../core/errors.js';

/** One resolved address of a host name. */
export interface ResolvedAddress {
  address: string;
  family: 4 | 6;
}

/** Resolves a host name to all its addresses (injectable for tests). */
export type Resolver = (hostname: string) => Promise<ResolvedAddress[]>;

/** Where a vetted URL may connect: the addresses the socket must use instead of a fresh lookup. */
export interface VettedTarget {
  addresses: [ResolvedAddress, ...ResolvedAddress[]];
}

/** Resolves with the system resolver (getaddrinfo, so /etc/hosts counts), all addresses. */
export const systemResolver: Resolver = async (hostname) => {
  const results = await lookup(hostname, { all: true, verbatim: true });
  return results.map((result) => ({ address: result.address, family: result.family === 6 ? 6 : 4 }));
};

/** Why an IP address may not be fetched (e.g. "loopback"), or undefined for a public address. */
export function blockedAddressReason(address: string): string | undefined {
  const bare = address.replace(/^\[|\]$/g, '').replace(/%.*$/, '');
  if (!ipaddr.isValid(bare) || isIP(bare) === 0) return 'not an IP address';
  const parsed = ipaddr.parse(bare);
  return parsed.kind() === 'ipv4' ? ipv4Reason(parsed as ipaddr.IPv4) : ipv6Reason(parsed as ipaddr.IPv6);
}

/**
 * Checks a URL before connecting: http(s) only, and (unless allowPrivate) every address of its
 * host must be public. Returns the addresses to connect to; throws ToolError when refused.
 */
export async function vetUrl(url: URL, options: { allowPrivate: boolean; resolve?: Resolver }): Promise<VettedTarget> {
  if (url.protocol !== 'http:' && url.protocol !== 'https:') {
    throw new ToolError(`only http and https URLs can be fetched, not ${url.protocol.replace(/:$/, '')}:`);
  }
  if (url.username !== '' || url.password !== '') throw new ToolError('URLs with credentials (user:password@) are not fetched');
  const host = url.hostname.replace(/^\[|\]$/g, '');
  const family = isIP(host);
  let addresses: ResolvedAddress[];
  if (family === 4 || family === 6) {
    addresses = [{ address: host, family }];
  } else {
    try {
      addresses = await (options.resolve ?? systemResolver)(host);
    } catch (error) {
      throw new ToolError(`cannot resolve ${host}: ${error instanceof Error ? error.message : String(error)}`, { cause: error });
    }
  }
  const [first] = addresses;
  if (first === undefined) throw new ToolError(`cannot resolve ${host}: no addresses`);
  if (!options.allowPrivate) {
    // All addresses must pass, not just the one used: refusing mixed answers keeps the rule
    // simple and independent of which address the connection would have picked.
    for (const { address } of addresses) {
      const reason = blockedAddressReason(address);
      if (reason !== undefined) {
        const via = address === host ? '' : ` (${host} resolves to ${address})`;
        throw new ToolError(`refused to fetch ${url.origin}: ${reason} address${via}; only public internet addresses are allowed`);
      }
    }
  }
  return { addresses: [first, ...addresses.slice(1)] };
}

/** ipaddr.js range names (RFC 6890 special-purpose registries) as shown to the model. */
const RANGE_REASONS: Record<string, string> = {
  unspecified: 'unspecified', broadcast: 'reserved', multicast: 'multicast', linkLocal: 'link-local', loopback: 'loopback',
  carrierGradeNat: 'shared (CGNAT)', private: 'private', reserved: 'reserved', uniqueLocal: 'private',
  deprecatedSiteLocal: 'site-local', discard: 'discard-only', benchmarking: 'benchmarking', teredo: 'Teredo tunnel',
  rfc6145: 'IPv4-translated', as112: 'special-purpose (AS112)', as112v6: 'special-purpose (AS112)', amt: 'special-purpose (AMT)',
  deprecatedOrchid: 'special-purpose (ORCHID)', orchid2: 'special-purpose (ORCHID)', droneRemoteIdProtocolEntityTags: 'special-purpose (DRIP)',
  segmentRouting: 'special-purpose (segment routing)',
};

/** The address's special-purpose range, or undefined for ordinary public unicast. */
function ipv4Reason(address: ipaddr.IPv4): string | undefined {
  const range = address.range();
  return range === 'unicast' ? undefined : (RANGE_REASONS[range] ?? `special-purpose (${range})`);
}

/**
 * Like ipv4Reason for IPv6. Forms that carry an IPv4 address (mapped, NAT64, 6to4) are judged by
 * that address, since that is where a packet would end up; anything outside global unicast
 * (2000::/3) is refused, whatever ipaddr.js calls it.
 */
function ipv6Reason(address: ipaddr.IPv6): string | undefined {
  const words = address.parts;
  const word = (index: number): number => words[index] ?? 0;
  const embedded = (high: number, low: number): ipaddr.IPv4 => new ipaddr.IPv4([high >> 8, high & 0xff, low >> 8, low & 0xff]);
  const range = address.range();
  if (range === 'ipv4Mapped') return ipv4Reason(embedded(word(6), word(7)));
  // NAT64: the well-known prefix 64:ff9b::/96 embeds a public IPv4 address at the end; the
  // local-use prefix 64:ff9b:1::/48 (RFC 8215) translates into networks of the operator's choice.
  if (range === 'rfc6052') return word(2) === 0 ? ipv4Reason(embedded(word(6), word(7))) : 'NAT64 local-use';
  // 6to4 (2002::/16) tunnels to the IPv4 address in bits 16–47.
  if (range === '6to4') return ipv4Reason(embedded(word(1), word(2)));
  if (range !== 'unicast') return RANGE_REASONS[range] ?? `special-purpose (${range})`;
  if ((word(0) & 0xe000) !== 0x2000) return 'reserved';
  return undefined;
}
