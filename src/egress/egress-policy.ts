import { BlockList, isIP } from 'node:net';
import { lookup as dnsLookup, type LookupAddress } from 'node:dns';
import { z } from 'zod';
import type { AppConfig } from '../config/app-config';

/**
 * Which servers a job may reach through a URL its owner typed: remote environments (`environment.url`)
 * and a self-hosted W&B (`trainer.wandb.base_url`). Such a URL is fetched from inside the server's
 * network, so by default only public addresses are allowed: loopback, private, link-local, multicast and
 * reserved ranges are refused unless the operator lists them (`environment_url_allow`), and the admin may
 * also use loopback (`opentinker env serve` on the same machine). An IPv6 address that carries an IPv4
 * one (mapped, compatible, translated, NAT64, 6to4, Teredo) is judged by the IPv4 address too. The
 * client that makes these requests is `egress-fetch.ts`: it checks every connection and follows no redirect.
 */
export const UrlPolicy = z.object({
  /** Operator entries: host names, IPs or CIDR ranges, each optionally with `:port`. */
  allow: z.array(z.string()),
  /** Public addresses are allowed (setting environment_url_allow_public). */
  allowPublic: z.boolean(),
  /** Loopback addresses are allowed (the job's owner is an admin). */
  allowLoopback: z.boolean(),
});
export type UrlPolicy = z.output<typeof UrlPolicy>;

/** The policy for a job or request of a user, from the operator's settings. */
export function urlPolicyFor(config: AppConfig, admin: boolean): UrlPolicy {
  return { allow: config.values.environment_url_allow, allowPublic: config.values.environment_url_allow_public, allowLoopback: admin };
}

/** What a tenant's URL is for: the spec field that holds it, the kind of server, where credentials go instead. */
export interface RemoteUrlUse {
  field: string;
  server: string;
  credentials: string;
}

export const ENVIRONMENT_URL: RemoteUrlUse = { field: 'environment.url', server: 'an environment server', credentials: 'environment.token' };
export const WANDB_URL: RemoteUrlUse = { field: 'trainer.wandb.base_url', server: 'a W&B server', credentials: 'trainer.wandb.api_key' };

/** Thrown for a URL or address the policy refuses; the message names no port state or remote answer. */
export class UrlNotAllowedError extends Error {
  readonly code = 'URL_NOT_ALLOWED';
}

type Range = [string, number, 'ipv4' | 'ipv6'];

/** Addresses that are not the public internet (IANA's special-purpose registries, "globally reachable: false"). */
const NON_PUBLIC: Range[] = [
  ['0.0.0.0', 8, 'ipv4'],
  ['10.0.0.0', 8, 'ipv4'],
  ['100.64.0.0', 10, 'ipv4'],
  ['169.254.0.0', 16, 'ipv4'],
  ['172.16.0.0', 12, 'ipv4'],
  ['192.0.0.0', 24, 'ipv4'],
  ['192.0.2.0', 24, 'ipv4'],
  ['192.88.99.0', 24, 'ipv4'],
  ['192.168.0.0', 16, 'ipv4'],
  ['198.18.0.0', 15, 'ipv4'],
  ['198.51.100.0', 24, 'ipv4'],
  ['203.0.113.0', 24, 'ipv4'],
  ['224.0.0.0', 4, 'ipv4'],
  ['240.0.0.0', 4, 'ipv4'],
  ['::', 128, 'ipv6'],
  // Local-use NAT64 (RFC 8215): a translator of the local network, its IPv4 part at no fixed place.
  ['64:ff9b:1::', 48, 'ipv6'],
  ['100::', 64, 'ipv6'],
  ['2001:2::', 48, 'ipv6'],
  ['2001:10::', 28, 'ipv6'],
  ['2001:db8::', 32, 'ipv6'],
  ['3fff::', 20, 'ipv6'],
  ['5f00::', 16, 'ipv6'],
  ['fc00::', 7, 'ipv6'],
  ['fe80::', 10, 'ipv6'],
  ['fec0::', 10, 'ipv6'],
  ['ff00::', 8, 'ipv6'],
];
const LOOPBACK: Range[] = [
  ['127.0.0.0', 8, 'ipv4'],
  ['::1', 128, 'ipv6'],
];

function blockList(ranges: Range[]): BlockList {
  const list = new BlockList();
  for (const [net, prefix, type] of ranges) list.addSubnet(net, prefix, type);
  return list;
}
const nonPublic = blockList(NON_PUBLIC);
const loopback = blockList(LOOPBACK);

/** The 16 bytes of an IPv6 address (`isIP(text) === 6`, zone id allowed), or null. */
export function ipv6Bytes(text: string): Uint8Array | null {
  const address = text.replace(/%.*$/, '');
  if (isIP(address) !== 6) return null;
  let words: number[] = [];
  const [head, tail] = address.includes('::') ? address.split('::') : [address, null];
  const parse = (part: string): number[] =>
    part === ''
      ? []
      : part.split(':').flatMap((w) => {
          if (!w.includes('.')) return [parseInt(w, 16)];
          const [a, b, c, d] = w.split('.').map(Number);
          return [(a << 8) | b, (c << 8) | d];
        });
  const before = parse(head);
  const after = tail === null ? [] : parse(tail);
  words = tail === null ? before : [...before, ...new Array<number>(8 - before.length - after.length).fill(0), ...after];
  const bytes = new Uint8Array(16);
  words.forEach((w, i) => {
    bytes[2 * i] = w >> 8;
    bytes[2 * i + 1] = w & 0xff;
  });
  return bytes;
}

const ipv4At = (b: Uint8Array, i: number, xor = 0) => [b[i] ^ xor, b[i + 1] ^ xor, b[i + 2] ^ xor, b[i + 3] ^ xor].join('.');
const zero = (b: Uint8Array, from: number, to: number) => b.subarray(from, to).every((x) => x === 0);

/**
 * The IPv4 addresses an IPv6 address carries, and whether the host's own stack delivers it to that IPv4
 * address (`local`: mapped, compatible and translated forms) rather than through a translator or tunnel
 * (NAT64, 6to4, Teredo):
 *
 * - `::ffff:a.b.c.d` (IPv4-mapped), `::a.b.c.d` (IPv4-compatible), `::ffff:0:a.b.c.d` (IPv4-translated, SIIT)
 * - `64:ff9b::a.b.c.d` (NAT64's well-known prefix)
 * - `2002:AABB:CCDD::/48` (6to4: the IPv4 address in bits 16–47)
 * - `2001:0:SSSS:SSSS:…:CCCC:CCCC` (Teredo: the server, and the client's address inverted in the last 32 bits)
 */
export function embeddedIpv4(address: string): { addresses: string[]; local: boolean } | null {
  const b = ipv6Bytes(address);
  if (!b) return null;
  if (zero(b, 0, 10) && b[10] === 0xff && b[11] === 0xff) return { addresses: [ipv4At(b, 12)], local: true };
  // `::` and `::1` are IPv6's own unspecified and loopback addresses.
  if (zero(b, 0, 12) && !zero(b, 12, 15)) return { addresses: [ipv4At(b, 12)], local: true };
  if (zero(b, 0, 8) && b[8] === 0xff && b[9] === 0xff && zero(b, 10, 12)) return { addresses: [ipv4At(b, 12)], local: true };
  if (b[0] === 0x00 && b[1] === 0x64 && b[2] === 0xff && b[3] === 0x9b && zero(b, 4, 12)) return { addresses: [ipv4At(b, 12)], local: false };
  if (b[0] === 0x20 && b[1] === 0x02) return { addresses: [ipv4At(b, 2)], local: false };
  if (b[0] === 0x20 && b[1] === 0x01 && b[2] === 0 && b[3] === 0) return { addresses: [ipv4At(b, 4), ipv4At(b, 12, 0xff)], local: false };
  return null;
}

interface AllowEntry {
  host?: string;
  net?: BlockList;
  port?: number;
}

/** `host`, `host:port`, `[v6]:port`, `ip`, `cidr`, `cidr:port` (IPv4) — lower-cased. */
function parseEntry(raw: string): AllowEntry {
  let text = raw.trim().toLowerCase();
  let port: number | undefined;
  const bracket = /^\[([^\]]+)\](?::(\d+))?$/.exec(text);
  if (bracket) {
    text = bracket[1];
    port = bracket[2] === undefined ? undefined : Number(bracket[2]);
  } else if ((text.match(/:/g) ?? []).length === 1) {
    const [h, p] = text.split(':');
    text = h;
    port = Number(p);
  }
  const [addr, prefix] = text.split('/');
  const type = isIP(addr);
  if (type !== 0) {
    const net = new BlockList();
    const family = type === 4 ? 'ipv4' : 'ipv6';
    if (prefix === undefined) net.addAddress(addr, family);
    else net.addSubnet(addr, Number(prefix), family);
    return { net, port };
  }
  return { host: text, port };
}

function family(address: string): 'ipv4' | 'ipv6' {
  return isIP(address) === 6 ? 'ipv6' : 'ipv4';
}

const inList = (list: BlockList, address: string) => list.check(address, family(address));

/**
 * Whether a connection to `address` (an IP) for a URL naming `hostname` and `port` is allowed. An
 * operator entry may name the address (or the IPv4 address a mapped form of it stands for); loopback
 * (for the admin) is `127.0.0.0/8` and `::1` as the host's own stack reaches them; any other address is
 * public only when it and every IPv4 address it carries are.
 */
export function addressAllowed(policy: UrlPolicy, hostname: string, address: string, port: number): boolean {
  const host = hostname.toLowerCase().replace(/^\[|\]$/g, '');
  const ip = address.toLowerCase().replace(/%.*$/, '');
  if (isIP(ip) === 0) return false;
  const embedded = embeddedIpv4(ip);
  const carried = [ip, ...(embedded?.addresses ?? [])];
  // The addresses this host's own stack connects to for `ip` (a NAT64, 6to4 or Teredo address goes elsewhere).
  const same = embedded?.local ? carried : [ip];
  for (const entry of policy.allow.map(parseEntry)) {
    if (entry.port !== undefined && entry.port !== port) continue;
    if (entry.host !== undefined && entry.host === host) return true;
    if (entry.net && same.some((a) => inList(entry.net!, a))) return true;
  }
  if (same.some((a) => inList(loopback, a))) return policy.allowLoopback;
  if (carried.some((a) => inList(nonPublic, a) || inList(loopback, a))) return false;
  return policy.allowPublic;
}

/** The port a URL connects to. */
export function portOf(url: URL): number {
  return url.port ? Number(url.port) : url.protocol === 'https:' ? 443 : 80;
}

/** A URL's host name as a connection uses it: IPv6 literals without their brackets. */
export function hostOf(url: URL): string {
  return url.hostname.replace(/^\[|\]$/g, '');
}

/**
 * Parses a tenant's URL: http(s) only, no credentials. IPv4 shorthands (`2130706433`, `0177.0.0.1`,
 * `0x7f.1`) come out as the dotted address the WHATWG parser makes of them, which is what connects.
 */
export function parseRemoteUrl(raw: string, use: RemoteUrlUse = ENVIRONMENT_URL): URL {
  let url: URL;
  try {
    url = new URL(raw);
  } catch {
    throw new UrlNotAllowedError(`${use.field} is not a valid URL`);
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:') throw new UrlNotAllowedError(`${use.field} must be http:// or https://`);
  if (url.username || url.password) throw new UrlNotAllowedError(`${use.field} must not carry credentials (use ${use.credentials})`);
  return url;
}

/**
 * Checks a URL before any connection: http(s) only, no credentials, and (for an IP literal, or a name
 * resolved now) an allowed address. The answer for a refused URL is the same whether or not anything
 * listens there.
 */
export async function checkRemoteUrl(raw: string, policy: UrlPolicy, use: RemoteUrlUse = ENVIRONMENT_URL): Promise<void> {
  const url = parseRemoteUrl(raw, use);
  const hostname = hostOf(url);
  const port = portOf(url);
  const addresses = isIP(hostname) ? [hostname] : await resolveAll(hostname).catch(() => null);
  // A name that does not resolve now is left to the connection-time check: DNS may be down for a while.
  if (addresses === null) return;
  if (addresses.length === 0 || !addresses.every((a) => addressAllowed(policy, hostname, a, port))) throw refused(url.host, use);
}

/** The refusal of `host` (as the URL spells it, with its port), the same whatever listens there. */
export function refused(host: string, use: RemoteUrlUse): UrlNotAllowedError {
  return new UrlNotAllowedError(`${use.field} ${host} is not ${use.server} this server may reach (operator settings environment_url_allow, environment_url_allow_public)`);
}

export function resolveAll(hostname: string): Promise<string[]> {
  return new Promise((resolve, reject) =>
    dnsLookup(hostname, { all: true }, (error, addresses: LookupAddress[]) => (error ? reject(error) : resolve(addresses.map((a) => a.address)))),
  );
}
