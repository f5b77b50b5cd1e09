// Which addresses web_fetch may connect to. The bot runs next to internal services and cloud
// metadata endpoints, so a URL from the model (or a page's redirect) must not reach them: every
// hop is resolved here, each address classified, and the connection pinned to a vetted address.
import { lookup } from 'node:dns/promises';
import { isIP } from 'node:net';
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
  if (isIP(bare) === 4) return ipv4Reason(parseIpv4(bare));
  if (isIP(bare) === 6) return ipv6Reason(parseIpv6(bare));
  return 'not an IP address';
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

function ipv4Reason(octets: readonly [number, number, number, number]): string | undefined {
  const [a, b] = octets;
  if (a === 0) return 'unspecified';
  if (a === 127) return 'loopback';
  if (a === 10 || (a === 172 && b >= 16 && b <= 31) || (a === 192 && b === 168)) return 'private';
  if (a === 169 && b === 254) return 'link-local';
  if (a === 100 && b >= 64 && b <= 127) return 'shared (CGNAT)';
  if (a === 198 && (b === 18 || b === 19)) return 'benchmarking';
  if (a === 192 && b === 0 && octets[2] === 0) return 'IETF protocol';
  if (a >= 224 && a <= 239) return 'multicast';
  if (a >= 240) return 'reserved';
  return undefined;
}

function ipv6Reason(words: readonly number[]): string | undefined {
  const word = (index: number): number => words[index] ?? 0;
  const embeddedIpv4 = (): [number, number, number, number] => [word(6) >> 8, word(6) & 0xff, word(7) >> 8, word(7) & 0xff];
  const leadingZeros = (count: number): boolean => words.slice(0, count).every((value) => value === 0);
  if (words.every((value) => value === 0)) return 'unspecified';
  if (leadingZeros(7) && word(7) === 1) return 'loopback';
  // IPv4-mapped (::ffff:a.b.c.d) and the old IPv4-compatible form (::a.b.c.d) reach IPv4 hosts.
  if (leadingZeros(5) && word(5) === 0xffff) return ipv4Reason(embeddedIpv4());
  if (leadingZeros(6)) return ipv4Reason(embeddedIpv4());
  // NAT64 (64:ff9b::/96) translates to the embedded IPv4 address.
  if (word(0) === 0x64 && word(1) === 0xff9b && words.slice(2, 6).every((value) => value === 0)) return ipv4Reason(embeddedIpv4());
  // 6to4 (2002::/16) tunnels to the IPv4 address in bits 16–47.
  if (word(0) === 0x2002) return ipv4Reason([word(1) >> 8, word(1) & 0xff, word(2) >> 8, word(2) & 0xff]);
  if ((word(0) & 0xfe00) === 0xfc00) return 'private';
  if ((word(0) & 0xffc0) === 0xfe80) return 'link-local';
  if ((word(0) & 0xffc0) === 0xfec0) return 'site-local';
  if ((word(0) & 0xff00) === 0xff00) return 'multicast';
  return undefined;
}

function parseIpv4(text: string): [number, number, number, number] {
  const [a = 0, b = 0, c = 0, d = 0] = text.split('.').map(Number);
  return [a, b, c, d];
}

/** Expands an IPv6 address (validated by net.isIP) into its eight 16-bit words. */
function parseIpv6(text: string): number[] {
  let source = text.toLowerCase();
  const dotted = /(\d+\.\d+\.\d+\.\d+)$/.exec(source);
  if (dotted?.[1] !== undefined) {
    const [a, b, c, d] = parseIpv4(dotted[1]);
    source = `${source.slice(0, dotted.index)}${((a << 8) | b).toString(16)}:${((c << 8) | d).toString(16)}`;
  }
  const [head = '', tail] = source.split('::');
  const parse = (part: string): number[] => (part === '' ? [] : part.split(':').map((group) => Number.parseInt(group, 16)));
  const left = parse(head);
  const right = tail === undefined ? [] : parse(tail);
  return [...left, ...new Array<number>(8 - left.length - right.length).fill(0), ...right];
}
