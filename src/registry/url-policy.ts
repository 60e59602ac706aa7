import { BlockList, isIP } from 'node:net';
import { lookup as dnsLookup, type LookupAddress } from 'node:dns';
import { Agent, fetch as undiciFetch } from 'undici';
import type { AppConfig } from '../config/app-config';

/**
 * Which servers a job may reach through a URL its owner typed: remote environments (`environment.url`)
 * and a self-hosted W&B (`trainer.wandb.base_url`). Such a URL is fetched from inside the server's
 * network, so by default only public addresses are allowed: loopback, private, link-local, multicast and
 * reserved ranges are refused unless the operator lists them (`environment_url_allow`), and the admin may
 * also use loopback (`opentinker env serve` on the same machine). Names are checked on every connection,
 * after DNS resolution, so a name that resolves to an inside address later (DNS rebinding) is refused too.
 */
export interface UrlPolicy {
  /** Operator entries: host names, IPs or CIDR ranges, each optionally with `:port`. */
  allow: string[];
  /** Public addresses are allowed (setting environment_url_allow_public). */
  allowPublic: boolean;
  /** Loopback addresses are allowed (the job's owner is an admin). */
  allowLoopback: boolean;
}

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

const NON_PUBLIC: Array<[string, number, 'ipv4' | 'ipv6']> = [
  ['0.0.0.0', 8, 'ipv4'],
  ['10.0.0.0', 8, 'ipv4'],
  ['100.64.0.0', 10, 'ipv4'],
  ['169.254.0.0', 16, 'ipv4'],
  ['172.16.0.0', 12, 'ipv4'],
  ['192.0.0.0', 24, 'ipv4'],
  ['192.0.2.0', 24, 'ipv4'],
  ['192.168.0.0', 16, 'ipv4'],
  ['198.18.0.0', 15, 'ipv4'],
  ['198.51.100.0', 24, 'ipv4'],
  ['203.0.113.0', 24, 'ipv4'],
  ['224.0.0.0', 4, 'ipv4'],
  ['240.0.0.0', 4, 'ipv4'],
  ['::', 128, 'ipv6'],
  ['64:ff9b::', 96, 'ipv6'],
  ['100::', 64, 'ipv6'],
  ['2001:db8::', 32, 'ipv6'],
  ['fc00::', 7, 'ipv6'],
  ['fe80::', 10, 'ipv6'],
  ['ff00::', 8, 'ipv6'],
];
const LOOPBACK: Array<[string, number, 'ipv4' | 'ipv6']> = [
  ['127.0.0.0', 8, 'ipv4'],
  ['::1', 128, 'ipv6'],
];

function blockList(ranges: Array<[string, number, 'ipv4' | 'ipv6']>): BlockList {
  const list = new BlockList();
  for (const [net, prefix, type] of ranges) list.addSubnet(net, prefix, type);
  return list;
}
const nonPublic = blockList(NON_PUBLIC);
const loopback = blockList(LOOPBACK);

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

/** Whether a connection to `address` (an IP) for a URL naming `hostname` and `port` is allowed. */
export function addressAllowed(policy: UrlPolicy, hostname: string, address: string, port: number): boolean {
  const host = hostname.toLowerCase().replace(/^\[|\]$/g, '');
  for (const entry of policy.allow.map(parseEntry)) {
    if (entry.port !== undefined && entry.port !== port) continue;
    if (entry.host !== undefined && entry.host === host) return true;
    if (entry.net?.check(address, family(address))) return true;
  }
  if (loopback.check(address, family(address))) return policy.allowLoopback;
  if (nonPublic.check(address, family(address))) return false;
  return policy.allowPublic;
}

/** The port a URL connects to. */
function portOf(url: URL): number {
  return url.port ? Number(url.port) : url.protocol === 'https:' ? 443 : 80;
}

/**
 * Checks a URL before any connection: http(s) only, no credentials, and (for an IP literal, or a name
 * resolved now) an allowed address. The answer for a refused URL is the same whether or not anything
 * listens there.
 */
export async function checkRemoteUrl(raw: string, policy: UrlPolicy, use: RemoteUrlUse = ENVIRONMENT_URL): Promise<void> {
  let url: URL;
  try {
    url = new URL(raw);
  } catch {
    throw new UrlNotAllowedError(`${use.field} is not a valid URL`);
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:') throw new UrlNotAllowedError(`${use.field} must be http:// or https://`);
  if (url.username || url.password) throw new UrlNotAllowedError(`${use.field} must not carry credentials (use ${use.credentials})`);
  const hostname = url.hostname.replace(/^\[|\]$/g, '');
  const port = portOf(url);
  const addresses = isIP(hostname) ? [hostname] : await resolveAll(hostname).catch(() => null);
  // A name that does not resolve now is left to the connection-time check: DNS may be down for a while.
  if (addresses === null) return;
  if (addresses.length === 0 || !addresses.every((a) => addressAllowed(policy, hostname, a, port))) throw refused(raw, use);
}

function refused(raw: string, use: RemoteUrlUse): UrlNotAllowedError {
  let host = raw;
  try {
    host = new URL(raw).host;
  } catch {
    // keep raw
  }
  return new UrlNotAllowedError(`${use.field} ${host} is not ${use.server} this server may reach (operator settings environment_url_allow, environment_url_allow_public)`);
}

function resolveAll(hostname: string): Promise<string[]> {
  return new Promise((resolve, reject) =>
    dnsLookup(hostname, { all: true }, (error, addresses: LookupAddress[]) => (error ? reject(error) : resolve(addresses.map((a) => a.address)))),
  );
}

/**
 * A `fetch` that connects only where the policy allows, checking the resolved addresses of every
 * connection (so the check and the connection use the same address), for `RemoteEnvironment` and the
 * W&B stream. One connection pool per origin, whose DNS lookup knows the port the entries may name.
 */
export function policyFetch(policy: UrlPolicy, use: RemoteUrlUse = ENVIRONMENT_URL): typeof fetch {
  const agents = new Map<string, Agent>();
  const agentFor = (hostname: string, port: number): Agent => {
    const key = `${hostname}:${port}`;
    let agent = agents.get(key);
    if (!agent) {
      agent = new Agent({ connect: { lookup: checkedLookup(policy, port) } });
      agents.set(key, agent);
    }
    return agent;
  };
  return (async (input: string | URL | Request, init?: RequestInit) => {
    const url = new URL(typeof input === 'string' || input instanceof URL ? input : input.url);
    const hostname = url.hostname.replace(/^\[|\]$/g, '');
    const port = portOf(url);
    // An IP literal connects without a lookup: check it here.
    if (isIP(hostname) && !addressAllowed(policy, hostname, hostname, port)) throw new TypeError('fetch failed', { cause: refused(url.href, use) });
    return undiciFetch(url, { ...(init as object), dispatcher: agentFor(hostname, port) } as Parameters<typeof undiciFetch>[1]);
  }) as unknown as typeof fetch;
}

type LookupCallback = (error: Error | null, address: string | LookupAddress[], family?: number) => void;

function checkedLookup(policy: UrlPolicy, port: number) {
  return (hostname: string, options: { all?: boolean }, callback: LookupCallback): void => {
    dnsLookup(hostname, { ...options, all: true }, (error, addresses: LookupAddress[]) => {
      if (error) return callback(error, []);
      const ok = addresses.filter((a) => addressAllowed(policy, hostname, a.address, port));
      if (ok.length === 0) return callback(new UrlNotAllowedError(`${hostname} resolves to an address this server may not reach`), []);
      if (options.all) return callback(null, ok);
      callback(null, ok[0].address, ok[0].family);
    });
  };
}
